"""tools/classic_chapters/run.py: block extraction and the epoch option.

The chapters themselves are not part of the repository; these tests use
small made-up markdown files in the book's format.
"""
import importlib.util
import pathlib
import sys

import pytest

import d2lmini as mx

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    'classic_run', ROOT / 'tools' / 'classic_chapters' / 'run.py')
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)

MD = '''# A chapter

```{.python .input  n=1}
!nvidia-smi
%matplotlib inline
import d2lzh as d2l
```

Some text, and a block that is not run:

```python
print('not an input block')
```

```{.python .input}
def train(num_gpus, batch_size, lr):
    for epoch in range(4):
        print('epoch %d, acc %.2f'
              % (epoch + 1, 0.5))
lr, num_epochs = 0.9, 5
```
'''


def test_blocks_are_extracted_and_only_magics_dropped():
    blocks = run.prepare('x.md', MD)
    assert len(blocks) == 2
    assert blocks[0].splitlines() == ['', '', 'import d2lzh as d2l']
    # an indented '% (...)' continues a Python expression: it stays
    assert "              % (epoch + 1, 0.5))" in blocks[1]
    compile(blocks[1], 'block', 'exec')


@pytest.mark.parametrize('chapter,line', [
    ('chapter_computational-performance/multiple-gpus.md',
     '    for epoch in range(2):'),
    ('chapter_computational-performance/multiple-gpus-gluon.md',
     '    for epoch in range(2):'),
    ('chapter_convolutional-neural-networks/lenet.md',
     'lr, num_epochs = 0.9, 2'),
])
def test_epochs_option_rewrites_one_line(chapter, line):
    assert line not in run.prepare(chapter, MD)[1]         # as written
    block = run.prepare(chapter, MD, epochs=2)[1]
    assert line in block
    compile(block, 'block', 'exec')


def test_expected_blocks_name_an_error_and_a_reason():
    assert set(run.EXPECTED) <= set(run.CHAPTERS)
    for chapter, blocks in run.EXPECTED.items():
        for number, (error, why) in blocks.items():
            assert error in ('MXNetError', 'NameError') and why


def test_a_chapter_runs_in_a_subprocess_with_the_aliases(tmp_path):
    chapter = tmp_path / 'c.md'
    chapter.write_text('''
```{.python .input}
import mxnet as mx
from mxnet import nd
from mxnet.gluon import nn
import d2lzh as d2l
print(type(mx.cpu()).__module__, d2l.__name__, nn.Dense.__module__)
x = nd.ones((2,))
```

```{.python .input}
y = undefined_name
```

```{.python .input}
print('never reached')
```
''', encoding='utf-8')
    row = run.run_chapter(str(tmp_path), 'c.md', timeout=120)
    assert row['status'] == 'failed' and row['blocks'] == 3
    assert row['detail'].startswith('block 2: NameError')
    assert row['printed'][0].startswith(
        'd2lmini.context d2lmini.d2l.classic d2lmini.')
    assert 'never reached' not in row['printed']


def test_expected_errors_count_as_mxnet_behaviour(tmp_path, monkeypatch):
    (tmp_path / 'c.md').write_text('''
```{.python .input}
x = nd_missing
```

```{.python .input}
print('goes on')
```
''', encoding='utf-8')
    monkeypatch.setitem(run.EXPECTED, 'c.md', {1: ('NameError', 'why')})
    row = run.run_chapter(str(tmp_path), 'c.md', timeout=120)
    assert row['status'] == 'ran', row
    assert 'block 1 raised NameError' in row['detail']
    assert row['printed'] == ['goes on']
    # a block that should raise (as on MXNet) but runs is a difference
    monkeypatch.setitem(run.EXPECTED, 'c.md', {2: ('MXNetError', 'why')})
    (tmp_path / 'c.md').write_text('''
```{.python .input}
print('fine')
```

```{.python .input}
print('no error here')
```
''', encoding='utf-8')
    row = run.run_chapter(str(tmp_path), 'c.md', timeout=120)
    assert row['status'] == 'failed'
    assert row['detail'].startswith('block 2: no error: expected MXNetError')


def test_gpus_as_cpus_runs_gpu_code_on_logical_cpus(tmp_path, monkeypatch):
    (tmp_path / 'c.md').write_text('''
```{.python .input}
import mxnet as mx
import d2lzh as d2l
from mxnet import nd
x = nd.ones((2,), ctx=mx.gpu(1))
print(x.context, d2l.try_all_gpus())
```
''', encoding='utf-8')
    if mx.num_gpus() == 0:          # a CPU machine: gpu(1) raises, as on MXNet
        monkeypatch.setitem(run.EXPECTED, 'c.md', {1: ('MXNetError', 'no GPU')})
        row = run.run_chapter(str(tmp_path), 'c.md', timeout=120)
        assert row['status'] == 'ran' and 'block 1 raised MXNetError' in row['detail']
    elif mx.num_gpus() >= 2:        # GPUs (the stand-in's too): the block runs there
        row = run.run_chapter(str(tmp_path), 'c.md', timeout=120)
        assert row['status'] == 'ran' and row['detail'] == '', row
        gpus = [mx.gpu(i) for i in range(mx.num_gpus())]
        assert row['printed'] == [f'gpu(1) {gpus}']
    row = run.run_chapter(str(tmp_path), 'c.md', timeout=120, gpus_as_cpus=2)
    assert row['status'] == 'ran' and row['detail'] == '', row
    assert row['printed'] == ['cpu(1) [cpu(0), cpu(1)]']


def test_a_blocks_last_expression_is_shown_as_in_jupyter(tmp_path):
    (tmp_path / 'c.md').write_text('''
```{.python .input}
from mxnet import nd
x = nd.arange(3)
x.shape
```

```{.python .input}
print('printed')
None
```
''', encoding='utf-8')
    row = run.run_chapter(str(tmp_path), 'c.md', timeout=120)
    assert row['status'] == 'ran', row
    assert row['printed'] == ['Out: (3,)', 'printed']


def test_report_table_and_output(tmp_path):
    import argparse
    rows = [{'chapter': 'a.md', 'blocks': 3, 'seconds': 1.5, 'status': 'ran',
             'detail': '', 'printed': ['hello']},
            {'chapter': 'b.md', 'blocks': 2, 'seconds': 0.1, 'status': 'failed',
             'detail': 'block 2: TypeError: x | y', 'printed': []}]
    path = tmp_path / 'REPORT.md'
    run.write_report(str(path), rows, argparse.Namespace(epochs=None))
    text = path.read_text(encoding='utf-8')
    assert 'gpus-as-cpus' not in text
    assert '| a.md | 3 | ran | 1.5 |' in text
    assert '| b.md | 2 | failed: block 2: TypeError: x \\| y | 0.1 |' in text
    assert '1 of 2 chapters ran.' in text and 'epoch counts as written' in text
    assert '### a.md\n\n```\nhello\n```' in text and '### b.md' not in text
    run.write_report(str(path), rows, argparse.Namespace(epochs=1, gpus_as_cpus=2))
    text = path.read_text(encoding='utf-8')
    assert '`--gpus-as-cpus 2` (`mx.gpu(i)` is `mx.cpu(i)` for i < 2)' in text
    assert '`CLASSIC_EPOCHS=1`' in text
