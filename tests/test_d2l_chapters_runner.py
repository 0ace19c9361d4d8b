"""tools/d2l_chapters/run.py: which cells are the MXNet tab's, and the child.

The book is not part of the repository: the extraction is checked on a
small made-up chapter with each of d2lbook's tab markers; the issue's count
of 148 cells is checked when the d2l-en mirror is on this machine.
"""
import argparse
import importlib.util
import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    'd2l_chapters_run', ROOT / 'tools' / 'd2l_chapters' / 'run.py')
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)

MD = '''```{.python .input}
%load_ext d2lbook.tab
tab.interact_select(['mxnet', 'pytorch', 'tensorflow', 'jax'])
```

# A chapter

```{.python .input}
%%tab mxnet
a = 'mxnet only'
```

```{.python .input  n=3}
%%tab pytorch
a = 'pytorch only'
```

```{.python .input}
%%tab all
b = 'every tab'
```

```{.python .input}
%%tab pytorch, mxnet, tensorflow
net = MLP()
if tab.selected('mxnet'):
    net.initialize()
if tab.selected('pytorch'):
    net.apply(init)
net(X)
```

```{.python .input}
#@tab mxnet
c = 'older marker'
```

```{.python .input}
#@tab all
d = 'older, every tab'
```

```{.python .input}
e = 'no marker: the default tab (pytorch)'
```

```python
f = 'not an input cell'
```

```{.python .input}
%%tab jax
g = 'jax only'
```
'''


def test_the_mxnet_tab_cells_as_d2lbook_picks_them():
    cells = run.mxnet_cells(MD)
    assert [c.splitlines()[0] for c in cells] == [
        "a = 'mxnet only'", "b = 'every tab'", 'net = MLP()',
        "c = 'older marker'", "d = 'older, every tab'"]
    # the other tabs' `if tab.selected(...)` branches are gone
    assert cells[2].splitlines() == ['net = MLP()', 'net.initialize()',
                                     'net(X)']
    assert run.cell_tabs("x = 1\n") == ['pytorch']
    assert run.cell_tabs('%%tab pytorch, mxnet\n') == ['pytorch', 'mxnet']
    # another tab's view of the same chapter
    assert len(run.mxnet_cells(MD, tab='pytorch')) == 5


def test_epochs_option_rewrites_one_line():
    md = ('```{.python .input}\n%%tab mxnet\n'
          'trainer = d2l.Trainer(max_epochs=10, num_gpus=1)\n```\n')
    chapter = 'chapter_convolutional-neural-networks/lenet.md'
    assert run.prepare(chapter, md) == [
        'trainer = d2l.Trainer(max_epochs=10, num_gpus=1)\n']
    assert run.prepare(chapter, md, epochs=2) == [
        'trainer = d2l.Trainer(max_epochs=2, num_gpus=1)\n']


@pytest.mark.skipif(not os.path.isdir(run.DEFAULT_SRC),
                    reason='the d2l-en mirror is not on this machine')
def test_the_issue_counts_148_mxnet_cells():
    counts = [len(run.prepare(c, run.read_chapter(run.DEFAULT_SRC, c)))
              for c in run.CHAPTERS]
    assert sum(counts) == run.EXPECTED_CELLS == 148
    assert counts[0] == 24          # chapter_preliminaries/ndarray


def test_compare_masks_numbers_only():
    assert run.compare(['Out: 1.5'], ['Out: 1.5']) == 'same'
    assert run.compare(['Out: 1.5 (2, 3)'], ['Out: -0.25 (2, 3)']) == \
        'same shape'
    assert run.compare(['a', 'array([1.])'], ['a', 'tensor([1.])']).startswith(
        'differs: `array([1.])` vs MXNet `tensor([1.])`')


def test_cells_run_in_a_child_with_the_aliases_and_gpus_as_cpus(tmp_path):
    d2l = tmp_path / 'mxnet.py'
    d2l.write_text('from mxnet import gluon\n'
                   'import mxnet\n'
                   'def try_all_gpus():\n'
                   '    return [mxnet.context.gpu(i) '
                   'for i in range(mxnet.context.num_gpus())]\n')
    cells = ['from d2l import mxnet as d2l\nimport mxnet as mx\n'
             'from mxnet.gluon import nn\n'
             'print(mx.__name__, nn.Dense.__module__, d2l.gluon.__name__)\n'
             'd2l.try_all_gpus()\n',
             'undefined_name\n',
             'print(mx.gpu(1), mx.num_gpus())\n']
    args = argparse.Namespace(
        real_mxnet=False, gpus_as_cpus=2, d2l=str(d2l), data=None,
        python=None, timeout=120, verbose=False)
    row = run.run_chapter('chapter_x/c.md', cells, args)
    first, second, third = row['cells']
    assert first['ok'], first
    # mxnet.<sub> is d2lmini.<sub>, d2l.mxnet's own import too; gpu(i) is
    # cpu(i + 1) and num_gpus() agrees
    assert first['printed'][0].startswith('d2lmini d2lmini.gluon')
    assert first['printed'][0].endswith(' d2lmini.gluon')
    assert first['printed'][1] == 'Out: [cpu(1), cpu(2)]'
    assert not second['ok'] and second['type'] == 'NameError'
    assert not second['after_failure']
    # the chapter goes on after a failing cell
    assert third['ok'] and third['printed'] == ['cpu(2) 2']
