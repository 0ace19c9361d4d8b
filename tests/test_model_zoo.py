"""gluon.model_zoo.vision's ResNets against MXNet 1.9.1 itself.

The oracle is tests/fixtures/model_zoo/, written by the real MXNet 1.9.1
(make_mx191_resnet.py): the parameter names and shapes of resnet18/50 v1/v2,
and four tiny ResNets (one per kind of block, both stems) with their
parameters and outputs.  Same names and shapes mean MXNet's published
weights files load; same outputs mean the blocks compute what MXNet's do.
"""
import hashlib
import json
import os
import pathlib
import zipfile

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import gluon, nd
from d2lmini.gluon.model_zoo import model_store, vision
from d2lmini.gluon.model_zoo.vision import resnet

FIXTURES = pathlib.Path(__file__).parent / 'fixtures' / 'model_zoo'

# The tiny nets' shapes, as make_mx191_resnet.py built them: key ->
# {net, block, layers, channels, thumbnail, exported}.
TINY = json.loads((FIXTURES / 'mx191_tiny_nets.json').read_text())
EXPORTED = sorted(k for k, spec in TINY.items() if spec['exported'])
# Measured: at most 5.4e-7 from MXNet's outputs (|y| < 0.9) on the CPU.
TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(scope='module')
def reference():
    with np.load(FIXTURES / 'mx191_tiny_reference.npz') as f:
        return dict(f)


def tiny(key):
    spec = TINY[key]
    with mx.name.NameManager():         # MXNet's counters, as in a fresh process
        return getattr(resnet, spec['net'])(getattr(resnet, spec['block']),
                                            spec['layers'], spec['channels'],
                                            classes=10, thumbnail=spec['thumbnail'])


def _sha1(path):
    return hashlib.sha1(pathlib.Path(path).read_bytes()).hexdigest()


# --- names and shapes ---------------------------------------------------------------

@pytest.mark.parametrize('name', ['resnet18_v1', 'resnet50_v1', 'resnet18_v2',
                                  'resnet50_v2'])
def test_parameter_names_and_shapes_are_mxnets(name):
    want = json.loads((FIXTURES / 'mx191_resnet_names.json').read_text())[name]
    with mx.name.NameManager():
        net = vision.get_model(name)
    assert sorted(net.collect_params().keys()) == sorted(want)
    # The shapes without computing anything: the traced graph's inference.
    sym = net(mx.sym.var('data'))
    args, _, aux = sym.infer_shape(data=(1, 3, 224, 224))
    shapes = dict(zip(sym.list_arguments(), args))
    shapes.update(zip(sym.list_auxiliary_states(), aux))
    del shapes['data']
    assert shapes == {k: tuple(v) for k, v in want.items()}
    for p in net.collect_params().values():     # those known before any input
        if p.shape and 0 not in p.shape:
            assert p.shape == tuple(want[p.name]), p.name


def test_get_model_names_and_errors():
    net = vision.get_model('ResNet34_V2', classes=7, thumbnail=True)
    assert isinstance(net, resnet.ResNetV2) and net.output._units == 7
    with pytest.raises(ValueError, match=r"'resnet19_v1' is not in the model zoo.*"
                                         r"resnet101_v1, .*resnet50_v2"):
        vision.get_model('resnet19_v1')
    with pytest.raises(ValueError, match=r'number of layers: 19.*\[18, 34, 50'):
        resnet.get_resnet(1, 19)
    with pytest.raises(ValueError, match='version: 3'):
        resnet.get_resnet(3, 18)
    with pytest.raises(ValueError, match='one more entry than layers'):
        resnet.ResNetV1(resnet.BasicBlockV1, [1, 1], [4, 4])


# --- numbers: MXNet's parameters give MXNet's outputs ------------------------------

@pytest.mark.parametrize('key', sorted(TINY))
def test_mxnet_parameters_give_mxnets_output(key, reference, ctx):
    net = tiny(key)
    base = FIXTURES / f'mx191_tiny_{key}'
    if key in EXPORTED:     # full names ('arg:resnetv10_conv0_weight')
        net.collect_params().load(f'{base}-0000.params', ctx=ctx)
    else:                   # save_parameters' structural names ('features.0.weight')
        net.load_parameters(f'{base}.params', ctx=ctx)
    # The fixture's BatchNorm statistics are not the initial ones.
    for name, p in net.collect_params().items():
        if name.endswith(('running_mean', 'running_var')):
            assert not np.allclose(p.data().asnumpy(), name.endswith('var')), name
    x = nd.array(reference['x'], ctx=ctx)
    want = reference['y_' + key]
    np.testing.assert_allclose(net(x).asnumpy(), want, **TOL)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, **TOL)


@pytest.mark.parametrize('key', EXPORTED)
def test_mxnet_export_imports(key, reference, ctx):
    base = FIXTURES / f'mx191_tiny_{key}'
    net = gluon.SymbolBlock.imports(f'{base}-symbol.json', ['data'],
                                    f'{base}-0000.params', ctx=ctx)
    y = net(nd.array(reference['x'], ctx=ctx)).asnumpy()
    np.testing.assert_allclose(y, reference['y_' + key], **TOL)


@pytest.mark.parametrize('key', EXPORTED)
def test_export_writes_mxnets_names_and_reimports(key, reference, tmp_path):
    net = tiny(key)
    base = FIXTURES / f'mx191_tiny_{key}'
    net.collect_params().load(f'{base}-0000.params')
    net.hybridize()
    x = nd.array(reference['x'])
    y = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / 'tiny'))
    ours = nd.load(params_file)
    theirs = nd.load(f'{base}-0000.params')
    assert sorted(ours) == sorted(theirs)
    back = gluon.SymbolBlock.imports(sym_file, ['data'], params_file)
    np.testing.assert_allclose(back(x).asnumpy(), y, **TOL)
    # The same graph, node for node: operators, names and edges in MXNet's order.
    def nodes(path):
        return [(n['op'], n['name'], [e[:2] for e in n['inputs']])
                for n in json.loads(pathlib.Path(path).read_text())['nodes']]
    assert nodes(sym_file) == nodes(f'{base}-symbol.json')


# --- pretrained weights: file names, checksums, mirrors -----------------------------

@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty mirror (``file://``) so no test reaches the internet, and a
    private copy of the checksum table to write test files' sums into."""
    mirror = tmp_path / 'mirror'
    (mirror / 'gluon' / 'models').mkdir(parents=True)
    monkeypatch.setenv('MXNET_GLUON_REPO', mirror.as_uri())
    monkeypatch.setattr(model_store, '_model_sha1', dict(model_store._model_sha1))
    return mirror


def test_store_names_files_as_mxnet():
    assert model_store.short_hash('resnet18_v1') == 'a0666292'
    assert model_store.short_hash('resnet152_v2') == 'f2695542'
    with pytest.raises(ValueError, match='resnet18_v1'):
        model_store.short_hash('resnet19_v1')


def test_pretrained_loads_the_checked_file(store, tmp_path):
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize()
    x = nd.ones((1, 3, 32, 32))
    y = net(x).asnumpy()
    staged = tmp_path / 'staged.params'
    net.save_parameters(str(staged))
    sha1 = _sha1(staged)
    model_store._model_sha1['resnet18_v1'] = sha1
    root = tmp_path / 'models'
    root.mkdir()
    staged.rename(root / f'resnet18_v1-{sha1[:8]}.params')
    again = vision.get_model('resnet18_v1', pretrained=True, root=str(root),
                             ctx=x.context, classes=10, thumbnail=True)
    # the file's weights arrive bit for bit ...
    mine, theirs = net.collect_params(), again.collect_params()
    assert len(mine) == len(theirs)
    for a, b in zip(mine.values(), theirs.values()):
        np.testing.assert_array_equal(b.data().asnumpy(), a.data().asnumpy())
    # ... but two forward passes need not: the convolutions go through BLAS,
    # whose kernels (and threads) may sum in another order (1.4e-6 seen on
    # the GPU stand-in).
    np.testing.assert_allclose(again(x).asnumpy(), y, rtol=1e-5, atol=1e-5)


def test_missing_file_says_where_to_put_it(store, tmp_path):
    root = tmp_path / 'models'
    with pytest.raises(model_store.ModelFileNotFoundError) as err:
        vision.resnet18_v2(pretrained=True, root=str(root))
    msg = str(err.value)
    assert f'{root}/resnet18_v2-a81db45f.params does not exist' in msg
    assert 'gluon/models/resnet18_v2-a81db45f.zip' in msg
    assert f'put resnet18_v2-a81db45f.params (sha1 {model_store._model_sha1["resnet18_v2"]}) ' \
           f'in {root}' in msg
    assert 'MXNET_GLUON_REPO' in msg


def test_file_with_another_sha1_is_refused(store, tmp_path):
    root = tmp_path / 'models'
    root.mkdir()
    path = root / 'resnet18_v1-a0666292.params'
    path.write_bytes(b'not the published weights')
    with pytest.raises(model_store.ModelFileNotFoundError,
                       match=f'has sha1 {_sha1(path)}, not the published '
                             f'a0666292f0a30ff61f857b0b66efc0228eb6a54b'):
        vision.resnet18_v1(pretrained=True, root=str(root))
    assert path.read_bytes() == b'not the published weights'     # left alone


def test_download_from_a_mirror(store, tmp_path):
    content = b'weights of a mirror'
    sha1 = hashlib.sha1(content).hexdigest()
    model_store._model_sha1['resnet50_v1'] = sha1
    stem = f'resnet50_v1-{sha1[:8]}'
    with zipfile.ZipFile(store / 'gluon' / 'models' / f'{stem}.zip', 'w') as zf:
        zf.writestr(f'{stem}.params', content)
    root = tmp_path / 'models'
    path = model_store.get_model_file('resnet50_v1', root=str(root), progress=False)
    assert path == str(root / f'{stem}.params')
    assert pathlib.Path(path).read_bytes() == content
    assert os.listdir(root) == [f'{stem}.params']              # no leftovers
    # A mirror serving other bytes under that name is refused; nothing stays.
    model_store._model_sha1['resnet50_v1'] = sha1[:8] + '0' * 32
    os.remove(path)
    with pytest.raises(ValueError, match=f'has sha1 {sha1}, expected {sha1[:8]}0'):
        model_store.get_model_file('resnet50_v1', root=str(root), progress=False)
    assert os.listdir(root) == []
