"""mx.kv: the semantics MXNet 1.x's own tests pin, checked against NumPy."""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import engine, nd

SHAPE = (4, 4)
DEVS = [mx.cpu(i) for i in range(4)]


def _val(kv, key, shape=SHAPE, ctx=mx.cpu(0)):
    out = nd.zeros(shape, ctx=ctx)
    kv.pull(key, out=out)
    return out.asnumpy()


def _store(name='local', keys=(3, 5, 7, 11)):
    kv = mx.kv.create(name)
    kv.init(list(keys), [nd.full(SHAPE, k) for k in keys])
    return kv


@pytest.mark.parametrize('name', ['local', 'device'])
def test_push_replaces_without_updater(name):
    kv = _store(name)
    np.testing.assert_array_equal(_val(kv, 3), np.full(SHAPE, 3))
    kv.push(3, nd.ones(SHAPE) * 8)
    kv.push(3, nd.ones(SHAPE) * 2)        # replaces: no accumulation
    np.testing.assert_array_equal(_val(kv, 3), np.full(SHAPE, 2))
    # a list of values for one key is summed first
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=SHAPE).astype(np.float32) for _ in DEVS]
    kv.push(3, [nd.array(x, ctx=d) for x, d in zip(xs, DEVS)])
    outs = [nd.zeros(SHAPE, ctx=d) for d in DEVS]
    kv.pull(3, out=outs)
    for o, d in zip(outs, DEVS):
        assert o.context == d
        np.testing.assert_allclose(o.asnumpy(), sum(xs), rtol=1e-6, atol=1e-6)
    # other keys untouched
    np.testing.assert_array_equal(_val(kv, 5), np.full(SHAPE, 5))


def test_a_pushed_array_is_not_aliased_by_the_store():
    kv = _store()
    a = nd.ones(SHAPE)
    kv.push(3, a)
    a[:] = 7                               # the user's array changes later
    np.testing.assert_array_equal(_val(kv, 3), np.ones(SHAPE))


@pytest.mark.parametrize('name', ['local', 'device'])
def test_list_keys_list_values_and_many_outputs(name):
    keys = [5, 7, 11]
    kv = _store(name)
    kv.push(keys, [[nd.ones(SHAPE, ctx=d) * (i + 1) for d in DEVS]
                   for i in range(len(keys))])
    outs = [[nd.zeros(SHAPE, ctx=d) for d in DEVS[:2]] for _ in keys]
    kv.pull(keys, out=outs)
    for i, row in enumerate(outs):
        for o in row:
            np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 4 * (i + 1)))
    # repeated keys in one list are grouped (summed) as in MXNet
    kv.push([3, 3], [nd.ones(SHAPE), nd.ones(SHAPE, ctx=mx.cpu(1)) * 2])
    np.testing.assert_array_equal(_val(kv, 3), np.full(SHAPE, 3))


def test_str_keys_and_custom_updater():
    seen = []

    def updater(key, recv, stored):
        seen.append(key)
        stored += recv * 2

    kv = mx.kv.create('device')
    kv.init(['a', 'b'], [nd.zeros(SHAPE), nd.ones(SHAPE)])
    kv._set_updater(updater)
    for _ in range(3):                      # with an updater pushes accumulate
        kv.push(['a', 'b'], [[nd.ones(SHAPE, ctx=d) for d in DEVS[:2]]] * 2)
    assert seen == ['a', 'b'] * 3
    np.testing.assert_array_equal(_val(kv, 'a'), np.full(SHAPE, 12))
    np.testing.assert_array_equal(_val(kv, 'b'), np.full(SHAPE, 13))


@pytest.mark.parametrize('name', ['local', 'device'])
def test_pushpull_and_broadcast(name, engine_kind):
    kv = mx.kv.create(name)
    outs = [nd.zeros(SHAPE, ctx=d) for d in DEVS]
    kv.broadcast('w', nd.full(SHAPE, 5), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.full(SHAPE, 5))
    vals = [nd.ones(SHAPE, ctx=d) * (i + 1) for i, d in enumerate(DEVS)]
    kv.pushpull('w', vals)                  # in place: all-reduce
    for v in vals:
        np.testing.assert_array_equal(v.asnumpy(), np.full(SHAPE, 10))
    out = nd.zeros(SHAPE, ctx=mx.cpu(2))
    kv.pushpull('w', [nd.ones(SHAPE)] * 2, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(SHAPE, 2))


@pytest.mark.parametrize('name', ['local', 'device'])
def test_set_optimizer_matches_numpy_sgd_momentum(name):
    lr, mom, wd = 0.1, 0.9, 0.01
    rng = np.random.default_rng(1)
    w = rng.normal(size=(3, 5)).astype(np.float32)
    kv = mx.kv.create(name)
    kv.init(0, nd.array(w))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=lr, momentum=mom, wd=wd))
    assert kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    ref, m = w.astype(np.float64), np.zeros_like(w, dtype=np.float64)
    for _ in range(3):
        gs = [rng.normal(size=w.shape).astype(np.float32) for _ in range(2)]
        kv.push(0, [nd.array(g, ctx=d) for g, d in zip(gs, DEVS)])
        g = sum(g.astype(np.float64) for g in gs) + wd * ref
        m = mom * m - lr * g
        ref = ref + m
    outs = [nd.zeros(w.shape, ctx=d) for d in DEVS[:2]]
    kv.pull(0, out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('name', ['local', 'device'])
@pytest.mark.parametrize('optimizer', ['sgd', 'adam'])
def test_optimizer_states_round_trip(tmp_path, name, optimizer):
    fname = str(tmp_path / 'kv.states')
    rng = np.random.default_rng(2)
    w0 = rng.normal(size=(6,)).astype(np.float32)
    grads = [[rng.normal(size=w0.shape).astype(np.float32) for _ in range(2)]
             for _ in range(5)]

    def store():
        kv = mx.kv.create(name)
        kv.init([0, 1], [nd.array(w0), nd.array(-w0)])
        kv.set_optimizer(mx.optimizer.create(optimizer, learning_rate=0.1,
                                             momentum=0.9) if optimizer == 'sgd'
                         else mx.optimizer.create(optimizer, learning_rate=0.1))
        return kv

    def steps(kv, gs):
        for g in gs:
            kv.push([0, 1], [[nd.array(x, ctx=d) for x, d in zip(g, DEVS)]] * 2)

    ref = store()
    steps(ref, grads)
    kv = store()
    steps(kv, grads[:3])
    kv.save_optimizer_states(fname, dump_optimizer=True)
    w_mid = [_val(kv, k, w0.shape) for k in (0, 1)]
    resumed = mx.kv.create(name)
    resumed.init([0, 1], [nd.array(w) for w in w_mid])
    resumed.set_optimizer(mx.optimizer.create(optimizer, learning_rate=5.0))
    resumed.load_optimizer_states(fname)
    assert resumed._updater.optimizer.lr == pytest.approx(0.1)
    steps(resumed, grads[3:])
    for k in (0, 1):
        np.testing.assert_allclose(_val(resumed, k, w0.shape), _val(ref, k, w0.shape),
                                   rtol=1e-5, atol=1e-6)
    assert '__trainer__.json' in nd.load(fname)          # nd.save, no pickle


def test_states_need_an_optimizer():
    kv = _store()
    with pytest.raises(mx.MXNetError, match='set_optimizer'):
        kv.save_optimizer_states('never_written')


def _snapshot(kv):
    return {k: _val(kv, k, kv._meta[k][0]) for k in kv._meta}


def _unchanged(kv, before):
    after = _snapshot(kv)
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])


@pytest.mark.parametrize('call,match', [
    (lambda kv: kv.init('a', nd.ones(SHAPE)), 'mixed key types'),
    (lambda kv: kv.push(['a', 3], [nd.ones(SHAPE)] * 2), 'mixed key types'),
    (lambda kv: kv.push(9, nd.ones(SHAPE)), 'key 9 has not been initialized'),
    (lambda kv: kv.pull(9, out=nd.ones(SHAPE)), 'key 9 has not been initialized'),
    (lambda kv: kv.init(3, nd.ones(SHAPE)), 'duplicate init of key 3'),
    (lambda kv: kv.init([20, 3], [nd.ones(SHAPE)] * 2), 'duplicate init of key 3'),
    # a key twice in one call, as MXNet: "duplicate init of key 21"
    (lambda kv: kv.init([21, 21], [nd.ones(SHAPE), nd.zeros(SHAPE)]),
     'duplicate init of key 21'),
    (lambda kv: kv.init(22, [nd.ones(SHAPE)] * 2), 'duplicate init of key 22'),
    (lambda kv: kv.push(3, nd.ones((2, 2))), r'key 3 holds float32 of shape \(4, 4\)'),
    (lambda kv: kv.push([5, 3], [nd.ones(SHAPE), nd.ones((4, 5))]), 'key 3'),
    (lambda kv: kv.push(3, nd.ones(SHAPE, dtype='float64')), 'float64'),
    (lambda kv: kv.pull(3, out=[nd.ones(SHAPE), nd.ones((1,))]), 'key 3'),
    (lambda kv: kv.pushpull(3, nd.ones(SHAPE), out=nd.ones((3,))), 'key 3'),
    (lambda kv: kv.pushpull(3, nd.ones((3,)), out=nd.ones(SHAPE)), 'key 3'),
    (lambda kv: kv.push([3, 5], [nd.ones(SHAPE)] * 3), '2 keys .* 3 values'),
    (lambda kv: kv.push(3, np.ones(SHAPE)), 'key 3 is a ndarray; pass NDArrays'),
    (lambda kv: kv.push(2.5, nd.ones(SHAPE)), 'ints or strs'),
    (lambda kv: kv.pull(3), 'out='),
    (lambda kv: kv.broadcast(30, nd.ones(SHAPE), out=nd.ones((2,))), 'key 30'),
])
@pytest.mark.parametrize('name', ['local', 'device'])
def test_bad_input_raises_and_keeps_the_store(name, call, match):
    kv = _store(name)
    kv.push(3, [nd.ones(SHAPE, ctx=d) for d in DEVS[:2]])   # 2s under key 3
    before = _snapshot(kv)
    with pytest.raises(mx.MXNetError, match=match):
        call(kv)
    _unchanged(kv, before)
    assert 30 not in kv and 20 not in kv
    kv.push(3, nd.ones(SHAPE))              # still usable, still int keys
    np.testing.assert_array_equal(_val(kv, 3), np.ones(SHAPE))


def test_a_gpu_value_without_a_gpu_is_refused():
    if mx.num_gpus() > 0:
        pytest.skip('a GPU is present')
    with pytest.raises(mx.MXNetError, match='no GPU'):
        nd.ones(SHAPE, ctx=mx.gpu(0))       # cannot even be made


def test_local_reduces_on_cpu0_and_device_spreads_keys():
    keys = list(range(6))
    vals = [[nd.ones((64, 64), ctx=d) for d in DEVS[1:3]] for _ in keys]
    local = mx.kv.create('local')
    local.init(keys, [nd.zeros((64, 64))] * len(keys))
    with engine.Trace() as tr:
        local.push(keys, vals)
    sums = {c for c, n, *_ in tr.spans() if n in ('naive_sum', 'ring_add')}
    assert sums == {mx.cpu(0)}              # 'local': everything on the CPU
    device = mx.kv.create('device')
    device.init(keys, [nd.zeros((64, 64))] * len(keys))
    with engine.Trace() as tr:
        device.push(keys, vals)
    where = [device.reduce_context(k) for k in keys]
    assert where == [mx.cpu(1), mx.cpu(2)] * 3     # least work first
    sums = [c for c, n, *_ in tr.spans() if n in ('naive_sum', 'ring_add')]
    assert sorted(sums) == sorted(where)    # and the sums ran there
    # the key keeps its device; a bigger key goes where the work is least
    device.init(99, nd.zeros((128, 128)))
    device.push(99, [nd.ones((128, 128), ctx=d) for d in DEVS[1:3]])
    assert device.reduce_context(99) == mx.cpu(1)
    device.init(100, nd.zeros((2,)))
    device.push(100, [nd.ones((2,), ctx=d) for d in DEVS[1:3]])
    assert device.reduce_context(100) == mx.cpu(2)


def test_device_store_updates_where_it_reduces():
    kv = mx.kv.create('device')
    kv.init([0, 1], [nd.zeros((8,)), nd.zeros((8,))])
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0, momentum=0.5))
    for _ in range(2):
        kv.push([0, 1], [[nd.ones((8,), ctx=d) for d in DEVS[:2]]] * 2)
    assert {kv._store[k].context for k in (0, 1)} == {mx.cpu(0), mx.cpu(1)}
    for k in (0, 1):
        assert kv._updater.states[k].context == kv._store[k].context
        np.testing.assert_allclose(_val(kv, k, (8,)), np.full(8, -2 - 3))


def test_create_names_types_and_registry():
    for name in ('local', 'device', 'local_allreduce_cpu', 'local_allreduce_device'):
        kv = mx.kv.create(name)
        assert kv.type == name and kv.rank == 0 and kv.num_workers == 1
        kv.barrier()
    assert mx.kvstore.create is mx.kv.create
    assert isinstance(mx.kv.create('device'), mx.kv.KVStoreBase)
    with pytest.raises(ValueError, match="unknown kvstore 'bogus'.*'device'"):
        mx.kv.create('bogus')
    with pytest.raises(mx.kv.DistributedError,
                       match="'dist_sync'.*not part of a distributed job"):
        mx.kv.create('dist_sync')          # no DMLC_ROLE: not in a job
    with pytest.raises(mx.MXNetError, match="'horovod'.*registered"):
        mx.kv.create('horovod')
    with pytest.raises(TypeError):
        mx.kv.create(3)

    @mx.kv.KVStoreBase.register
    class Dist_Sync(mx.kv.KVStore):         # a distributed store plugs in here
        def __init__(self):
            super().__init__('dist_sync')

    try:
        kv = mx.kv.create('dist_sync')
        assert type(kv) is Dist_Sync and kv.type == 'dist_sync'
        with pytest.raises(NotImplementedError):
            kv.init(0, nd.ones((1,)))       # its transport is still to write
    finally:
        del mx.kv.KVStoreBase.kv_registry['dist_sync']


def test_device_places_all_waiting_keys_largest_first():
    kv = mx.kv.create('device')
    sizes = [10, 1000, 500, 400]
    kv.init(list(range(4)), [nd.zeros((n,)) for n in sizes])
    kv.push(0, [nd.ones((10,), ctx=d) for d in DEVS[:2]])
    # 1000 -> cpu(0); 500 -> cpu(1); 400 -> cpu(1) (500 < 1000); 10 -> cpu(1)
    assert [kv.reduce_context(k) for k in range(4)] == \
        [mx.cpu(1), mx.cpu(0), mx.cpu(1), mx.cpu(1)]


def test_sparse_and_compression_say_so():
    kv = _store()
    with pytest.raises(NotImplementedError, match='dense'):
        kv.row_sparse_pull(3, out=nd.zeros(SHAPE), row_ids=nd.array([0]))
    with pytest.raises(mx.kv.KVStoreError, match='not supported for this type'):
        kv.set_gradient_compression({'type': '2bit'})    # 'local': as MXNet
    with pytest.raises(mx.MXNetError, match=r'key 3 holds .* \(4, 4\)'):
        kv._reinit(3, nd.ones((2,)))
    kv._reinit(3, nd.full(SHAPE, 9))
    np.testing.assert_array_equal(_val(kv, 3), np.full(SHAPE, 9))
