"""The asynchronous engine: ordering, dependencies, errors, modes, bounds, trace.

Asynchrony is shown with *gates*: a test op whose kernel blocks its device's
worker until the test opens it.  While a gate is closed, everything pushed
behind it on that device is provably pending, so no assertion here depends
on how fast anything runs.
"""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import engine, nd
from d2lmini.engine import cores, stream
from d2lmini.ndarray.registry import OPS, Op

from conftest import HAS_GPU, child_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A child process imports this checkout first, and whatever else the run has on
# its path (tests/, where the GPU runs find the CuPy stand-in).
PYTHONPATH = child_pythonpath(ROOT)
CPU_PAIRS = [(mx.cpu(0), mx.cpu(1))]
DEVICE_PAIRS = CPU_PAIRS + [
    pytest.param(mx.gpu(0), mx.cpu(1), marks=pytest.mark.skipif(
        not HAS_GPU, reason='no GPU')),
    pytest.param(mx.cpu(1), mx.gpu(0), marks=pytest.mark.skipif(
        not HAS_GPU, reason='no GPU')),
    pytest.param(mx.gpu(0), mx.gpu(1), marks=pytest.mark.skipif(
        mx.num_gpus() < 2, reason='needs two GPUs'))]


# --- test-only operators ---------------------------------------------------------
class _TestOp(Op):
    differentiable = False

    def infer(self, shapes, dtypes, **attrs):
        return shapes[0], dtypes[0]


def _register(cls):
    op = cls()
    op.name = f'_test_{cls.__name__}_{uuid.uuid4().hex[:8]}'
    OPS[op.name] = op
    return op


class Gate(_TestOp):
    """Blocks the worker until ``gate`` (a threading.Event) is set; copies."""

    def forward(self, a, gate, seen=None):
        if seen is not None:
            seen.append(threading.get_ident())
        if not gate.wait(timeout=60):        # a broken test fails, not hangs
            raise TimeoutError('gate never opened')
        return a.copy()


class Boom(_TestOp):
    """Always fails inside its kernel."""

    def forward(self, a):
        raise ValueError('boom: this kernel always fails')


class Probe(_TestOp):
    """Calls ``fn()`` from the worker, then returns its input."""

    def forward(self, a, fn):
        fn()
        return a


@pytest.fixture(scope='module')
def op_table():
    made = {name: _register(cls) for name, cls in
            [('gate', Gate), ('boom', Boom), ('probe', Probe)]}
    yield made
    for op in made.values():
        del OPS[op.name]


@pytest.fixture
def ops(op_table, request):
    return dict(op_table, test=request.node)


@pytest.fixture
def threaded():
    """Force the asynchronous engine (also under D2LMINI_ENGINE=naive)."""
    with engine.engine_mode('threaded'):
        yield
    nd.waitall()


def gate(ops, x, ev, seen=None):
    # Added while the test runs, so it runs before any fixture's teardown
    # (which may waitall): a failed test leaves no gate shut.
    ops['test'].addfinalizer(ev.set)
    return nd.invoke(ops['gate'], (x,), {'gate': ev, 'seen': seen})


def open_later(ev, delay=0.05):
    threading.Timer(delay, ev.set).start()


def _poll(cond, timeout=0.3):
    """True as soon as ``cond()`` is; False after ``timeout`` seconds.

    ``assert not _poll(...)`` watches for something that must not happen;
    a correct engine passes it however slow the machine.
    """
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.002)
    return cond()


# --- asynchrony, ordering, sync points ------------------------------------------------
def test_ops_return_at_once_and_wait_to_read(ops, threaded, ctx):
    x = nd.ones((3, 4), ctx=ctx)
    ev = threading.Event()
    s = engine.stream_for(ctx)
    y = gate(ops, x, ev)                       # returns while its kernel is blocked
    z = (y * 2 + 1).sum()                      # queued behind it
    assert (y.shape, y.context, z.context) == ((3, 4), ctx, ctx)
    assert s.pushed - s.done >= 3              # nothing of it has run yet
    assert y._stream is s and z._seq > y._seq
    ev.set()
    y.wait_to_read()
    assert s.done >= y._seq
    assert z.asscalar() == 36.0
    nd.waitall()
    assert s.pushed == s.done


@pytest.mark.parametrize('read', ['asnumpy', 'asscalar', 'print', 'float'])
def test_reads_wait_implicitly(ops, threaded, read, capsys):
    ev = threading.Event()
    y = (gate(ops, nd.ones((1,)), ev) + 41).sum()
    open_later(ev)
    if read == 'asnumpy':
        assert y.asnumpy() == 42
    elif read == 'asscalar':
        assert y.asscalar() == 42
    elif read == 'float':
        assert float(y) == 42
    else:
        print(y)
        assert '42.' in capsys.readouterr().out


def test_waitall_waits_for_every_device(ops, threaded):
    evs = [threading.Event(), threading.Event()]
    ys = [gate(ops, nd.ones((2,), ctx=mx.cpu(i)), ev) + i for i, ev in enumerate(evs)]
    streams = [engine.stream_for(mx.cpu(i)) for i in range(2)]
    assert all(s.pushed > s.done for s in streams)
    for ev in evs:
        open_later(ev)
    nd.waitall()
    assert all(s.pushed == s.done for s in streams)
    assert [y.asnumpy().tolist() for y in ys] == [[1, 1], [2, 2]]


def test_chain_of_inplace_updates(engine_kind, ctx):
    x = nd.zeros((5,), ctx=ctx)
    ref = np.zeros(5, np.float32)
    for i in range(300):
        x += 1
        x *= 1.5
        x[i % 5] = x[i % 5] - 2
        x[:] = x / 2
        ref += 1
        ref *= 1.5
        ref[i % 5] -= 2
        ref /= 2
    np.testing.assert_allclose(x.asnumpy(), ref, rtol=1e-6)


def test_inplace_after_pending_reads(ops, threaded, ctx):
    """Readers pushed before a write see the old value (same device)."""
    x = nd.ones((4,), ctx=ctx)
    ev = threading.Event()
    g = gate(ops, x, ev)                       # blocks; reads x
    y = x * 3                                  # queued: reads x
    x[:] = 10                                  # queued after both
    ev.set()
    assert g.asnumpy().tolist() == [1] * 4
    assert y.asnumpy().tolist() == [3] * 4
    assert x.asnumpy().tolist() == [10] * 4


def test_views_see_a_later_write(ops, threaded, ctx):
    """A slice or reshape shares memory: reading it waits for pending writes."""
    x = nd.zeros((2, 3), ctx=ctx)
    v, r = x[1:], x.reshape((3, 2))
    v.wait_to_read(), r.wait_to_read()
    ev = threading.Event()
    gate(ops, x, ev)                           # the device is busy ...
    x[:] = 5                                   # ... so this write is pending
    open_later(ev)
    assert v.asnumpy().tolist() == [[5, 5, 5]]
    assert r.asnumpy().tolist() == [[5, 5]] * 3


def test_two_cpu_devices_have_their_own_streams(threaded):
    s0, s1 = engine.stream_for(mx.cpu(0)), engine.stream_for(mx.cpu(1))
    assert s0 is not s1 and s0._thread is not s1._thread
    assert s0._thread.daemon and s1._thread.daemon
    assert s0 is engine.stream_for(mx.Context('cpu', 0))   # equal contexts, one stream


def test_two_cpu_devices_run_at_the_same_time(ops, threaded):
    """Each op waits at a barrier for the other: serial streams would deadlock."""
    barrier = threading.Barrier(2, timeout=30)
    ys = [nd.invoke(ops['probe'], (nd.ones((2,), ctx=mx.cpu(i)),), {'fn': barrier.wait})
          for i in range(2)]
    for y in ys:
        y.wait_to_read()                       # raises if the barrier broke
    assert not barrier.broken


def test_trace_shows_overlap_and_issue_order(threaded):
    ctxs = [mx.cpu(0), mx.cpu(1)]
    a = [nd.random.uniform(shape=(600, 600), ctx=c) for c in ctxs]
    with engine.Trace() as tr:
        for _ in range(4):
            for i in range(2):                 # pushed interleaved
                a[i] = nd.dot(a[i], a[i]) / 600
    assert tr.overlap(*ctxs) > 0
    streams = tr.by_stream()
    assert sorted(streams) == ctxs
    for c in ctxs:
        spans = streams[c]
        assert [n for _, n, *_ in spans] == ['dot', '_div_scalar'] * 4
        seqs = [s for s, *_ in spans]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        for (_, _, _, end), (_, _, start, _) in zip(spans, spans[1:]):
            assert end <= start                # one op at a time per stream
    assert 0 < tr.busy(ctxs[0]) and tr.overlap(*ctxs) <= min(map(tr.busy, ctxs))


def test_trace_overlap_arithmetic():
    tr = engine.Trace()
    c0, c1 = mx.cpu(0), mx.cpu(1)
    tr.t0 = 0.0
    tr.events = [(c0, 'a', 0.0, 1.0, 1), (c0, 'b', 1.0, 3.0, 2), (c0, 'c', 5.0, 6.0, 3),
                 (c1, 'x', 0.5, 2.0, 1), (c1, 'y', 2.5, 5.5, 2)]
    # c0 busy [0, 3] + [5, 6]; c1 busy [0.5, 2] + [2.5, 5.5]
    assert tr.overlap(c0, c1) == pytest.approx(1.5 + 0.5 + 0.5)
    assert tr.overlap(c1, c0) == pytest.approx(2.5)
    assert tr.busy(c0) == pytest.approx(4.0)
    assert tr.overlap(c0, mx.cpu(7)) == 0


def test_trace_chrome_json(threaded, tmp_path):
    with engine.Trace() as tr:
        x = nd.ones((8, 8), ctx=mx.cpu(0))
        y = nd.exp(x).copyto(mx.cpu(1)) + 1
    fname = tmp_path / 'trace.json'
    doc = tr.to_chrome(str(fname))
    assert json.loads(fname.read_text()) == json.loads(json.dumps(doc))
    ev = doc['traceEvents']
    threads = {e['tid']: e['args']['name'] for e in ev
               if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert sorted(threads.values()) == ['cpu(0)', 'cpu(1)']
    spans = [e for e in ev if e['ph'] == 'X']
    for e in spans:
        assert {'name', 'ph', 'ts', 'dur', 'pid', 'tid'} <= set(e)
        assert e['dur'] >= 0 and e['ts'] >= 0 and e['tid'] in threads
    named = {(threads[e['tid']], e['name']) for e in spans}
    assert {('cpu(0)', 'ones'), ('cpu(0)', 'exp'), ('cpu(1)', 'copyto'),
            ('cpu(1)', '_plus_scalar')} <= named
    assert y.asnumpy()[0, 0] == pytest.approx(np.e + 1)


def test_trace_plot(threaded):
    matplotlib = pytest.importorskip('matplotlib')
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    with engine.Trace() as tr:
        for i in range(2):
            nd.dot(nd.ones((50, 50), ctx=mx.cpu(i)), nd.ones((50, 50), ctx=mx.cpu(i)))
    ax = tr.plot()
    assert [t.get_text() for t in ax.get_yticklabels()] == ['cpu(0)', 'cpu(1)']
    assert ax.get_xlabel() == 'time (ms)'
    plt.close(ax.figure)


def test_trace_plot_legend_lists_the_longest_operators_first():
    matplotlib = pytest.importorskip('matplotlib')
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    tr = engine.Trace()
    c0, c1 = mx.cpu(0), mx.cpu(1)
    tr.events = [(c0, 'a_short', 0.0, 0.001, 1), (c0, 'z_long', 0.001, 0.011, 2),
                 (c1, 'm_mid', 0.0, 0.004, 1), (c1, 'a_short', 0.004, 0.006, 2),
                 (c1, 'z_long', 0.006, 0.008, 3)]
    tr.t0 = 0.0
    ax = tr.plot(legend=2)
    # z_long: 12 ms in all, m_mid 4 ms, a_short 3 ms
    assert [t.get_text() for t in ax.get_legend().texts] == ['z_long', 'm_mid']
    plt.close(ax.figure)


def test_naive_ops_are_traced():
    with engine.engine_mode('naive'), engine.Trace() as tr:
        nd.exp(nd.ones((2,))).wait_to_read()
    assert [n for _, n, *_ in tr.spans()] == ['ones', 'exp']


# --- dependencies across devices ------------------------------------------------------
@pytest.mark.parametrize('src_ctx,dst_ctx', DEVICE_PAIRS)
def test_copy_waits_for_its_producer(ops, threaded, src_ctx, dst_ctx):
    ev = threading.Event()
    y = gate(ops, nd.ones((3,), ctx=src_ctx), ev) * 7      # slow producer
    z = y.copyto(dst_ctx) + 1                               # consumer elsewhere
    assert engine.stream_for(dst_ctx).pushed > engine.stream_for(dst_ctx).done
    open_later(ev)
    assert z.context == dst_ctx and z.asnumpy().tolist() == [8, 8, 8]


def _busy_dst(ops, ctx):
    """Block ``ctx``'s stream; returns the event that unblocks it."""
    ev = threading.Event()
    gate(ops, nd.ones((1,), ctx=ctx), ev)
    return ev


def test_write_cannot_overtake_a_copy(ops, threaded):
    """Slow producer on cpu(0), copy to cpu(1), then write the source."""
    src_ctx, dst_ctx = mx.cpu(0), mx.cpu(1)
    s0 = engine.stream_for(src_ctx)
    ev_src = threading.Event()
    y = gate(ops, nd.full((3,), 2.0, ctx=src_ctx), ev_src)   # slow producer
    ev_dst = _busy_dst(ops, dst_ctx)            # and the copy itself is delayed
    z = y.copyto(dst_ctx)
    y[:] = 100                                  # must wait for the copy's read
    y += 1
    write_seq = y._seq
    ev_src.set()
    # The source device is free, but the write must still wait for cpu(1).
    assert not _poll(lambda: s0.done >= write_seq)
    ev_dst.set()
    assert z.asnumpy().tolist() == [2, 2, 2]
    assert y.asnumpy().tolist() == [101, 101, 101]


@pytest.mark.parametrize('src_ctx,dst_ctx', DEVICE_PAIRS)
def test_write_after_copies_to_several_devices(ops, threaded, src_ctx, dst_ctx):
    x = nd.arange(4, ctx=src_ctx) + 0
    x.wait_to_read()
    s = engine.stream_for(src_ctx)
    others = [dst_ctx, mx.cpu(2)]
    evs = [_busy_dst(ops, c) for c in others]
    copies = [x.copyto(c) for c in others]
    x[:] = -1                                  # must wait for *both* copies
    write_seq = x._seq
    evs[1].set()                               # the last copy is free to run
    assert not _poll(lambda: s.done >= write_seq)
    evs[0].set()
    for c in copies:
        assert c.asnumpy().tolist() == [0, 1, 2, 3]
    assert x.asnumpy().tolist() == [-1] * 4


def test_copy_of_a_view_sees_an_earlier_write(ops, threaded):
    x = nd.zeros((2, 2), ctx=mx.cpu(0))
    v = x.reshape((4,))
    v.wait_to_read()
    ev = threading.Event()
    gate(ops, x, ev)
    x[:] = 3                                    # pending: cpu(0) is blocked
    z = v.copyto(mx.cpu(1))
    open_later(ev)
    assert z.asnumpy().tolist() == [3] * 4


def test_copy_roundtrip_chain(engine_kind):
    x = nd.arange(6).reshape((2, 3))
    for i in range(20):
        x = x.copyto(mx.cpu(i % 3)) * 2 + i
    ref = np.arange(6, dtype=np.float32).reshape(2, 3)
    for i in range(20):
        ref = ref * 2 + i
    np.testing.assert_allclose(x.asnumpy(), ref)


# --- errors ---------------------------------------------------------------------------
def test_error_surfaces_at_the_next_sync_point(ops, threaded, ctx):
    x = nd.ones((2,), ctx=ctx)
    y = nd.invoke(ops['boom'], (x,))            # returns: the kernel runs later
    with pytest.raises(mx.EngineError) as info:
        y.wait_to_read()
    err = info.value
    msg = str(err)
    assert ops['boom'].name in msg and 'boom: this kernel always fails' in msg
    assert 'Original traceback' in msg and 'in forward' in msg   # the kernel's frame
    assert isinstance(err.__cause__, ValueError)
    assert err.op == ops['boom'].name and err.ctx == ctx
    assert isinstance(err, mx.MXNetError) and isinstance(err, mx.base.MXNetError)
    assert isinstance(err, ValueError)          # the kernel's type, mixed in
    # Reported once, as in MXNet: the array now holds placeholder values.
    assert np.isnan(y.asnumpy()).all()
    nd.waitall()                                # already reported: not again
    assert (x + 1).asnumpy().tolist() == [2, 2]  # the engine keeps working


@pytest.mark.parametrize('first', ['z', 'w', 'x'])
def test_dependents_carry_the_original_error(ops, threaded, first):
    x = nd.ones((2,))
    y = nd.invoke(ops['boom'], (x,))
    arrays = {'z': ((y + 1) * 2).sum()}
    arrays['w'] = arrays['z'].copyto(mx.cpu(1)) + 1     # and across devices
    x += y                                      # an in-place write poisons x
    arrays['x'] = x
    # Let every op run before the first read.  (An op that only starts after
    # a sync point has reported its input's error runs on the placeholder
    # values, as in MXNet, which clears the error when it rethrows it; so
    # without this wait `x` could be NaN at the end, depending on timing.)
    for s in list(stream._STREAMS.values()):
        s.wait(s.pushed)
    with pytest.raises(mx.EngineError) as info:  # whichever is read first
        arrays[first].asnumpy()
    assert info.value.op == ops['boom'].name
    assert 'boom: this kernel always fails' in str(info.value)
    for arr in arrays.values():                 # one error, reported once
        arr.asnumpy()
    nd.waitall()
    assert x.asnumpy().tolist() == [1, 1]       # the failed write left x alone
    assert (nd.ones((2,)) * 3).asnumpy().tolist() == [3, 3]


def test_waitall_raises_unread_errors_once(ops, threaded):
    y = nd.invoke(ops['boom'], (nd.ones((2,)),))
    y2 = nd.invoke(ops['boom'], (nd.ones((2,), ctx=mx.cpu(1)),))
    with pytest.raises(mx.EngineError, match='boom'):
        nd.waitall()
    nd.waitall()                                # reported: the engine goes on
    y2.wait_to_read()                           # waitall reported it too
    assert np.isnan(y.asnumpy()).all() and np.isnan(y2.asnumpy()).all()


def _failed(ops, shape=(2, 2), dtype='float32'):
    return nd.invoke(ops['boom'], (nd.ones(shape, dtype=dtype),))


@pytest.mark.parametrize('sync', ['wait_to_read', 'waitall'])
def test_each_failure_is_reported(ops, threaded, sync):
    # Two failures one after the other: each raises at its own sync point.
    for _ in range(2):
        a = _failed(ops).copyto(mx.cpu(0))
        with pytest.raises(mx.MXNetError):
            a.wait_to_read() if sync == 'wait_to_read' else nd.waitall()
    nd.waitall()


@pytest.mark.parametrize('sync', ['asnumpy', 'waitall'])
def test_views_of_a_reported_failure_read_quietly(ops, threaded, sync):
    # a and b are rows of one failed array: one error, raised once.
    a, b = _failed(ops).copyto(mx.cpu(0))
    with pytest.raises(mx.MXNetError):
        a.asnumpy() if sync == 'asnumpy' else nd.waitall()
    assert np.isnan(b.asnumpy()).all()
    nd.waitall()


@pytest.mark.parametrize('sync', ['asnumpy', 'waitall'])
def test_an_array_rebound_to_a_dependent_fails(ops, threaded, sync):
    a, b = _failed(ops)
    a = nd.dot(a.reshape((1, 2)), a.reshape((2, 1)))
    with pytest.raises(mx.MXNetError, match='boom'):
        a.asnumpy() if sync == 'asnumpy' else nd.waitall()
    nd.waitall()


def test_ops_after_the_report_compute_on_placeholders(ops, threaded):
    y = _failed(ops, dtype='int32')
    with pytest.raises(mx.MXNetError):
        y.wait_to_read()
    assert (y + 1).asnumpy().tolist() == [[1, 1], [1, 1]]   # int: zeros
    f = _failed(ops)
    with pytest.raises(mx.MXNetError):
        f.wait_to_read()
    assert np.isnan((f * 0).asnumpy()).all()


def test_a_failed_op_poisons_the_state_it_writes(threaded):
    # MXNet's resource vars: every sampler reads and writes its device's
    # random generator, so one that fails leaves the generator failed, and
    # the samplers after it fail with the same error until a sync point has
    # reported it (upstream test_exc_imperative relies on this).  Here the
    # state is an array each op rewrites in place; its data is not replaced.
    from d2lmini.ndarray.ndarray import _make, _run
    ctx = mx.cpu(0)
    state = nd.zeros((1,))
    state.wait_to_read()
    kept = state._data

    def sampler(bad):
        def fn(st):
            if bad:
                raise ValueError('scale must be >= 0')
            return np.ones(2, 'float32'), st
        out = _make((2,), np.dtype('float32'), ctx)
        _run('sampler', fn, (state,), [out, state], ctx)
        return out

    first = sampler(bad=True)
    second = sampler(bad=False)                  # inherits through the state
    with pytest.raises(mx.MXNetError, match='scale'):
        second.asnumpy()
    assert np.isnan(first.asnumpy()).all()       # the same error: reported once
    assert state._data is kept
    nd.waitall()                                 # nothing left to report
    assert sampler(bad=False).asnumpy().tolist() == [1, 1]

@pytest.mark.parametrize('sync', ['wait_to_read', 'waitall', 'none'])
def test_errors_through_a_gluon_forward(ops, threaded, sync):
    """The in-scope part of upstream test_exc_gluon: a failed input surfaces
    at the sync point after the model's forward, never before."""
    from d2lmini.gluon import nn
    model = nn.Sequential()
    model.add(nn.Dense(16, activation='tanh', in_units=10, flatten=False))
    model.add(nn.Dropout(1))
    model.add(nn.Dense(8, activation='tanh', in_units=32), nn.Dense(4, in_units=8))
    model.initialize()
    x = nd.invoke(ops['boom'], (nd.ones((4, 2, 10)),))
    z = model(x)                                 # returns: nothing synced yet
    assert z.shape == (4, 4)
    if sync == 'none':
        with pytest.raises(mx.MXNetError, match='boom'):
            nd.waitall()                         # whoever syncs next
        return
    with pytest.raises(mx.MXNetError, match='boom'):
        z.wait_to_read() if sync == 'wait_to_read' else nd.waitall()
    nd.waitall()

def test_kernel_errors_keep_their_builtin_type(ops, threaded):
    class KeyBoom(_TestOp):
        def forward(self, a):
            raise KeyError('missing')
    op = _register(KeyBoom)
    try:
        y = nd.invoke(op, (nd.ones((2,)),))
        with pytest.raises(KeyError) as info:
            y.wait_to_read()
        assert isinstance(info.value, mx.MXNetError)
        assert isinstance(info.value, engine.EngineError)
    finally:
        del OPS[op.name]


def test_naive_mode_raises_at_the_call_site(ops):
    with engine.engine_mode('naive'):
        x = nd.ones((2,))
        with pytest.raises(mx.EngineError) as info:
            nd.invoke(ops['boom'], (x,))
        assert isinstance(info.value.__cause__, ValueError)
        assert ops['boom'].name in str(info.value)
        assert (x + 1).asnumpy().tolist() == [2, 2]


def test_switching_engines_reports_pending_errors(ops):
    with engine.engine_mode('threaded'):
        nd.invoke(ops['boom'], (nd.ones((2,)),))
        with pytest.raises(mx.EngineError):
            engine.set_engine('naive')          # a sync point: raises, but switches
        assert engine.engine_type() == 'naive'
        engine.set_engine('threaded')


# --- naive mode -----------------------------------------------------------------------
def test_engine_mode_api():
    old = engine.engine_type()
    with engine.engine_mode('naive'):
        assert engine.engine_type() == 'naive' and engine.is_naive()
        with engine.engine_mode('threaded'):
            assert engine.engine_type() == 'threaded'
        assert engine.engine_type() == 'naive'
    assert engine.engine_type() == old
    assert engine.set_engine(old) == old
    with pytest.raises(ValueError):
        engine.set_engine('turbo')


@pytest.mark.parametrize('value,expected', [('naive', 'naive'), ('NaiveEngine', 'naive'),
                                            ('threaded', 'threaded'), ('', 'threaded')])
def test_engine_env_var(value, expected):
    env = dict(os.environ, D2LMINI_ENGINE=value, PYTHONPATH=PYTHONPATH)
    out = subprocess.run([sys.executable, '-c', 'import d2lmini as mx; '
                          'print(mx.engine.engine_type())'],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_engine_env_var_rejects_typos():
    env = dict(os.environ, D2LMINI_ENGINE='naiv', PYTHONPATH=PYTHONPATH)
    out = subprocess.run([sys.executable, '-c', 'import d2lmini'], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and 'D2LMINI_ENGINE' in out.stderr


def test_naive_runs_on_the_calling_thread(ops, engine_kind):
    ev = threading.Event()
    ev.set()
    seen = []
    gate(ops, nd.ones((1,)), ev, seen).wait_to_read()
    on_caller = seen == [threading.get_ident()]
    assert on_caller == (engine_kind == 'naive')


def _workload():
    mx.random.seed(3)
    x = nd.random.normal(shape=(4, 5))
    w = nd.random.uniform(shape=(5, 3), ctx=mx.cpu(1))
    y = nd.dot(x.copyto(mx.cpu(1)), w)
    y[:, 1] = nd.exp(y[:, 1])
    y += 1
    z = y.copyto(x.context).sum(axis=1) * x[:, :1].reshape((4,))
    return [x, w, y, z]


def test_naive_and_threaded_give_the_same_results():
    results = {}
    for kind in ['threaded', 'naive']:
        with engine.engine_mode(kind):
            results[kind] = [a.asnumpy() for a in _workload()]
    for a, b in zip(results['threaded'], results['naive']):
        np.testing.assert_array_equal(a, b)


# --- bounded in-flight work --------------------------------------------------------------
def test_inflight_bound_blocks_the_front_end(ops, threaded):
    limit = 8
    old = engine.set_max_inflight(limit)
    try:
        ctx = mx.cpu(3)
        s = engine.stream_for(ctx)
        x = nd.ones((1,), ctx=ctx)
        x.wait_to_read()                      # from here only the gate runs
        ev = threading.Event()
        gate(ops, x, ev)
        pushed = []

        def front():                          # never syncs
            for i in range(50):
                pushed.append(x + i)
        t = threading.Thread(target=front, daemon=True)
        t.start()
        try:
            assert _poll(lambda: s.pushed - s.done >= limit, timeout=60)
            assert not _poll(lambda: not t.is_alive())  # blocked, not queueing
            assert len(pushed) < limit and s.pushed - s.done == limit
        finally:
            ev.set()
        t.join(timeout=60)
        assert not t.is_alive() and len(pushed) == 50
        assert pushed[-1].asscalar() == 50
    finally:
        engine.set_max_inflight(old)


def test_inflight_bound_holds_at_every_op(ops, threaded):
    limit = 16
    old = engine.set_max_inflight(limit)
    try:
        s = engine.stream_for(mx.cpu(0))
        seen = []
        probe = {'fn': lambda: seen.append(s.pushed - s.done)}
        x = nd.ones((3,))
        for i in range(400):
            x = nd.invoke(ops['probe'], (x,), probe) + 1
            assert s.pushed - s.done <= limit      # as seen by the front end
        assert x.asnumpy().tolist() == [401] * 3
        assert len(seen) == 400 and max(seen) <= limit   # as seen by the worker
    finally:
        engine.set_max_inflight(old)


def test_default_bound_lets_the_front_end_run_ahead_of_big_ops(ops, threaded):
    # A worker busy with one long op (a gate standing for a big kernel) is
    # what the adaptive bound measures as slow: the front end may then queue
    # far past the short queue of tiny ops, as on MXNet.
    old = engine.set_max_inflight(None)
    try:
        ctx = mx.cpu(5)
        s = engine.stream_for(ctx)
        x = nd.ones((1,), ctx=ctx)
        x.wait_to_read()
        ev = threading.Event()
        gate(ops, x, ev)
        n = 3 * stream._SHORT_QUEUE
        ys = [x + i for i in range(n)]           # returns: nothing blocks
        assert s.pushed - s.done == n + 1 and s.limit == stream._DEFAULT_INFLIGHT
        ev.set()
        assert ys[-1].asscalar() == n
    finally:
        engine.set_max_inflight(old)


def test_default_bound_keeps_tiny_ops_in_a_short_queue(ops, threaded, monkeypatch):
    # Every op measured as tiny (under a second each, here): the queue stays
    # at the short bound, which runs tiny ops fastest.
    monkeypatch.setattr(stream, '_BIG_OP_S', 1.0)
    old = engine.set_max_inflight(None)
    try:
        s = engine.stream_for(mx.cpu(0))
        seen = []
        probe = {'fn': lambda: seen.append(s.pushed - s.done)}
        x = nd.ones((3,))
        for _ in range(4 * stream._SHORT_QUEUE):
            x = nd.invoke(ops['probe'], (x,), probe)
            assert s.pushed - s.done <= stream._SHORT_QUEUE
        x.wait_to_read()
        assert max(seen) <= stream._SHORT_QUEUE
    finally:
        engine.set_max_inflight(old)


def test_set_max_inflight_returns_and_restores():
    old = engine.set_max_inflight(32)
    try:
        s = engine.stream_for(mx.cpu(0))
        assert s.limit == 32
        assert engine.set_max_inflight(None) == 32
        assert s.limit == stream._SHORT_QUEUE       # adaptive again
    finally:
        engine.set_max_inflight(old)


@pytest.mark.parametrize('value,expected', [('64', 64), ('', None)])
def test_max_inflight_env_var(value, expected):
    env = dict(os.environ, D2LMINI_MAX_INFLIGHT=value, PYTHONPATH=PYTHONPATH)
    out = subprocess.run([sys.executable, '-c', 'import d2lmini as mx; '
                          'print(mx.engine._MAX_INFLIGHT[0])'],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(expected)


@pytest.mark.parametrize('value', ['0', 'many', '-5'])
def test_max_inflight_env_var_rejects_junk(value):
    env = dict(os.environ, D2LMINI_MAX_INFLIGHT=value, PYTHONPATH=PYTHONPATH)
    out = subprocess.run([sys.executable, '-c', 'import d2lmini'], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and 'D2LMINI_MAX_INFLIGHT' in out.stderr


# --- bulk: MXNet's op batching, recorded only ------------------------------------------
def test_bulk_keeps_results_order_and_sync_points(engine_kind):
    assert mx.engine.bulk_size() == 15                  # MXNet's default
    with mx.engine.bulk(10):
        assert mx.engine.bulk_size() == 10
        x = nd.ones((10,))
        x *= 2
        x += 1
        x.wait_to_read()
        x += 1
        assert (x.asnumpy() == 4).all()
        for _ in range(100):
            x += 1
    assert mx.engine.bulk_size() == 15
    assert (x.asnumpy() == 104).all()
    assert mx.engine.set_bulk_size(3) == 15
    assert mx.engine.set_bulk_size(15) == 3


def test_bulk_restores_the_size_after_an_error():
    with pytest.raises(KeyError):
        with mx.engine.bulk(4):
            raise KeyError('inside')
    assert mx.engine.bulk_size() == 15



# --- process life ------------------------------------------------------------------------
def _run_script(code, timeout=120):
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    env.pop('D2LMINI_ENGINE', None)
    return subprocess.run([sys.executable, '-c', textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_exit_with_pending_work():
    out = _run_script("""
        import d2lmini as mx
        from d2lmini import nd
        a = [nd.random.uniform(shape=(300, 300), ctx=mx.cpu(i)) for i in range(2)]
        for _ in range(30):
            for i in range(2):
                a[i] = nd.dot(a[i], a[i]) / 300
        s = mx.engine.stream_for(mx.cpu(0))
        print('pending', s.pushed - s.done > 0)
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith('pending')
    assert out.stderr == ''


# Big enough that the elementwise kernels hand work to their thread pool,
# which refuses it once the interpreter's shutdown has begun (issue 25).
_BIG_PENDING = """
    import d2lmini as mx
    from d2lmini import nd
    a = nd.ones((2000, 2000), ctx=mx.cpu(0))
    for _ in range(20):
        a = nd.dot(a, a) / 2000
    """


def test_exit_drains_work_that_uses_the_kernel_pool():
    out = _run_script(_BIG_PENDING + """
    import atexit
    s = mx.engine.stream_for(mx.cpu(0))
    print('pending', s.pushed - s.done > 0)
    atexit.register(lambda: print('done', s.done == s.pushed))
    """)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ''
    assert out.stdout.splitlines()[-1] == 'done True'    # drained before atexit


def test_exit_hook_pushing_work_is_not_an_error():
    # An atexit hook runs after the drain and after the kernel pool has shut
    # down; the big op it pushes and reads still runs (its ranges on the
    # worker thread), and nothing reports the pool's refusal as a failure.
    out = _run_script("""
    import atexit
    import d2lmini as mx
    from d2lmini import nd
    def late():
        b = nd.ones((2000, 2000), ctx=mx.cpu(0)) / 2
        print('late', float(b[0, 0].asscalar()))
    atexit.register(late)
    """)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ''
    assert out.stdout.strip() == 'late 0.5'


def test_ctrl_c_drops_pending_work_at_once():
    # 20 products of 2000 x 2000 take seconds; after Ctrl-C (an uncaught
    # KeyboardInterrupt) the process ends without computing them, and
    # prints only the interpreter's own traceback.
    t0 = time.monotonic()
    out = _run_script(_BIG_PENDING.replace('range(20)', 'range(200)') + """
    raise KeyboardInterrupt
    """)
    took = time.monotonic() - t0
    assert out.returncode != 0
    assert 'KeyboardInterrupt' in out.stderr
    assert 'd2lmini' not in out.stderr.replace('import d2lmini', '')
    assert took < 30, took            # 200 products would take a minute or more


@pytest.mark.skipif(not hasattr(os, 'kill') or sys.platform == 'win32',
                    reason='POSIX signals')
def test_sigterm_ends_a_process_with_pending_work_at_once():
    import signal
    code = textwrap.dedent(_BIG_PENDING.replace('range(20)', 'range(200)') + """
    print('pushed', flush=True)
    import time
    time.sleep(60)
    """)
    env = dict(os.environ, PYTHONPATH=PYTHONPATH)
    env.pop('D2LMINI_ENGINE', None)
    p = subprocess.Popen([sys.executable, '-c', code], env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        # the 200 pushes may wait on the in-flight bound; give them time
        assert p.stdout.readline().strip() == 'pushed'
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGTERM
    assert err == ''


def test_exit_with_an_unread_error():
    out = _run_script("""
        import d2lmini as mx
        from d2lmini import nd
        from d2lmini.ndarray.registry import OPS, Op
        class Bad(Op):
            name = 'bad'
            def infer(self, shapes, dtypes):
                return shapes[0], dtypes[0]
            def forward(self, a):
                raise RuntimeError('bad kernel')
        nd.invoke(Bad(), (nd.ones((2,)),))
        """)
    assert out.returncode == 0, out.stderr
    assert 'bad kernel' in out.stderr


def test_fork_child_gets_working_streams():
    if not hasattr(os, 'fork'):
        pytest.skip('no fork on this platform')
    out = _run_script("""
        import os
        import d2lmini as mx
        from d2lmini import nd
        x = nd.ones((3,), ctx=mx.cpu(0)) + 1   # CPU streams: CUDA dies at a fork
        x.wait_to_read()
        y = x * 2                        # maybe pending at the fork
        g = nd.ones((2,), ctx=mx.gpu(0)) * 2 if mx.context.num_gpus() else None
        pid = os.fork()
        if pid == 0:
            ok = (y + x).asnumpy().tolist() == [6, 6, 6]
            ok = ok and (x.copyto(mx.cpu(1)) + 1).asnumpy().tolist() == [3, 3, 3]
            if g is not None:            # the parent's GPU arrays: a clear error
                try:
                    g + 1
                    ok = False
                except mx.MXNetError as e:
                    ok = ok and 'fork' in str(e)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print('child', os.WEXITSTATUS(status))
        """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == 'child 0'


# --- CPU threads policy ---------------------------------------------------------------------
def _fresh_load(monkeypatch):
    # In place: the streams' workers hold the same dict (engine/stream.py).
    for key, value in {'next': 0.0, 'others': [], 'free': None}.items():
        monkeypatch.setitem(cores._LOAD, key, value)


@pytest.fixture
def load(monkeypatch):
    """The machine's load as the engine sees it, set by the test: a list
    whose last item ``_others_running`` returns (threads of other
    programs), and a look at it taken at once."""
    others = [0]
    monkeypatch.setattr(cores, '_others_running', lambda: others[-1])
    _fresh_load(monkeypatch)

    def look(n, times=cores._LOAD_SAMPLES):
        others.append(n)
        for _ in range(times):
            cores._LOAD['next'] = 0.0
            cores._watch_load(0.0)
    yield look
    monkeypatch.undo()                       # the real load again, then
    cores._share_cores()                    # the BLAS threads it allows


def test_blas_threads_policy(threaded, load):
    if engine.blas_threads() is None:
        pytest.skip('NumPy does not use OpenBLAS here')
    load(0)                                  # a quiet machine
    for ctx in (mx.cpu(0), mx.cpu(1)):       # two devices at work
        (nd.ones((2, 2), ctx=ctx) + 1).wait_to_read()
    old = engine.set_blas_threads(1)
    try:
        assert engine.blas_threads() == 1
        engine.set_blas_threads(None)           # cores // CPU devices at work
        ncpu = cores._cpu_devices_at_work()
        assert ncpu >= 2
        expected = min(cores._BLAS['initial'], max(1, cores._cores() // ncpu))
        assert engine.blas_threads() == expected
    finally:
        engine.set_blas_threads(old)


def test_a_device_left_alone_takes_no_cores(threaded, load, monkeypatch):
    monkeypatch.setattr(cores, '_AT_WORK_S', 0.2)
    monkeypatch.setattr(cores, '_cores', lambda: 4)
    old = engine.set_blas_threads(None)
    try:
        load(0)
        for ctx in (mx.cpu(0), mx.cpu(1)):
            (nd.ones((2, 2), ctx=ctx) + 1).wait_to_read()
        assert cores._cpu_devices_at_work() >= 2
        assert engine.cpu_threads() == 4 // cores._cpu_devices_at_work()
        time.sleep(0.3)                      # cpu(1) is left alone from now
        x = nd.ones((2, 2), ctx=mx.cpu(0))   # (the default may be a GPU)
        for _ in range(3):
            (x + 1).wait_to_read()
            time.sleep(0.1)
        assert cores._cpu_devices_at_work() == 1
        assert engine.cpu_threads() == 4     # cpu(0) trains alone: every core
    finally:
        engine.set_blas_threads(old)


def test_threads_leave_the_cores_other_programs_use(threaded, load, monkeypatch):
    monkeypatch.setattr(cores, '_cores', lambda: 4)
    monkeypatch.setattr(stream, '_STREAMS', {k: s for k, s in stream._STREAMS.items()
                                             if s.ctx == mx.cpu(0)})
    old = engine.set_blas_threads(None)
    try:
        load(0)
        assert engine.free_cores() == 4 and engine.cpu_threads() == 4
        load(3)                              # three busy threads elsewhere
        assert engine.free_cores() == 1 and engine.cpu_threads() == 1
        if engine.blas_threads() is not None:
            assert engine.blas_threads() == 1
        load(9)                              # more than the cores: still one
        assert engine.cpu_threads() == 1
        load(2, times=1)                     # one look does not decide ...
        assert engine.cpu_threads() == 1
        load(2, times=1)                     # ... the median of three does
        assert engine.free_cores() == 2 and engine.cpu_threads() == 2
        engine.set_blas_threads(3)           # a fixed number is kept
        load(4)
        assert engine.cpu_threads() == 3
    finally:
        engine.set_blas_threads(old)


def test_a_cpu_worker_looks_at_the_load_between_operations(threaded, monkeypatch):
    looks = []
    monkeypatch.setattr(cores, '_others_running', lambda: looks.append(1) or 0)
    _fresh_load(monkeypatch)
    x = nd.ones((4, 4), ctx=mx.cpu(0))      # a CPU worker, whatever the default
    for _ in range(5):
        x = x + 1
    nd.waitall()
    assert len(looks) == 1                   # once, then not before _LOAD_EVERY
    assert cores._LOAD['next'] > 0 and engine.free_cores() == cores._cores()


def test_the_load_is_read_from_proc(threaded):
    others = cores._others_running()
    if not os.path.exists('/proc/loadavg'):
        assert others is None
    else:
        assert isinstance(others, int) and others >= 0


def test_worker_keeps_no_array_alive(threaded):
    import gc
    import weakref
    x = nd.ones((3,))
    y = x + 1
    y.wait_to_read()                            # done: the worker let go of it
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None
    # Nor the buffers of an op with several outputs (the loop's variables
    # held the last one until the next op: found by profile_memory).
    parts = nd.split(nd.ones((4, 2)), 2, axis=0)
    nd.waitall()
    refs = [weakref.ref(p._data) for p in parts]
    del parts
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_mode_and_trace_keep_the_blocks_own_error(ops):
    with pytest.raises(KeyError):
        with engine.engine_mode('threaded'):
            nd.invoke(ops['boom'], (nd.ones((1,)),))
            raise KeyError('the real problem')
    with pytest.raises(KeyError):
        with engine.engine_mode('threaded'), engine.Trace():
            nd.invoke(ops['boom'], (nd.ones((1,)),))
            raise KeyError('the real problem')
    assert engine._TRACE[0] is None
    nd.waitall()


@pytest.mark.parametrize('num', [1, 3])
def test_multi_output_ops(engine_kind, num):
    x = nd.arange(6).reshape((2, 3))
    parts = nd.split(x, num_outputs=num, axis=1)
    parts = parts if isinstance(parts, list) else [parts]
    got = np.concatenate([p.asnumpy().reshape(2, -1) for p in parts], axis=1)
    np.testing.assert_array_equal(got, np.arange(6).reshape(2, 3))


# --- the GPU code path, on a stand-in for CuPy -----------------------------------------
class _FakeEvent:
    def __init__(self, log):
        self.log, self.done = log, False

    def record(self, stream):
        self.log.append(('record', str(stream.ctx)))
        self.done = True


class _FakeCudaStream:
    def __init__(self, ctx, log):
        self.ctx, self.log = ctx, log

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        self.log.append(('synchronize', str(self.ctx)))

    def wait_event(self, ev):
        self.log.append(('wait_event', str(self.ctx)))


@pytest.fixture
def fake_gpus(monkeypatch):
    """gpu(0) and gpu(1) backed by NumPy, logging the CUDA calls the engine makes."""
    from d2lmini import backend
    if HAS_GPU:
        pytest.skip('real GPUs here: the real path is tested')
    log = []
    monkeypatch.setattr(backend, 'check_context', lambda ctx: None)
    monkeypatch.setattr(backend, 'xp', lambda ctx: np)
    monkeypatch.setattr(backend, 'device_guard', lambda ctx: backend._NullGuard)
    monkeypatch.setattr(backend, 'new_stream', lambda ctx: _FakeCudaStream(ctx, log))
    monkeypatch.setattr(backend, 'new_event', lambda: _FakeEvent(log))
    monkeypatch.setattr(backend, 'to_context', lambda a, ctx: np.array(a, copy=True))
    monkeypatch.setattr(backend, 'asarray_on',
                        lambda data, ctx, dtype=None: np.asarray(data, dtype=dtype))
    yield log
    nd.waitall()
    for key in [k for k in stream._STREAMS if k[0] == 'gpu']:
        del stream._STREAMS[key]                # later tests see no GPU again


def test_gpu_path_uses_events_between_gpus(fake_gpus, threaded):
    log = fake_gpus
    g0, g1 = mx.gpu(0), mx.gpu(1)
    y = nd.ones((3,), ctx=g0) * 2
    y.wait_to_read()
    assert ('synchronize', 'gpu(0)') in log     # a host read waits for the GPU
    del log[:]
    z = y.copyto(g1)                            # gpu(0) -> gpu(1)
    z.wait_to_read()
    # gpu(1)'s stream waits on an event recorded on gpu(0)'s: no host sync
    # of gpu(0); then an event after the copy guards the source's memory.
    assert log[:2] == [('record', 'gpu(0)'), ('wait_event', 'gpu(1)')]
    assert ('record', 'gpu(1)') in log and ('synchronize', 'gpu(0)') not in log
    assert engine.stream_for(g1)._held          # source kept until the copy is done
    del log[:]
    y[:] = 5                                    # a write after gpu(1)'s read
    y.wait_to_read()
    assert log[:2] == [('record', 'gpu(1)'), ('wait_event', 'gpu(0)')]
    del log[:]
    c = y.copyto(mx.cpu(1))                     # gpu -> host: the worker syncs
    assert c.asnumpy().tolist() == [5, 5, 5]
    assert ('synchronize', 'gpu(0)') in log
    assert z.asnumpy().tolist() == [2, 2, 2]
    nd.waitall()
    assert not engine.stream_for(g1)._held


def test_gpu_path_naive_mode_synchronizes(fake_gpus):
    log = fake_gpus
    with engine.engine_mode('naive'):
        y = nd.exp(nd.zeros((2,), ctx=mx.gpu(0)))
        assert y._stream is engine._NAIVE
        assert log.count(('synchronize', 'gpu(0)')) >= 2   # after each op
        assert y.asnumpy().tolist() == [1, 1]


def test_a_failing_dependency_wait_fails_the_op_not_the_worker(fake_gpus, threaded,
                                                               monkeypatch):
    from d2lmini import backend
    y = nd.ones((2,), ctx=mx.gpu(0)) + 1

    def broken_event():
        raise RuntimeError('cudaErrorLaunchFailure (stand-in)')
    monkeypatch.setattr(backend, 'new_event', broken_event)
    z = y.copyto(mx.gpu(1))
    with pytest.raises(mx.EngineError, match='stand-in'):
        z.wait_to_read()
    assert (nd.ones((2,), ctx=mx.gpu(1)) * 3).asnumpy().tolist() == [3, 3]
