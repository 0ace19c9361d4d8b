"""2-bit gradient compression (``kv.set_gradient_compression``), checked
against a model of MXNet 1.9.1's kernels written element by element (as
``src/kvstore/gradient_compression-inl.h`` is), against what MXNet 1.9.1's
own 'device' store pulled (tests/fixtures/gradient_compression), and in a
``dist_sync`` job of two workers.
"""
import json
import os
import sys

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import backend, gluon, nd
from d2lmini.kvstore.compression import (FACTOR, compressed_size, decompress_push,
                                         dequantize_2bit, quantize_2bit)

import dist_job
from conftest import DEVICES, needs_devices

sys.path.insert(0, dist_job.SCRIPTS)
import compressed  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(__file__), 'fixtures', 'gradient_compression',
                       'mx191_device_2bit.json')
POS, NEG = (0xc0, 0x30, 0x0c, 0x03), (0x80, 0x20, 0x08, 0x02)   # MXNet's masks


# -- the model: MXNet's quantize_2bit / dequantize_2bit, one element at a time ---------
def mx_quantize(grad, residual, t):
    """The bytes MXNet sends for ``grad`` (``residual`` updated in place)."""
    t = np.float32(t)
    out = np.zeros(compressed_size(grad.size) * 4, np.uint8)
    for i in range(grad.size):
        byte = (i >> 4) * 4 + ((i & 15) >> 2)
        residual[i] += grad[i]
        if residual[i] >= t:
            out[byte] |= POS[i & 3]
            residual[i] -= t
        elif residual[i] <= -t:
            out[byte] |= NEG[i & 3]
            residual[i] -= -t
    return out


def mx_dequantize(data, size, t):
    t, out = np.float32(t), np.zeros(size, np.float32)
    for i in range(size):
        masked = data[(i >> 4) * 4 + ((i & 15) >> 2)] & POS[i & 3]
        out[i] = t if masked == POS[i & 3] else -t if masked == NEG[i & 3] else 0
    return out


def mx_sums(gradients, steps, t):
    """What the store holds after each step: the sum over senders of their
    dequantized pushes, each sender with its own residual.
    ``gradients(sender, step)`` is a sender's float32 gradient."""
    senders, sums, residuals = range(len(gradients)), [], {}
    for s in range(steps):
        total = 0
        for d in senders:
            g = gradients[d](s)
            r = residuals.setdefault(d, np.zeros(g.size, np.float32))
            total = total + mx_dequantize(mx_quantize(g, r, t), g.size, t)
        sums.append(total)
    return sums


# -- the quantizer -------------------------------------------------------------------------
@pytest.mark.parametrize('ctx', DEVICES, ids=str)
def test_quantizer_is_mxnets_over_several_steps(ctx):
    rng = np.random.RandomState(0)
    for size in (1, 15, 16, 17, 37, 1000):
        for t in (0.5, 0.1):
            mine = backend.asarray_on(np.zeros(size, np.float32), ctx)
            model = np.zeros(size, np.float32)
            for _ in range(4):                 # the residual carries over
                g = (rng.randn(size) * 0.4).astype(np.float32)
                words = quantize_2bit(backend.asarray_on(g, ctx), mine, t)
                data = mx_quantize(g, model, t)
                got = backend.to_numpy(words)
                assert got.dtype == np.uint32 and got.size == compressed_size(size)
                np.testing.assert_array_equal(got.view(np.uint8), data)
                np.testing.assert_array_equal(backend.to_numpy(mine), model)
                np.testing.assert_array_equal(
                    backend.to_numpy(dequantize_2bit(words, size, t)),
                    mx_dequantize(data, size, t))


def test_bit_layout_of_a_word():
    # element j of a block of 16: byte j // 4 of the word, bits 7-6 first;
    # 11 = +t, 10 = -t; a little-endian uint32 holds byte 0 lowest
    g = np.zeros(20, np.float32)
    g[[0, 5, 15, 16]] = 1.0
    g[[1, 10]] = -1.0
    words = quantize_2bit(g, np.zeros(20, np.float32), 0.5)
    assert words.size == 2
    assert list(words.view(np.uint8)) == [0b11100000, 0b00110000, 0b00001000,
                                          0b00000011, 0b11000000, 0, 0, 0]
    assert words[0] == 0x0308_30E0 and words[1] == 0xC0
    # 01 is not a code MXNet writes; it reads as 0, as 00 does
    odd = np.array([0b01_11_10_00], np.uint8).repeat(4).view(np.uint32)
    np.testing.assert_array_equal(dequantize_2bit(odd, 4, 2.0), [0, 2, -2, 0])


def test_sizes_that_are_not_multiples_of_16():
    for size in (1, 17, 33, 47):
        g = np.full(size, 3.0, np.float32)
        words = quantize_2bit(g, np.zeros(size, np.float32), 0.5)
        assert words.size == -(-size // FACTOR)
        codes = np.unpackbits(words.view(np.uint8)).reshape(-1, 2)
        assert (codes[:size] == [1, 1]).all() and (codes[size:] == 0).all()  # padding
    with pytest.raises(ValueError, match='17 elements travel as 2 uint32 words'):
        dequantize_2bit(np.zeros(1, np.uint32), 17, 0.5)


def test_a_server_reads_only_well_formed_compressed_pushes():
    words = quantize_2bit(np.ones(17, np.float32), np.zeros(17, np.float32), 0.5)
    np.testing.assert_array_equal(decompress_push('2bit', 0.5, words, 17), [0.5] * 17)
    for kind, t, w, n, why in [('1bit', 0.5, words, 17, 'Unknown type'),
                               ('2bit', None, words, 17, 'threshold > 0'),
                               ('2bit', 0.0, words, 17, 'threshold > 0'),
                               ('2bit', float('inf'), words, 17, 'finite threshold'),
                               ('2bit', float('nan'), words, 17, 'finite threshold'),
                               ('2bit', 0.5, words, 40, 'travel as 3 uint32'),
                               ('2bit', 0.5, words.view(np.float32), 17, 'float32')]:
        with pytest.raises(ValueError, match=why):
            decompress_push(kind, t, w, n)


# -- the in-process stores -----------------------------------------------------------------
def _fixture_gradient(device, key, size):
    return lambda step: (np.random.RandomState(100 * device + 10 * key + step)
                         .randn(size).astype(np.float32) * 0.4)


@needs_devices(2)
def test_device_store_pulls_what_mxnet_1_9_1_pulled():
    with open(FIXTURE) as f:
        ref = json.load(f)
    t, sizes, steps = ref['threshold'], ref['sizes'], len(ref['pulled'])
    kind = mx.current_context().device_type
    devs = [mx.Context(kind, i) for i in (0, 1)]
    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'threshold': t})
    for k, n in enumerate(sizes):
        kv.init(k, nd.zeros((n,)))
    for s in range(steps):
        for k, n in enumerate(sizes):
            kv.push(k, [nd.array(_fixture_gradient(d, k, n)(s), ctx=c)
                        for d, c in enumerate(devs)])
            outs = [nd.zeros((n,), ctx=c) for c in devs]
            kv.pull(k, out=outs)
            for o in outs:
                np.testing.assert_array_equal(o.asnumpy(), ref['pulled'][s][k])
    # and the model says the same
    for k, n in enumerate(sizes):
        model = mx_sums([_fixture_gradient(d, k, n) for d in (0, 1)], steps, t)
        for s in range(steps):
            np.testing.assert_array_equal(model[s], ref['pulled'][s][k])


@needs_devices(2)
def test_device_store_with_an_optimizer_updates_with_the_decompressed_sum():
    kind = mx.current_context().device_type
    devs = [mx.Context(kind, i) for i in (0, 1)]
    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=1.0))
    kv.init(4, nd.zeros((2,)))
    out = nd.zeros((2,))
    # each device sends (0.5, 0) and keeps (0.2, 0.2) (MXNet 1.9.1 pulls
    # [-1, 0] here); then (0.5, 0) keeping (0.4, 0.4); then (0.5, 0.5)
    for want in ([-1, 0], [-2, 0], [-3, -1]):
        kv.push(4, [nd.array([0.7, 0.2], ctx=c) for c in devs])
        kv.pull(4, out=out)
        np.testing.assert_array_equal(out.asnumpy(), want)


def test_errors_are_mxnets():
    with open(FIXTURE) as f:
        said = json.load(f)['errors']
    cases = {'no type': {'threshold': 0.5}, '1bit': {'type': '1bit'},
             'zero': {'type': '2bit', 'threshold': 0},
             'negative': {'type': '2bit', 'threshold': -1},
             'text': {'type': '2bit', 'threshold': 'abc'}}
    for name, params in cases.items():
        phrase = said[name].split(' : ')[-1].replace('MXNetError: ', '')
        with pytest.raises(mx.MXNetError) as e:
            mx.kv.create('device').set_gradient_compression(params)
        assert phrase in str(e.value), (name, phrase, str(e.value))
    with pytest.raises(mx.kv.KVStoreError, match=said['local']):
        mx.kv.create('local').set_gradient_compression({'type': '2bit'})
    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'foo': 1})     # MXNet ignores foo
    assert kv._compression.threshold == 0.5                     # the default
    kv.init(1, nd.ones((2,), dtype='float16'))
    with pytest.raises(mx.kv.KVStoreError, match='only supported for float32'):
        kv.push(1, nd.zeros((2,), dtype='float16'))
    out = nd.zeros((2,), dtype='float16')
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), [1, 1])        # nothing changed


@needs_devices(2)
@pytest.mark.parametrize('update_on_kvstore', [True, False])
def test_trainer_passes_compression_params_to_the_store(update_on_kvstore):
    kind = mx.current_context().device_type
    devs = [mx.Context(kind, i) for i in (0, 1)]
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Uniform(), ctx=devs)
    before = net.weight.data(devs[0]).asnumpy()
    # no gradient reaches a threshold of 1e4: nothing is sent, nothing moves
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1.0},
                            kvstore='device', update_on_kvstore=update_on_kvstore,
                            compression_params={'type': '2bit', 'threshold': 1e4})
    for c in devs:
        with mx.autograd.record():
            y = net(nd.ones((2, 4), ctx=c))
        y.backward()
    trainer.step(1)
    assert trainer._kvstore._compression.threshold == 1e4
    for c in devs:
        np.testing.assert_array_equal(net.weight.data(c).asnumpy(), before)


# -- jobs of two workers ---------------------------------------------------------------------
def _job(kvtype, steps, t, sizes, num_servers):
    procs = dist_job.run('compressed.py', 2, num_servers, args=(kvtype, steps, t, *sizes),
                         env={'MXNET_KVSTORE_BIGARRAY_BOUND': '10000'})
    assert all(p.rc == 0 for p in procs), dist_job.report(procs)
    results = [json.loads(p.lines[-1]) for p in procs if p.name.startswith('worker')]
    models = [mx_sums([lambda s, r=r, k=k, n=n: compressed.gradient(r, k, s, n)
                       for r in (0, 1)], steps, t) for k, n in enumerate(sizes)]
    return results, models


def test_dist_sync_two_workers_sum_their_decompressed_pushes():
    steps, t, sizes = 3, 0.5, (37, 20001)        # 20001: split over both servers
    results, models = _job('dist_sync', steps, t, sizes, 2)
    for k, model in enumerate(models):
        for r in results:
            for s in range(steps):
                np.testing.assert_array_equal(r['pulled'][s][k], model[s])
    # the words travel: 2 bits an element, 4 bytes a started block of 16 in
    # each part (the big key is cut at 10000), plus a JSON header a message
    words = steps * 4 * (compressed_size(37) + compressed_size(10000) +
                         compressed_size(10001))
    float32 = steps * 4 * sum(sizes)
    for r in results:
        headers = r['push_bytes'] - words
        assert 0 < headers < steps * 3 * 300, (r['push_bytes'], words)
        assert r['push_bytes'] < float32 / 14          # about a 16th


def test_dist_async_applies_each_decompressed_push():
    steps, t, sizes = 3, 0.5, (37,)
    results, (model,) = _job('dist_async', steps, t, sizes, 1)
    # SGD with learning rate 1, from 0: minus every push of every worker
    for r in results:
        np.testing.assert_array_equal(r['final'][0], -sum(model))
