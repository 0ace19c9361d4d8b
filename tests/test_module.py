"""mx.mod.Module: training a Symbol, checked against NumPy.

Oracles: least squares for linear regression, a NumPy forward pass and
hand-written softmax-regression gradients for one SGD step, and the same
module on one device for the data-parallel one.
"""
import logging

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd


def _linreg_data(n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3).astype(np.float32)
    w = np.array([[2.0, -3.4, 1.5]], np.float32)
    y = X @ w.T + 4.2 + 0.01 * rng.randn(n, 1).astype(np.float32)
    return X, y


def _linreg_net():
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=1, name='fc')
    return mx.sym.LinearRegressionOutput(fc, name='lin')


def _blobs(n=300, seed=0):
    """Three well separated Gaussian blobs in 2-D."""
    rng = np.random.RandomState(seed)
    centers = np.array([[0, 4], [4, -2], [-4, -2]], np.float32)
    y = rng.randint(0, 3, n)
    X = centers[y] + 0.5 * rng.randn(n, 2).astype(np.float32)
    return X.astype(np.float32), y.astype(np.float32)


def _mlp(num_hidden=16):
    x = mx.sym.var('data')
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=num_hidden, name='fc1'),
                          act_type='relu', name='relu1')
    out = mx.sym.FullyConnected(h, num_hidden=3, name='fc2')
    return mx.sym.SoftmaxOutput(out, name='softmax')


def _mlp_numpy(params, X):
    h = np.maximum(X @ params['fc1_weight'].T + params['fc1_bias'], 0)
    z = h @ params['fc2_weight'].T + params['fc2_bias']
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def _np_params(mod):
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


# == fit on problems with a known answer =================================================
def test_linear_regression_recovers_weights():
    X, y = _linreg_data()
    it = mx.io.NDArrayIter(X, y, batch_size=20, shuffle=False, label_name='lin_label')
    mod = mx.mod.Module(_linreg_net(), label_names=('lin_label',))
    mod.fit(it, num_epoch=15, eval_metric='mse',
            optimizer_params={'learning_rate': 0.1})
    params = _np_params(mod)
    # the oracle: least squares with an intercept
    A = np.hstack([X, np.ones((len(X), 1), np.float32)])
    sol = np.linalg.lstsq(A, y, rcond=None)[0].ravel()
    np.testing.assert_allclose(params['fc_weight'].ravel(), sol[:3], atol=2e-3)
    np.testing.assert_allclose(params['fc_bias'], sol[3:], atol=2e-3)
    assert mod.score(it, 'mse')[0][1] < 2e-4


def test_softmax_classifier_learns_and_predicts_like_numpy():
    X, y = _blobs()
    it = mx.io.NDArrayIter(X, y, batch_size=30, shuffle=False)
    mod = mx.mod.Module(_mlp())
    mod.fit(it, num_epoch=10, optimizer_params={'learning_rate': 0.1},
            initializer=mx.init.Xavier())
    (name, acc), = mod.score(it, 'acc')
    assert name == 'accuracy' and acc > 0.97
    # predict is the network's forward pass: compare with NumPy's
    probs = mod.predict(it)
    assert probs.shape == (300, 3)
    np.testing.assert_allclose(probs.asnumpy(), _mlp_numpy(_np_params(mod), X),
                               rtol=1e-4, atol=1e-5)


def test_inputs_are_bound_with_the_iterators_dtypes():
    """int32 labels (as ``nd.array(y, dtype='int32')`` gives) keep their
    dtype and leave the float32 parameters alone."""
    X, y = _blobs(60)
    it = mx.io.NDArrayIter(X, nd.array(y, dtype='int32'), batch_size=20)
    assert it.provide_label[0].dtype == np.int32
    mod = mx.mod.Module(_mlp())
    mod.fit(it, num_epoch=5, optimizer_params={'learning_rate': 0.1},
            initializer=mx.init.Xavier())
    ex = mod._exec_group.execs[0]
    assert ex.arg_dict['softmax_label'].dtype == np.int32
    assert ex.arg_dict['data'].dtype == ex.arg_dict['fc1_weight'].dtype == np.float32
    assert mod.score(it, 'acc')[0][1] > 0.9


def test_one_sgd_step_matches_hand_written_gradients():
    """SoftmaxOutput's gradient is p - onehot(y); Module divides it by the
    batch size (rescale_grad) before the SGD step."""
    rng = np.random.RandomState(3)
    X = rng.randn(8, 5).astype(np.float32)
    y = rng.randint(0, 4, 8).astype(np.float32)
    W = rng.randn(4, 5).astype(np.float32) * 0.1
    b = rng.randn(4).astype(np.float32) * 0.1
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4,
                                                     name='fc'), name='softmax')
    mod = mx.mod.Module(net)
    mod.bind(data_shapes=[('data', (8, 5))], label_shapes=[('softmax_label', (8,))])
    mod.init_params(arg_params={'fc_weight': nd.array(W), 'fc_bias': nd.array(b)})
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.5})
    mod.forward_backward(mx.io.DataBatch([nd.array(X)], [nd.array(y)]))
    mod.update()

    z = X @ W.T + b
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    g = p - np.eye(4, dtype=np.float32)[y.astype(int)]
    params = _np_params(mod)
    np.testing.assert_allclose(params['fc_weight'], W - 0.5 * g.T @ X / 8, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(params['fc_bias'], b - 0.5 * g.sum(0) / 8, rtol=1e-5,
                               atol=1e-6)


# == data parallelism ==================================================================
def _train(context, work_load_list=None, epochs=2):
    X, y = _blobs(120)
    it = mx.io.NDArrayIter(X, y, batch_size=24, shuffle=False)
    mx.random.seed(7)
    mod = mx.mod.Module(_mlp(), context=context, work_load_list=work_load_list)
    mod.fit(it, num_epoch=epochs, initializer=mx.init.Uniform(0.5),
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3})
    return mod, it


@pytest.mark.parametrize('on_kvstore', ['1', '0'])
@pytest.mark.parametrize('work_load_list', [None, [1, 3]])
def test_two_devices_equal_one(monkeypatch, on_kvstore, work_load_list):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', on_kvstore)
    one, it = _train(mx.cpu(0))
    two, _ = _train([mx.cpu(0), mx.cpu(1)], work_load_list)
    assert two._kvstore is not None and two._update_on_kvstore == (on_kvstore == '1')
    p1, p2 = _np_params(one), _np_params(two)
    assert sorted(p1) == sorted(p2) == ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight']
    for k in p1:
        np.testing.assert_allclose(p2[k], p1[k], rtol=1e-5, atol=1e-5, err_msg=k)
    # each device holds its slice of the batch, and the outputs are merged back
    two.forward(next(iter(it)), is_train=False)
    parts = two.get_outputs(merge_multi_context=False)[0]
    expect = [12, 12] if work_load_list is None else [6, 18]
    assert [p.shape[0] for p in parts] == expect
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_allclose(two.get_outputs()[0].asnumpy(),
                               np.concatenate([p.asnumpy() for p in parts]))


def test_input_grads_and_out_grads_on_two_devices():
    """Without a loss head, backward takes the outputs' gradients; the data's
    gradient of ``x W^T + b`` is ``out_grad W``."""
    rng = np.random.RandomState(1)
    W = rng.randn(3, 4).astype(np.float32)
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    mod = mx.mod.Module(net, label_names=None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[('data', (6, 4))], inputs_need_grad=True)
    mod.init_params(arg_params={'fc_weight': nd.array(W), 'fc_bias': nd.zeros((3,))})
    X = rng.randn(6, 4).astype(np.float32)
    G = rng.randn(6, 3).astype(np.float32)
    mod.forward(mx.io.DataBatch([nd.array(X)]), is_train=True)
    mod.backward([nd.array(G)])
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), X @ W.T, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(mod.get_input_grads()[0].asnumpy(), G @ W, rtol=1e-5,
                               atol=1e-6)
    assert mod.output_shapes == [('fc_output', (6, 3))]


# == shapes that change ================================================================
def test_predict_drops_padding_and_forward_reshapes():
    X, y = _blobs(50)
    it = mx.io.NDArrayIter(X, y, batch_size=20, shuffle=False)   # last batch padded
    mod = mx.mod.Module(_mlp())
    mod.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.1})
    probs = mod.predict(it)
    assert probs.shape == (50, 3)
    np.testing.assert_allclose(probs.asnumpy(), _mlp_numpy(_np_params(mod), X),
                               rtol=1e-4, atol=1e-5)
    per_batch = mod.predict(it, merge_batches=False)
    assert [outs[0].shape[0] for outs in per_batch] == [20, 20, 10]
    # a batch of another size re-binds the executors, keeping the parameters
    mod.forward(mx.io.DataBatch([nd.array(X[:7])], [nd.array(y[:7])]), is_train=False)
    assert mod.get_outputs()[0].shape == (7, 3)
    assert mod.data_shapes[0].shape == (7, 2)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), probs.asnumpy()[:7],
                               rtol=1e-5, atol=1e-6)
    # predict on a bare array
    assert mod.predict(nd.array(X[:4])).shape == (4, 3)


# == the loop: logging, callbacks, fixed parameters, optimizer states =================
def test_fit_logs_and_calls_back(caplog):
    X, y = _blobs(60)
    it = mx.io.NDArrayIter(X, y, batch_size=20, shuffle=False)
    batches, epochs = [], []
    mod = mx.mod.Module(_mlp())
    with caplog.at_level(logging.INFO):
        mod.fit(it, eval_data=it, num_epoch=2, optimizer_params={'learning_rate': 0.1},
                batch_end_callback=lambda p: batches.append((p.epoch, p.nbatch)),
                epoch_end_callback=lambda e, s, a, x: epochs.append((e, sorted(a), x)))
    assert batches == [(e, b) for e in range(2) for b in range(3)]
    assert epochs == [(e, ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight'], {})
                      for e in range(2)]
    text = caplog.text
    for e in range(2):
        assert f'Epoch[{e}] Train-accuracy=' in text
        assert f'Epoch[{e}] Validation-accuracy=' in text


@pytest.mark.filterwarnings('ignore:Parameters already initialized')
def test_fixed_params_do_not_move():
    X, y = _blobs(60)
    it = mx.io.NDArrayIter(X, y, batch_size=20)
    mod = mx.mod.Module(_mlp(), fixed_param_names=['fc1_weight'])
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(initializer=mx.init.Xavier())
    before = _np_params(mod)
    mod.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.5})
    after = _np_params(mod)
    np.testing.assert_array_equal(after['fc1_weight'], before['fc1_weight'])
    assert not np.allclose(after['fc2_weight'], before['fc2_weight'])


@pytest.mark.filterwarnings('ignore:Parameters already initialized')
@pytest.mark.parametrize('context', [mx.cpu(0), [mx.cpu(0), mx.cpu(1)]],
                         ids=['one', 'two'])
def test_resume_with_optimizer_states_equals_uninterrupted(tmp_path, context):
    """Momentum lives in the optimizer states: a checkpoint with them,
    resumed, continues exactly as training would have."""
    X, y = _blobs(60)
    opt = {'learning_rate': 0.05, 'momentum': 0.9}

    def fit(mod, epochs, begin=0):
        it = mx.io.NDArrayIter(X, y, batch_size=20)
        mod.fit(it, num_epoch=epochs, begin_epoch=begin, optimizer_params=opt,
                initializer=mx.init.Xavier())

    mx.random.seed(0)
    straight = mx.mod.Module(_mlp(), context=context)
    fit(straight, 2)

    mx.random.seed(0)
    first = mx.mod.Module(_mlp(), context=context)
    fit(first, 1)
    prefix = str(tmp_path / 'mlp')
    first.save_checkpoint(prefix, 1, save_optimizer_states=True)
    resumed = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=context)
    fit(resumed, 2, begin=1)
    p1, p2 = _np_params(straight), _np_params(resumed)
    for k in p1:
        np.testing.assert_allclose(p2[k], p1[k], rtol=1e-5, atol=1e-6, err_msg=k)


# == bad input ===========================================================================
def test_unknown_data_name_is_named():
    with pytest.raises(ValueError, match=r"'image'.*arguments that can be inputs"):
        mx.mod.Module(_mlp(), data_names=('image',))


def test_bind_errors_are_clear_and_change_nothing():
    mod = mx.mod.Module(_mlp())
    with pytest.raises(TypeError, match='data_shapes must be a list'):
        mod.bind(data_shapes=None)
    with pytest.raises(TypeError, match=r"shape of 'data' must be a tuple"):
        mod.bind(data_shapes=[('data', nd.array([10, 10]))])
    with pytest.raises(ValueError, match=r"name the inputs \['x'\].*data_names=\['data'\]"):
        mod.bind(data_shapes=[('x', (4, 2))])
    assert not mod.binded
    with pytest.raises(RuntimeError, match='call bind'):
        mod.init_params()
    with pytest.raises(ValueError, match='cannot be split over 2 devices'):
        mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)]).bind(
            data_shapes=[('data', (1, 2))])
    mod.bind(data_shapes=[('data', (4, 2))], label_shapes=[('softmax_label', (4,))])
    assert mod.binded
    # a parameter whose shape nothing determines is named
    free = mx.mod.Module(mx.sym.dot(mx.sym.var('data'), mx.sym.var('w')), label_names=None)
    with pytest.raises(mx.MXNetError, match=r"shapes of \['w'\] cannot be inferred"):
        free.bind(data_shapes=[('data', (5, 10))])
    assert not free.binded


def test_batch_that_would_change_a_parameter_is_refused():
    mod = mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[('data', (4, 2))], label_shapes=[('softmax_label', (4,))])
    mod.init_params()
    with pytest.raises(ValueError, match=r"parameter 'fc1_weight' from \(16, 2\) to \(16, 5\)"):
        mod.forward(mx.io.DataBatch([nd.ones((4, 5))], [nd.ones((4,))]))
    with pytest.raises(ValueError, match='cannot be split over 2 devices'):
        mod.forward(mx.io.DataBatch([nd.ones((1, 2))], [nd.ones((1,))]))
    # nothing changed: the module still runs batches of its shapes
    assert mod.data_shapes[0].shape == (4, 2)
    mod.forward(mx.io.DataBatch([nd.ones((4, 2))], [nd.ones((4,))]), is_train=False)
    assert mod.get_outputs()[0].shape == (4, 3)
    assert [p.shape[0] for p in mod.get_outputs(merge_multi_context=False)[0]] == [2, 2]


def test_set_params_checks_names_and_shapes():
    mod = mx.mod.Module(_mlp())
    mod.bind(data_shapes=[('data', (4, 2))], label_shapes=[('softmax_label', (4,))])
    mod.init_params()
    good = {k: v.copy() for k, v in mod.get_params()[0].items()}
    missing = {k: v for k, v in good.items() if k != 'fc2_bias'}
    with pytest.raises(RuntimeError, match="'fc2_bias' is not in arg_params"):
        mod.set_params(missing, {})
    with pytest.raises(ValueError, match=r"\['fc9_weight'\].*allow_extra=True"):
        mod.set_params(dict(good, fc9_weight=nd.ones((2, 2))), {})
    with pytest.raises(ValueError, match=r"arg_params\['fc1_weight'\] has shape \(3, 2\)"):
        mod.set_params(dict(good, fc1_weight=nd.ones((3, 2))), {})
    # allowed: missing ones keep their values, extra ones are ignored
    ones = {k: nd.ones(v.shape) for k, v in missing.items()}
    mod.set_params(dict(ones, fc9_weight=nd.ones((2,))), {}, allow_missing=True,
                   allow_extra=True)
    now = _np_params(mod)
    assert all((now[k] == 1).all() for k in missing)
    np.testing.assert_array_equal(now['fc2_bias'], good['fc2_bias'].asnumpy())


def test_update_before_init_optimizer_is_an_error():
    mod = mx.mod.Module(_mlp())
    mod.bind(data_shapes=[('data', (4, 2))], label_shapes=[('softmax_label', (4,))])
    mod.init_params()
    with pytest.raises(RuntimeError, match='init_optimizer'):
        mod.update()
    infer = mx.mod.Module(_mlp())
    infer.bind(data_shapes=[('data', (4, 2))], for_training=False)
    infer.init_params()
    infer.init_optimizer()
    infer.forward(mx.io.DataBatch([nd.ones((4, 2))]))
    with pytest.raises(RuntimeError, match='for_training=False'):
        infer.backward()
    with pytest.raises(RuntimeError, match='for_training=False'):
        infer.update()
    with pytest.raises(ValueError, match='num_epoch'):
        mod.fit(mx.io.NDArrayIter(np.zeros((4, 2)), np.zeros(4), batch_size=4))


def _bn_net():
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
    return mx.sym.SoftmaxOutput(mx.sym.BatchNorm(fc, name='bn'), name='softmax')


@pytest.mark.filterwarnings('ignore:Parameters already initialized')
def test_aux_states_are_the_devices_mean():
    """BatchNorm's moving statistics differ per device (each sees its slice):
    get_params gives their mean, and fit hands it back to every device at
    the end of an epoch."""
    rng = np.random.RandomState(0)
    X = rng.randn(20, 3).astype(np.float32)
    X[10:] += 3                               # the two halves differ
    y = rng.randint(0, 4, 20).astype(np.float32)
    mod = mx.mod.Module(_bn_net(), context=[mx.cpu(0), mx.cpu(1)])
    assert mod._aux_names == ['bn_moving_mean', 'bn_moving_var']
    mod.bind(data_shapes=[('data', (20, 3))], label_shapes=[('softmax_label', (20,))])
    mod.init_params(initializer=mx.init.Xavier())
    mod.forward(mx.io.DataBatch([nd.array(X)], [nd.array(y)]), is_train=True)
    per_device = [e.aux_dict['bn_moving_mean'].asnumpy() for e in mod._exec_group.execs]
    assert not np.allclose(per_device[0], per_device[1])
    _, aux = mod.get_params()
    np.testing.assert_allclose(aux['bn_moving_mean'].asnumpy(),
                               (per_device[0] + per_device[1]) / 2, rtol=1e-6)
    it = mx.io.NDArrayIter(X, y, batch_size=20)
    mod.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.1})
    after = [e.aux_dict['bn_moving_mean'].asnumpy() for e in mod._exec_group.execs]
    np.testing.assert_array_equal(after[0], after[1])


def test_variable_lr_mult_and_init_attributes_are_honoured():
    """A variable's lr_mult=0 freezes it; its init= overrides the module's
    initializer (MXNet reads both from the symbol's attributes)."""
    w1 = mx.sym.Variable('fc1_weight', lr_mult=0.0, init=mx.init.One())
    fc1 = mx.sym.FullyConnected(mx.sym.var('data'), weight=w1, num_hidden=4, name='fc1')
    w2 = mx.sym.Variable('fc2_weight', wd_mult=0.5)
    net = mx.sym.FullyConnected(fc1, weight=w2, num_hidden=2, name='fc2')
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[('data', (5, 3))])
    mod.init_params(initializer=mx.init.Uniform(1.0))
    before = _np_params(mod)
    np.testing.assert_array_equal(before['fc1_weight'], np.ones((4, 3), np.float32))
    mod.init_optimizer(optimizer_params={'learning_rate': 1.0, 'wd': 0.1})
    assert mod._optimizer.lr_mult == {'fc1_weight': 0.0}
    assert mod._optimizer.wd_mult == {'fc1_bias': 0.0, 'fc2_bias': 0.0, 'fc2_weight': 0.5}
    mod.forward(mx.io.DataBatch([nd.ones((5, 3))]), is_train=True)
    mod.backward([nd.ones((5, 2))])
    mod.update()
    after = _np_params(mod)
    np.testing.assert_array_equal(after['fc1_weight'], before['fc1_weight'])
    assert not np.allclose(after['fc2_weight'], before['fc2_weight'])


# == several processes =================================================================
def test_dist_sync_workers_equal_one_process_on_the_joined_batches():
    """Two workers, each fitting on its half of every batch through a
    dist_sync store (rescale_grad 1/(10*2), updates on the server), end with
    the parameters one process gets from the whole batches."""
    import json
    import sys

    import dist_job
    sys.path.insert(0, dist_job.SCRIPTS)
    import module_fit

    procs = dist_job.run('module_fit.py', 2, 1, args=('dist_sync', 2), timeout=90)
    assert all(p.rc == 0 for p in procs), dist_job.report(procs)
    _, _, want = module_fit.fit('none', 2)
    results = [json.loads(p.lines[-1]) for p in procs if p.name.startswith('worker')]
    assert sorted(r['rank'] for r in results) == [0, 1]
    for r in results:
        assert r['update_on_kvstore'] and r['rescale_grad'] == 1 / 20
        assert sorted(r['params']) == sorted(want)
        for k in want:
            np.testing.assert_allclose(r['params'][k], want[k], rtol=1e-5, atol=1e-6,
                                       err_msg=k)
