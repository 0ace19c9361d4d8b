"""save_parameters / load_parameters: round trips and refusal of files that
do not fit, with a message naming every mismatching parameter."""
import os
import struct

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import init, nd
from d2lmini.gluon import nn



class MLP(nn.Block):
    def __init__(self, hidden=8, **kwargs):
        super().__init__(**kwargs)
        self.hidden = nn.Dense(hidden, activation='relu')
        self.output = nn.Dense(3)

    def forward(self, x):
        return self.output(self.hidden(x))


def trained_like(net, x):
    net.initialize(init.Normal(1.0))
    return net(x)


def test_round_trip_into_a_fresh_uninitialized_net(tmp_path, ctx):
    x = nd.random.uniform(shape=(2, 5))
    net = MLP()
    y = trained_like(net, x)
    f = str(tmp_path / 'mlp.params')
    net.save_parameters(f)
    assert sorted(nd.load(f)) == ['hidden.bias', 'hidden.weight', 'output.bias',
                                  'output.weight']
    clone = MLP()                           # never initialized, shapes unknown
    clone.load_parameters(f)
    assert clone.hidden.weight.shape == (8, 5)
    assert clone.hidden.weight.list_ctx() == [ctx]
    np.testing.assert_array_equal(clone(x).asnumpy(), y.asnumpy())
    assert [f for f in os.listdir(tmp_path)] == ['mlp.params']   # no temp files left


def test_load_into_an_initialized_net_keeps_the_leaves(tmp_path):
    a, b = MLP(), MLP()
    x = nd.ones((1, 5))
    trained_like(a, x)
    trained_like(b, x)
    leaf = b.hidden.weight.data()
    f = str(tmp_path / 'a.params')
    a.save_parameters(f)
    b.load_parameters(f)
    assert b.hidden.weight.data() is leaf
    np.testing.assert_array_equal(leaf.asnumpy(), a.hidden.weight.data().asnumpy())


def test_load_onto_given_contexts_and_multi_context_save(tmp_path):
    net = MLP()
    x = nd.ones((2, 5), ctx=mx.cpu(0))
    net.initialize(init.Normal(1.0), ctx=[mx.cpu(0), mx.cpu(1)])
    y = net(x)
    f = str(tmp_path / 'm.params')
    net.save_parameters(f)
    clone = MLP()
    clone.load_parameters(f, ctx=[mx.cpu(1), mx.cpu(2)])
    assert clone.output.bias.list_ctx() == [mx.cpu(1), mx.cpu(2)]
    np.testing.assert_allclose(clone(x.as_in_context(mx.cpu(2))).asnumpy(),
                               y.asnumpy(), rtol=1e-6)
    with pytest.raises(ValueError, match='initialized on'):
        clone.load_parameters(f, ctx=mx.cpu(0))


def test_mismatched_files_are_refused_naming_every_problem(tmp_path):
    x = nd.ones((2, 5))
    src = MLP()
    trained_like(src, x)
    f = str(tmp_path / 'src.params')
    src.save_parameters(f)

    wider = MLP(hidden=16)
    trained_like(wider, x)
    before = wider.hidden.weight.data().asnumpy()
    with pytest.raises(ValueError) as e:
        wider.load_parameters(f)
    msg = str(e.value)
    assert "shape mismatches: hidden.weight: model (16, 5) vs file (8, 5); " \
        "hidden.bias: model (16,) vs file (8,); output.weight: model (3, 16) vs " \
        "file (3, 8)" in msg
    assert 'src.params' in msg
    np.testing.assert_array_equal(wider.hidden.weight.data().asnumpy(), before)

    class Bigger(MLP):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.extra = nn.Dense(2)

    with pytest.raises(ValueError, match=r"missing from the file: 'extra.weight', "
                                         r"'extra.bias' \(allow_missing=True"):
        Bigger().load_parameters(f)
    big = Bigger()
    big.load_parameters(f, allow_missing=True)
    np.testing.assert_array_equal(big.hidden.weight.data().asnumpy(),
                                  src.hidden.weight.data().asnumpy())

    class Smaller(nn.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.hidden = nn.Dense(8, activation='relu')

    with pytest.raises(ValueError, match=r"in the file but not in the model: "
                                         r"'output.weight', 'output.bias'"):
        Smaller().load_parameters(f)
    small = Smaller()
    small.load_parameters(f, ignore_extra=True)
    assert small.hidden.weight.shape == (8, 5)


def test_dtype_mismatch_and_cast(tmp_path):
    d = nn.Dense(2, in_units=3)
    d.initialize()
    f = str(tmp_path / 'd.params')
    d.save_parameters(f)
    e = nn.Dense(2, in_units=3, dtype='float64')
    e.initialize()
    with pytest.raises(ValueError, match=r'dtype mismatches: weight: model float64 '
                                         r'vs file float32'):
        e.load_parameters(f)
    e.load_parameters(f, cast_dtype=True)
    assert e.weight.data().dtype == np.float64
    np.testing.assert_allclose(e.weight.data().asnumpy(), d.weight.data().asnumpy())
    e.load_parameters(f, dtype_source='saved')
    assert e.weight.dtype == np.float32


def test_shared_parameters_and_deduplicate(tmp_path):
    def build():
        shared = nn.Dense(4, in_units=4)
        net = nn.Sequential()
        net.add(shared, nn.Dense(4, in_units=4, params=shared.params), nn.Dense(1))
        return net

    net = build()
    net.initialize(init.Normal(1.0))
    x = nd.ones((2, 4))
    y = net(x)
    f1, f2 = str(tmp_path / 'full.params'), str(tmp_path / 'dedup.params')
    net.save_parameters(f1)
    net.save_parameters(f2, deduplicate=True)
    assert len(nd.load(f1)) == 6 and sorted(nd.load(f2)) == [
        '0.bias', '0.weight', '2.bias', '2.weight']
    for f in (f1, f2):
        clone = build()
        clone.load_parameters(f)
        np.testing.assert_allclose(clone(x).asnumpy(), y.asnumpy(), rtol=1e-6)


def test_batchnorm_running_stats_are_saved(tmp_path):
    bn = nn.BatchNorm(in_channels=2)
    bn.initialize()
    bn.running_mean.set_data(nd.array([1.0, 2.0]))
    f = str(tmp_path / 'bn.params')
    bn.save_parameters(f)
    assert sorted(nd.load(f)) == ['beta', 'gamma', 'running_mean', 'running_var']
    other = nn.BatchNorm()
    other.load_parameters(f)
    np.testing.assert_array_equal(other.running_mean.data().asnumpy(), [1, 2])


def test_parameter_dict_save_load_with_full_names(tmp_path):
    net = MLP(prefix='model_')
    trained_like(net, nd.ones((1, 5)))
    f = str(tmp_path / 'p.params')
    net.collect_params().save(f)
    assert all(k.startswith('dense') for k in nd.load(f))
    net2 = MLP()
    with pytest.raises(ValueError, match='missing from the file'):
        net2.collect_params().load(f)
    # the legacy format: names without the block's prefix
    scoped = nn.Dense(3, in_units=5, prefix='fc_')
    scoped.initialize(init.Normal(1.0))
    g = str(tmp_path / 'legacy.params')
    scoped.collect_params().save(g, strip_prefix='fc_')
    assert sorted(nd.load(g)) == ['bias', 'weight']
    again = nn.Dense(3, prefix='other_')
    again.load_parameters(g)                    # structural names match too
    np.testing.assert_array_equal(again.weight.data().asnumpy(),
                                  scoped.weight.data().asnumpy())
    with pytest.raises(ValueError, match='cannot strip prefix'):
        scoped.collect_params().save(g, strip_prefix='zz_')


def test_not_a_parameter_file(tmp_path):
    f = str(tmp_path / 'junk.params')
    with open(f, 'wb') as fh:
        fh.write(b'not a zip')
    with pytest.raises(ValueError, match='not a valid NDArray file'):
        MLP().load_parameters(f)
    nd.save(f, [nd.ones(1)])
    with pytest.raises(ValueError, match='list of arrays'):
        MLP().load_parameters(f)
    with pytest.raises(ValueError, match='list of arrays'):
        MLP().collect_params().load(f)


def test_deprecated_aliases(tmp_path):
    d = nn.Dense(2, in_units=2)
    d.initialize()
    f = str(tmp_path / 'old.params')
    with pytest.warns(DeprecationWarning):
        d.save_params(f)
    e = nn.Dense(2)
    with pytest.warns(DeprecationWarning):
        e.load_params(f)
    np.testing.assert_array_equal(e.weight.data().asnumpy(), d.weight.data().asnumpy())


def test_parameter_dict_cast_dtype_current_or_saved(tmp_path):
    from d2lmini import gluon
    f = str(tmp_path / 'p.params')
    p0 = gluon.ParameterDict('')
    p0.get('w0', shape=(3, 3), dtype='float32')
    p0.get('w1', shape=(3, 3), dtype='int8')
    p0.initialize(init.One(), ctx=mx.cpu(1))
    p0.save(f)
    p1 = gluon.ParameterDict('')
    p1.get('w0', shape=(3, 3), dtype='float16')
    p1.get('w1', shape=(3, 3), dtype='float64')
    p1.load(f, cast_dtype=True, dtype_source='current')
    assert p1['w0'].data().dtype is np.float16 and p1['w1'].data().dtype is np.float64
    p1.load(f, cast_dtype=True, dtype_source='saved')
    assert p1['w0'].data().dtype is np.float32 and p1['w1'].data().dtype is np.int8
    np.testing.assert_array_equal(p1['w1'].data().asnumpy(), np.ones((3, 3)))
    with pytest.raises(ValueError, match='dtype_source'):
        p1.load(f, dtype_source='file')


def _mxnet_dense_file(weight, bias):
    """The bytes MXNet 1.9.1 writes for Dense(3, in_units=2).save_parameters:
    names 'weight' and 'bias', float32 V2 records on cpu(0)."""
    def rec(a):
        return (struct.pack('<Iii', 0xF993FAC9, 0, a.ndim)
                + struct.pack(f'<{a.ndim}q', *a.shape)
                + struct.pack('<iii', 1, 0, 0) + a.astype('<f4').tobytes())
    names = [b'weight', b'bias']
    return (struct.pack('<QQQ', 0x112, 0, 2) + rec(weight) + rec(bias)
            + struct.pack('<Q', 2)
            + b''.join(struct.pack('<Q', len(n)) + n for n in names))


def test_parameters_move_to_and_from_mxnet(tmp_path):
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    b = np.array([1, 2, 3], np.float32)
    f = tmp_path / 'from_mxnet.params'
    f.write_bytes(_mxnet_dense_file(w, b))
    net = nn.Dense(3, in_units=2)
    net.load_parameters(str(f))
    np.testing.assert_array_equal(net.weight.data().asnumpy(), w)
    np.testing.assert_array_equal(net.bias.data().asnumpy(), b)
    g = tmp_path / 'to_mxnet.params'
    net.save_parameters(str(g))
    assert g.read_bytes() == f.read_bytes()              # what MXNet would write


def test_empty_net_round_trip(tmp_path):
    f = str(tmp_path / 'empty.params')
    nn.Sequential().save_parameters(f)
    assert nd.load(f) == []
    nn.Sequential().load_parameters(f)                    # nothing to load, no error


def test_legacy_prefixed_file_honours_dtype_source(tmp_path):
    """A file of full names without the block's prefix (MXNet's legacy
    path of load_parameters) goes through ParameterDict.load, dtype_source too."""
    def make():
        net = nn.Sequential(prefix='net_')
        with net.name_scope():
            net.add(nn.Dense(3, in_units=5))
        return net
    net = make()
    net.initialize(init.Normal(1.0))
    f = str(tmp_path / 'legacy.params')
    net.collect_params().save(f, strip_prefix='net_')
    assert sorted(nd.load(f)) == ['dense0_bias', 'dense0_weight']
    half = make()
    half.cast('float16')
    half.load_parameters(f, cast_dtype=True, dtype_source='current')
    assert half[0].weight.data().dtype is np.float16
    half.load_parameters(f, cast_dtype=True, dtype_source='saved')
    assert half[0].weight.data().dtype is np.float32
    np.testing.assert_array_equal(half[0].weight.data().asnumpy(),
                                  net[0].weight.data().asnumpy())


def test_save_params_uses_full_names_a_symbol_block_reads(tmp_path):
    import d2lmini as mx
    from d2lmini import gluon
    net = nn.HybridSequential(prefix='')
    with net.name_scope():
        net.add(nn.Conv2D(4, (3, 3)), nn.Dense(5))
    net.initialize()
    x = nd.ones((1, 1, 8, 8))
    want = net(x).asnumpy()
    f = str(tmp_path / 'legacy.params')
    with pytest.warns(DeprecationWarning):
        net.save_params(f)
    assert sorted(nd.load(f)) == sorted(p.name for p in net.collect_params().values())
    block = gluon.nn.SymbolBlock(outputs=net(mx.sym.var('data')),
                                 inputs=mx.sym.var('data'))
    with pytest.warns(DeprecationWarning):
        block.load_params(f, ctx=x.context)
    np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-6, atol=1e-6)
