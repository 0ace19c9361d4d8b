"""mx.model: checkpoints (symbol JSON + arg:/aux: params) and BatchEndParam."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd


def _net():
    x = mx.sym.var('data')
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=8, name='fc1'),
                          act_type='relu', name='relu1')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name='fc2'),
                                name='softmax')


def _trained(batch=10):
    rng = np.random.RandomState(0)
    X = rng.randn(40, 4).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32) + (X[:, 1] > 0)
    it = mx.io.NDArrayIter(X, y, batch_size=batch)
    mod = mx.mod.Module(_net())
    mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.1},
            initializer=mx.init.Xavier())
    return mod, it


def test_save_and_load_checkpoint_round_trip(tmp_path):
    mod, it = _trained()
    prefix = str(tmp_path / 'net')
    arg, aux = mod.get_params()
    mx.model.save_checkpoint(prefix, 7, mod.symbol, arg, aux)
    assert (tmp_path / 'net-symbol.json').exists()
    # the params file is an nd.save dictionary with MXNet's key prefixes
    raw = nd.load(prefix + '-0007.params')
    assert sorted(raw) == ['arg:' + k for k in sorted(arg)]

    sym, arg2, aux2 = mx.model.load_checkpoint(prefix, 7)
    assert sym.list_arguments() == mod.symbol.list_arguments()
    assert sym.tojson() == mod.symbol.tojson()
    assert aux2 == {}
    for k, v in arg.items():
        np.testing.assert_array_equal(arg2[k].asnumpy(), v.asnumpy())
        assert arg2[k].context == mx.cpu()

    # a new module on the loaded checkpoint predicts the same
    mod2 = mx.mod.Module(sym)
    mod2.bind(it.provide_data, it.provide_label, for_training=False)
    mod2.set_params(arg2, aux2)
    np.testing.assert_array_equal(mod2.predict(it).asnumpy(), mod.predict(it).asnumpy())


def test_module_checkpoint_and_load_predict_the_same(tmp_path):
    mod, it = _trained()
    prefix = str(tmp_path / 'mod')
    mod.save_checkpoint(prefix, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['mod-0002.params',
                                                          'mod-symbol.json']
    loaded = mx.mod.Module.load(prefix, 2)
    # bound for another batch size: the parameters carry over
    loaded.bind(data_shapes=[('data', (5, 4))], for_training=False)
    np.testing.assert_allclose(loaded.predict(it).asnumpy(), mod.predict(it).asnumpy(),
                               rtol=1e-6, atol=1e-7)
    # save_params / load_params: the same file format, without the symbol
    fname = str(tmp_path / 'only.params')
    mod.save_params(fname)
    assert sorted(nd.load(fname)) == sorted(nd.load(prefix + '-0002.params'))
    other, _ = _trained()
    other.load_params(fname)
    np.testing.assert_array_equal(other.predict(it).asnumpy(), mod.predict(it).asnumpy())


def test_params_file_that_is_not_a_checkpoint_is_refused(tmp_path):
    fname = str(tmp_path / 'gluon.params')
    nd.save(fname, {'dense0_weight': nd.ones((2, 2))})       # Gluon's keys
    with pytest.raises(ValueError, match=r"'dense0_weight' is not 'arg:<name>'"):
        mx.model.load_params_file(fname)
    nd.save(str(tmp_path / 'lst-0000.params'), [nd.ones((2,))])
    with pytest.raises(ValueError, match='list of arrays'):
        mx.model.load_params(str(tmp_path / 'lst'), 0)


def test_batch_end_param_fields():
    p = mx.model.BatchEndParam(epoch=1, nbatch=2, eval_metric=None, locals={})
    assert (p.epoch, p.nbatch, p.eval_metric, p.locals) == (1, 2, None, {})
    assert mx.model.BatchEndParam._fields == ('epoch', 'nbatch', 'eval_metric', 'locals')


def test_checkpoint_keeps_auxiliary_states(tmp_path):
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    net = mx.sym.SoftmaxOutput(mx.sym.BatchNorm(fc, name='bn'), name='softmax')
    rng = np.random.RandomState(1)
    X = rng.randn(30, 4).astype(np.float32) + 2
    y = rng.randint(0, 3, 30).astype(np.float32)
    it = mx.io.NDArrayIter(X, y, batch_size=10)
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.1})
    prefix = str(tmp_path / 'bn')
    mod.save_checkpoint(prefix, 0)
    assert sorted(k for k in nd.load(prefix + '-0000.params') if k.startswith('aux:')) \
        == ['aux:bn_moving_mean', 'aux:bn_moving_var']
    _, _, aux = mx.model.load_checkpoint(prefix, 0)
    np.testing.assert_array_equal(aux['bn_moving_mean'].asnumpy(),
                                  mod.get_params()[1]['bn_moving_mean'].asnumpy())
    assert np.abs(aux['bn_moving_mean'].asnumpy()).max() > 0.1   # it did move
    loaded = mx.mod.Module.load(prefix, 0)
    loaded.bind(it.provide_data, for_training=False)
    np.testing.assert_allclose(loaded.predict(it).asnumpy(), mod.predict(it).asnumpy(),
                               rtol=1e-6, atol=1e-7)


def test_fit_with_do_checkpoint_and_speedometer(tmp_path, caplog):
    """The callbacks of mx.callback plugged into fit: one checkpoint per
    epoch (numbered from 1) holding that epoch's parameters."""
    rng = np.random.RandomState(2)
    X = rng.randn(40, 4).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    it = mx.io.NDArrayIter(X, y, batch_size=10)
    prefix = str(tmp_path / 'ck')
    seen = {}
    mod = mx.mod.Module(_net())
    with caplog.at_level('INFO'):
        mod.fit(it, num_epoch=2, optimizer_params={'learning_rate': 0.1},
                batch_end_callback=mx.callback.Speedometer(10, frequent=2),
                epoch_end_callback=[mx.callback.do_checkpoint(prefix),
                                    lambda e, s, a, x: seen.update(
                                        {e: {k: v.asnumpy() for k, v in a.items()}})])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'ck-0001.params', 'ck-0002.params', 'ck-symbol.json']
    for epoch in (0, 1):
        _, arg, _ = mx.model.load_checkpoint(prefix, epoch + 1)
        for k, v in seen[epoch].items():
            np.testing.assert_array_equal(arg[k].asnumpy(), v)
    assert 'Speed:' in caplog.text and 'samples/sec' in caplog.text


def test_module_loads_what_hybridize_export_wrote(tmp_path):
    """HybridBlock.export writes the checkpoint format: a Module runs it."""
    from d2lmini.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Dense(8, activation='relu'), nn.BatchNorm(), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    X = nd.array(np.random.RandomState(0).randn(6, 4).astype(np.float32))
    want = net(X).asnumpy()
    prefix = str(tmp_path / 'gluon')
    net.export(prefix)
    mod = mx.mod.Module.load(prefix, 0, label_names=None)
    assert mod._aux_params and all(k.endswith(('_mean', '_var')) for k in mod._aux_params)
    mod.bind(data_shapes=[('data', (6, 4))], for_training=False)
    mod.forward(mx.io.DataBatch([X]))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
