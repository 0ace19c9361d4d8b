"""gluon.model_zoo.vision's families besides ResNet (AlexNet, VGG,
DenseNet, SqueezeNet, MobileNet V1/V2, Inception V3) against MXNet 1.9.1,
and the containers they are built from (nn.Concurrent, HybridConcurrent,
Identity).

The oracles are tests/fixtures/model_zoo/, written by the real MXNet 1.9.1
(make_mx191_families.py):

* ``param_shapes.json.gz``: every model's parameters as ``save_parameters``
  names them, with their full names and shapes (classes=1000).  The same
  names and shapes mean MXNet's published ``.params`` files load.
* ``mx191_reference_outputs.npz``: for one model of each family that
  concatenates or adds branches, MXNet's output with parameters drawn by
  :func:`reference_values` (NumPy's generator, so the test draws the same
  numbers), and the sha1 of MXNet's ``save_parameters`` file of them.  The
  same outputs mean the branches are computed and joined as in MXNet,
  which names and shapes alone do not show.
"""
import gzip
import hashlib
import json
import pathlib
import sys

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, init, nd
from d2lmini.gluon import nn
from d2lmini.gluon.model_zoo import model_store, vision

FIXTURES = pathlib.Path(__file__).parent / 'fixtures' / 'model_zoo'
sys.path.insert(0, str(FIXTURES))
from reference_draws import reference_input, reference_values  # noqa: E402
# {model: [prefix, [[saved name, full name, shape], ...] sorted]}
PARAMS = json.loads(gzip.decompress((FIXTURES / 'param_shapes.json.gz').read_bytes()))
REFERENCE = {'mobilenet0.25': 64, 'mobilenetv2_0.25': 64, 'squeezenet1.1': 224,
             'densenet121': 224, 'inceptionv3': 299}       # model: input size
# Measured: at most 3.9e-6 * max|y| (mobilenetv2_0.25; 3e-7 to 7e-7 for the
# others) from MXNet's outputs, on the CPU and the GPU stand-in.
RTOL = 2e-5


def input_size(name):
    return 299 if name == 'inceptionv3' else 224


def traced_shapes(net, data_shape):
    """{full name: shape} of ``net``'s parameters and its output shape, from
    the traced graph's shape inference (nothing is computed)."""
    sym = net(mx.sym.var('data'))
    args, outs, aux = sym.infer_shape(data=data_shape)
    shapes = dict(zip(sym.list_arguments(), args))
    shapes.update(zip(sym.list_auxiliary_states(), aux))
    return shapes, outs[0]


# --- the containers --------------------------------------------------------------

@pytest.mark.parametrize('container', [nn.Concurrent, nn.HybridConcurrent])
def test_concurrent_concatenates_and_backpropagates(container):
    """``[dense(x), x, tanh(dense(x))]`` side by side; the gradients of
    ``sum(w * y)`` against central differences (float64)."""
    net = container()                                  # axis=-1
    with net.name_scope():
        net.add(nn.Dense(3, in_units=4), nn.Identity(),
                nn.Dense(2, activation='tanh', in_units=4))
    net.initialize(init.Xavier())
    net.cast('float64')
    if container is nn.HybridConcurrent:
        net.hybridize()
    rng = np.random.RandomState(0)
    x, w = rng.normal(size=(5, 4)), rng.normal(size=(5, 9))
    xs = nd.array(x, dtype='float64')
    xs.attach_grad()
    with autograd.record():
        y = net(xs)
        loss = (y * nd.array(w, dtype='float64')).sum()
    loss.backward()
    W0, b0, W1, b1 = (p.data().asnumpy() for p in net.collect_params().values())
    want = np.concatenate([x @ W0.T + b0, x, np.tanh(x @ W1.T + b1)], axis=1)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12)

    def f(x):
        return (net(nd.array(x, dtype='float64')).asnumpy() * w).sum()
    eps, numeric = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        numeric[i] = (f(x + d) - f(x - d)) / (2 * eps)
    np.testing.assert_allclose(xs.grad.asnumpy(), numeric, rtol=1e-6, atol=1e-8)
    dense0 = list(net)[0]
    np.testing.assert_allclose(dense0.weight.grad().asnumpy(), w[:, :3].T @ x,
                               rtol=1e-12)
    assert repr(list(net)[1]) == 'Identity()'


def test_mxnet_1x_names_them_in_gluon_contrib_nn():
    """MXNet 1.9.1's scripts write ``gluon.contrib.nn.HybridConcurrent``."""
    from d2lmini import gluon
    for name in ('Concurrent', 'HybridConcurrent', 'Identity'):
        assert getattr(gluon.contrib.nn, name) is getattr(nn, name)
    net = gluon.contrib.nn.HybridConcurrent(axis=1)
    net.add(gluon.contrib.nn.Identity(), gluon.contrib.nn.Identity())
    assert net(nd.ones((2, 3))).shape == (2, 6)


def test_concurrent_names_its_children_as_mxnet():
    with mx.name.NameManager():
        net = nn.HybridConcurrent(axis=1)
        with net.name_scope():
            net.add(nn.Conv2D(2, 1), nn.Conv2D(3, 1))
    assert list(net.collect_params()) == [
        'hybridconcurrent0_conv0_weight', 'hybridconcurrent0_conv0_bias',
        'hybridconcurrent0_conv1_weight', 'hybridconcurrent0_conv1_bias']
    net.initialize()
    assert net(nd.ones((1, 4, 5, 5))).shape == (1, 5, 5, 5)


# --- names and shapes -------------------------------------------------------------

@pytest.mark.parametrize('name', sorted(PARAMS))
def test_parameter_names_and_shapes_are_mxnets(name):
    prefix, want = PARAMS[name]
    with mx.name.NameManager():         # MXNet's counters, as in a fresh process
        net = vision.get_model(name)
    assert net.prefix == prefix
    size = input_size(name)
    shapes, out = traced_shapes(net, (1, 3, size, size))
    got = sorted([saved, p.name, list(shapes[p.name])]
                 for saved, p in net._collect_params_with_prefix().items())
    assert got == want
    assert out == (1, 1000)


def test_get_model_knows_mxnets_names():
    assert sorted(vision._models) == sorted(model_store._model_sha1)
    assert set(PARAMS) | {n for n in vision._models if n.startswith('resnet')} == \
        set(vision._models)
    assert type(vision.get_model('SqueezeNet1.0')) is vision.SqueezeNet
    assert vision.get_model('vgg13_bn').features[1].__class__ is nn.BatchNorm
    assert model_store.short_hash('mobilenetv2_0.75') == 'e2be7b72'
    assert model_store.short_hash('inceptionv3') == 'ed47ec45'
    with pytest.raises(ValueError, match=r"'vgg17' is not in the model zoo.*"
                                         r"squeezenet1\.1, vgg11, "):
        vision.get_model('vgg17')
    with pytest.raises(ValueError, match=r'number of layers: 17.*\[11, 13'):
        vision.get_vgg(17)
    with pytest.raises(ValueError, match=r'number of layers: 122.*\[121, 161'):
        vision.get_densenet(122)
    with pytest.raises(ValueError, match="version '1.2'"):
        vision.SqueezeNet('1.2')
    with pytest.raises(ValueError, match='same length'):
        vision.VGG([1, 1], [8])
    with pytest.raises(ValueError, match='mobilenet0.3.*not available'):
        vision.get_mobilenet(0.3, pretrained=True)


# --- classes=10 -------------------------------------------------------------------

@pytest.mark.parametrize('name', sorted(PARAMS))
def test_ten_classes(name):
    net = vision.get_model(name, classes=10)
    size = input_size(name)
    _, out = traced_shapes(net, (2, 3, size, size))
    assert out == (2, 10)
    if name.startswith(('squeezenet', 'mobilenet')):      # cheap to run
        net.initialize()
        x = nd.array(np.random.RandomState(0).rand(2, 3, size, size))
        if name.startswith('mobilenet'):              # global pooling: any size
            x = x[:, :, :32, :32]
        y = net(x)
        assert y.shape == (2, 10) and np.isfinite(y.asnumpy()).all()


# --- numbers: MXNet's parameters give MXNet's outputs -----------------------------

@pytest.fixture(scope='module')
def reference():
    with np.load(FIXTURES / 'mx191_reference_outputs.npz') as f:
        return dict(f)


def check_output(net, name, reference, ctx):
    """``net``'s output on the reference input is MXNet's, imperative and
    hybridized."""
    want = reference['y_' + name]
    x = nd.array(reference_input(REFERENCE[name]), ctx=ctx)
    tol = dict(rtol=RTOL, atol=RTOL * np.abs(want).max())
    np.testing.assert_allclose(net(x).asnumpy(), want, **tol)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), want, **tol)


@pytest.mark.parametrize('name', ['mobilenet0.25', 'mobilenetv2_0.25',
                                  'squeezenet1.1'])
def test_mxnets_file_loads_with_pretrained(name, reference, ctx, tmp_path,
                                           monkeypatch):
    size = REFERENCE[name]
    with mx.name.NameManager():
        net = vision.get_model(name)
    net.initialize()
    net(nd.zeros((1, 3, size, size)))           # finish the deferred shapes
    params = net._collect_params_with_prefix()
    values = reference_values([(k, p.shape) for k, p in params.items()])
    for k, p in params.items():
        p.set_data(nd.array(values[k]))
    # Our save_parameters writes MXNet's file byte for byte: MXNet's sha1.
    staged = tmp_path / 'staged.params'
    net.save_parameters(str(staged))
    sha1 = hashlib.sha1(staged.read_bytes()).hexdigest()
    assert (staged.stat().st_size, sha1) == (reference['size_' + name],
                                             reference['sha1_' + name])
    # So it is MXNet's file: put it where pretrained=True looks, as published.
    monkeypatch.setitem(model_store._model_sha1, name, sha1)
    root = tmp_path / 'models'
    root.mkdir()
    staged.rename(root / f'{name}-{sha1[:8]}.params')
    check_output(vision.get_model(name, pretrained=True, root=str(root), ctx=ctx),
                 name, reference, ctx)


@pytest.mark.parametrize('name', ['densenet121', 'inceptionv3'])
def test_mxnet_parameters_give_mxnets_output(name, reference, ctx):
    """The larger nets (32 and 95 MB of parameters): the same arrays loaded
    by their full names, without a file."""
    _, rows = PARAMS[name]
    values = reference_values([(saved, shape) for saved, _, shape in rows])
    with mx.name.NameManager():
        net = vision.get_model(name)
    net.collect_params().load_dict({full: nd.array(values[saved], ctx=ctx)
                                    for saved, full, _ in rows}, ctx=ctx)
    check_output(net, name, reference, ctx)
