"""mx.profiler: MXNet 1.9.1's API on the engine's trace.

Oracles: MXNet's own dumps() of the same workload
(fixtures/profiler/, written by make_fixtures.py with MXNet 1.9.1), the
engine's Trace of the same code, and counts written into the tests.
Asynchrony is pinned with a *gate*: an op that holds its device's worker
until the test opens it, so no assertion depends on how fast anything runs.
"""
import collections
import json
import os
import re
import subprocess
import sys

import pytest

import d2lmini as mx
from d2lmini import engine, nd, profiler
from d2lmini.profiler.core import MXNET_NAMES

from conftest import HAS_GPU, STANDIN, child_pythonpath

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, 'fixtures', 'profiler')
sys.path.insert(0, FIXTURES)
from profiler_workload import run as workload  # noqa: E402

# MXNet's engine-internal operations, which d2lmini has no counterpart of.
MXNET_ONLY = {'ResourceParallelRandomSetSeed', 'DeleteVariable', 'WaitForVar'}
ENGINES = ['threaded', 'naive']


@pytest.fixture(autouse=True)
def fresh():
    profiler._reset()
    yield
    profiler._reset()


def start(tmp_path, **config):
    profiler.set_config(filename=str(tmp_path / 'profile.json'), **config)
    profiler.set_state('run')


def load(tmp_path):
    """The dumped trace: ``{process name: [(thread name, event)]}``."""
    doc = json.loads((tmp_path / 'profile.json').read_text())
    events = doc['traceEvents']
    procs = {e['pid']: e['args']['name'] for e in events if e['name'] == 'process_name'}
    threads = {(e['pid'], e['tid']): e['args']['name'] for e in events
               if e['name'] == 'thread_name'}
    out = {name: [] for name in procs.values()}
    for e in events:
        if e['ph'] != 'M':
            out[procs[e['pid']]].append((threads[e['pid'], e['tid']], e))
    return out


def op_names(trace, process):
    return [e['name'] for _, e in trace[process] if e['ph'] == 'X']


def stats(**kw):
    return json.loads(profiler.dumps(format='json', **kw))['Time']


# --- which operations are profiled ----------------------------------------------
@pytest.mark.parametrize('kind', ENGINES)
def test_only_ops_pushed_while_running_and_not_paused(kind, tmp_path):
    ctx = mx.current_context()
    x = nd.ones((4, 4), ctx=ctx)
    with engine.engine_mode(kind):
        nd.exp(x)                                   # before: left out
        start(tmp_path)
        for _ in range(3):
            nd.sqrt(x)
        profiler.pause()
        nd.log(x)                                   # paused: left out
        profiler.resume()
        nd.tanh(x)
        nd.tanh(x)
        profiler.set_state('stop')
        nd.sin(x)                                   # after: left out
        profiler.dump()
    trace = load(tmp_path)
    label = f'{ctx.device_type}/{ctx.device_id}'
    assert list(trace) == [label, 'Device Storage']      # profile_memory: on
    assert op_names(trace, label) == ['sqrt'] * 3 + ['tanh'] * 2
    assert {lane for lane, _ in trace[label]} == {f'{ctx} stream'}
    for _, e in trace[label]:
        assert e['cat'] == 'operator' and e['dur'] >= 0 and e['ts'] >= 0


def test_an_op_belongs_to_the_profile_when_pushed_not_when_run(gate_op, tmp_path):
    """As in MXNet: pause() leaves out what is pushed after it, but keeps
    what was pushed before, even if it runs later; stop waits for it."""
    gated, gate = gate_op
    x = nd.ones((3,), ctx=mx.cpu(0))
    try:
        with engine.engine_mode('threaded'):
            start(tmp_path, aggregate_stats=True)
            held = gated(x)
            y = nd.sqrt(held)                       # pushed, cannot run yet
            profiler.pause()
            nd.exp(y)                               # pushed while paused
            profiler.resume()
            assert not y._stream.done >= y._seq     # still pending
            gate.set()
            profiler.set_state('stop')
    finally:
        gate.set()
    counts = {k: v['Count'] for k, v in stats()['operator'].items()}
    assert counts == {gated.op_name: 1, 'sqrt': 1}


def test_counts_equal_the_ops_run(tmp_path):
    """dumps()' counts equal those of the engine's Trace of the same code,
    and the number of ops each stream was given."""
    def work():
        x = nd.ones((8, 8), ctx=mx.cpu(0))
        for _ in range(5):
            x = nd.dot(x, x) / 8
        return nd.relu(x - 1).sum()
    nd.waitall()
    with engine.engine_mode('threaded'):
        with engine.Trace() as tr:
            work()
        s = engine.stream_for(mx.cpu(0))
        pushed = s.pushed
        start(tmp_path, aggregate_stats=True)
        work()
        profiler.set_state('stop')
        pushed = s.pushed - pushed
    expected = collections.Counter(MXNET_NAMES.get(n, n) for _, n, *_ in tr.events)
    counts = {k: v['Count'] for k, v in stats()['operator'].items()}
    assert counts == dict(expected) == {
        '_ones': 1, 'dot': 5, '_div_scalar': 5, '_minus_scalar': 1, 'relu': 1, 'sum': 1}
    assert sum(counts.values()) == pushed


def test_one_row_per_device_and_copies_on_the_destination(tmp_path):
    other = mx.gpu(0) if HAS_GPU else mx.cpu(1)
    start(tmp_path)
    x = nd.ones((4,), ctx=mx.cpu(0)) * 2
    y = x.copyto(other) + 1
    nd.exp(y).wait_to_read()
    profiler.set_state('stop')
    profiler.dump()
    trace = load(tmp_path)
    dest = f'{other.device_type}/{other.device_id}'
    assert list(trace) == ['cpu/0', dest, 'Device Storage']
    assert op_names(trace, 'cpu/0') == ['_ones', '_mul_scalar']
    assert op_names(trace, dest) == ['copyto', '_plus_scalar', 'exp']
    assert {lane for lane, _ in trace[dest]} == {f'{other} stream'}


@pytest.mark.skipif(not STANDIN, reason='the GPU run on the CuPy stand-in')
def test_gpu_rows_on_the_standin(tmp_path):
    start(tmp_path)
    for i in range(2):
        nd.sqrt(nd.ones((4,), ctx=mx.gpu(i)))
    profiler.set_state('stop')
    profiler.dump()
    trace = load(tmp_path)
    assert list(trace) == ['gpu/0', 'gpu/1', 'Device Storage']
    assert op_names(trace, 'gpu/1') == ['_ones', 'sqrt']


@pytest.mark.parametrize('imperative, symbolic, expected', [
    (True, True, {'graph', '_plus_scalar'}), (False, True, {'graph'}),
    (True, False, {'_plus_scalar'})])
def test_symbolic_and_imperative(imperative, symbolic, expected, tmp_path):
    net = mx.gluon.nn.Dense(3)
    net.initialize()
    net.hybridize()
    x = nd.ones((2, 4))
    net(x).wait_to_read()
    start(tmp_path, aggregate_stats=True, profile_imperative=imperative,
          profile_symbolic=symbolic)
    net(x) + 1
    profiler.set_state('stop')
    assert set(stats()['operator']) == expected


# --- profile_memory ------------------------------------------------------------------
def memory_trace(tmp_path):
    """The memory counters' values in the dumped trace: ``{name: [value]}``."""
    profiler.dump()
    out = collections.defaultdict(list)
    for lane, e in load(tmp_path).get('Device Storage', []):
        assert e['ph'] == 'C' and lane == e['name'].split(': ')[1]
        out[e['name']].append(e['args'][e['name']])
    return dict(out)


@pytest.mark.parametrize('kind', ENGINES)
def test_memory_counts_the_buffers_ops_make_and_free(kind, tmp_path):
    """An op's new buffer adds its bytes, freeing it subtracts them; views,
    in-place writes and arrays made before the profile are not counted."""
    n = 100 * 100 * 4
    old = nd.ones((100, 100), ctx=mx.cpu(0))
    nd.waitall()
    with engine.engine_mode(kind):
        start(tmp_path, aggregate_stats=True)
        x = nd.zeros((100, 100), ctx=mx.cpu(0))           # + n
        y = (x + 1).astype('float64')                     # + n, + 2n, - n
        y.reshape((-1,)).wait_to_read()                   # a view: nothing
        x[:] = old                                        # in place: nothing
        nd.sgd_update(x, old, lr=0.1, out=x)              # in place: nothing
        z = nd.split(x, 2, axis=0)                        # + n/2, + n/2
        nd.waitall()
        assert profiler.memory.COUNTERS.in_use() == {'cpu/0': n + 2 * n + n}
        del y, z
        nd.waitall()
        assert profiler.memory.COUNTERS.in_use() == {'cpu/0': n}
        profiler.set_state('stop')
    assert memory_trace(tmp_path) == {'Memory: cpu/0': [
        n, 2 * n, 4 * n, 3 * n, 3.5 * n, 4 * n, 2 * n, 1.5 * n, n]}
    row = json.loads(profiler.dumps(format='json'))['Memory']['Device Storage']
    assert row == {'Memory: cpu/0': {'Count': 9, 'Min': n / 1e3, 'Max': 4 * n / 1e3,
                                     'Avg': 1.5 * n / 1e3}}
    del old


def test_memory_is_taken_when_an_op_runs_not_when_pushed(gate_op, tmp_path):
    """The counter shows what the engine has run: ops held in the queue
    behind a gate have allocated nothing yet."""
    gated, gate = gate_op
    x = nd.ones((1000,), ctx=mx.cpu(0))
    nd.waitall()
    try:
        with engine.engine_mode('threaded'):
            start(tmp_path)
            held = gated(x)
            ys = [held * i for i in range(5)]             # queued behind it
            assert profiler.memory.COUNTERS.in_use() == {}
            gate.set()
            nd.waitall()
            assert profiler.memory.COUNTERS.in_use() == {'cpu/0': 6 * 4000}
            profiler.set_state('stop')
    finally:
        gate.set()
    del ys
    assert memory_trace(tmp_path)['Memory: cpu/0'] == [4000 * i for i in range(1, 7)]


def test_memory_per_device_off_and_paused(tmp_path):
    other = mx.gpu(0) if HAS_GPU else mx.cpu(1)
    label = f'{other.device_type}/{other.device_id}'
    x = nd.ones((10,), ctx=mx.cpu(0))
    nd.waitall()
    start(tmp_path)
    a = x * 2                                             # 40 bytes on cpu/0
    b = x.copyto(other)                                   # 40 on the other
    nd.waitall()                                          # counted as they run
    profiler.pause()
    c = b + 1                                             # paused: no point
    nd.waitall()
    profiler.resume()
    d = b + 2                                             # 40 + 40 counted
    profiler.set_state('stop')
    assert memory_trace(tmp_path) == {'Memory: cpu/0': [40],
                                      f'Memory: {label}': [40, 120]}
    profiler._reset()
    start(tmp_path, profile_memory=False)
    e = x * 3
    profiler.set_state('stop')
    assert memory_trace(tmp_path) == {}
    assert profiler.memory.COUNTERS.in_use() == {}
    del a, b, c, d, e


def test_memory_counts_host_copies_not_shared_buffers(tmp_path):
    """nd.array and the DataLoader copy host data outside the engine: that
    is counted; from_numpy shares the NumPy array's memory: that is not."""
    import numpy as np
    start(tmp_path)
    a = nd.array(np.ones((10, 10)), ctx=mx.cpu(0))        # float32: 400 bytes
    b = nd.from_numpy(np.ones(5, 'float32'))
    assert profiler.memory.COUNTERS.in_use() == {'cpu/0': 400}
    ds = mx.gluon.data.ArrayDataset(np.ones((8, 3), 'float32'), np.arange(8))
    batches = list(mx.gluon.data.DataLoader(ds, batch_size=4))
    assert profiler.memory.COUNTERS.in_use() == {'cpu/0': 400 + 2 * (48 + 32)}
    del batches
    assert profiler.memory.COUNTERS.in_use() == {'cpu/0': 400}
    profiler.set_state('stop')
    del a, b


def test_memory_section_matches_mxnet(tmp_path):
    """The workload's Device Storage row and section, laid out as MXNet's
    (the values differ: MXNet also counts its operators' temp space)."""
    ours, ref = tables(tmp_path)
    i, j = ours.index('Device Storage'), ref.index('Device Storage')
    assert ours[i:i + 4] == ref[j:j + 4]                 # title, rule, header, dashes
    ctx = mx.current_context()
    name = f'Memory: {ctx.device_type}/{ctx.device_id}'     # MXNet ran on cpu/0
    assert re.fullmatch(name + r' +(\d+)( +\d+\.\d{4}){3}', ours[i + 4])
    assert ours[i + 5] == ''
    assert [m.end() for m in re.finditer(r'\S+', ours[i + 4])][2:] == \
        [m.end() for m in re.finditer(r'\S+', ref[j + 4])][2:]
    with open(os.path.join(FIXTURES, 'mxnet_stats.json')) as f:
        theirs = json.load(f)['Memory']['Device Storage']['Memory: cpu/0']
    mine = json.loads(profiler.dumps(format='json'))['Memory']
    assert list(mine) == ['Device Storage'] and list(mine['Device Storage']) == [name]
    mine = mine['Device Storage'][name]
    assert sorted(mine) == sorted(theirs) == ['Avg', 'Count', 'Max', 'Min']
    # The first buffer (nd.ones) is the smallest value, as in MXNet's.
    assert mine['Min'] == theirs['Min'] == 1.6


# --- MXNet's output ------------------------------------------------------------------
def test_names_counts_and_counter_match_mxnet(tmp_path):
    start(tmp_path, profile_all=True, aggregate_stats=True)
    workload(mx, profiler)
    profiler.set_state('stop')
    ours = stats()
    with open(os.path.join(FIXTURES, 'mxnet_stats.json')) as f:
        ref = json.load(f)['Time']
    counts = {k: v['Count'] for k, v in ours['operator'].items()}
    assert counts == {k: v['Count'] for k, v in ref['operator'].items()
                      if k not in MXNET_ONLY}
    assert ours['workload']['steps'] == ref['workload']['steps']   # exact
    assert ours['workload']['compute']['Count'] == 1
    assert sorted(ours) == sorted(set(ref) - {'MXNET_C_API'})


def tables(tmp_path):
    """The lines of our dumps() of the workload, and of MXNet 1.9.1's."""
    start(tmp_path, profile_all=True, aggregate_stats=True)
    workload(mx, profiler)
    profiler.set_state('stop')
    with open(os.path.join(FIXTURES, 'mxnet_table.txt')) as f:
        return profiler.dumps().split('\n'), f.read().split('\n')


def test_table_layout_matches_mxnet(tmp_path):
    ours, ref = tables(tmp_path)

    def section(lines, name):
        i = lines.index(name)
        return lines[i:lines.index('', i)]

    def ends(line):                  # where each column ends
        return [m.end() for m in re.finditer(r'\S+', line)]
    assert ours[:3] == ref[:3]
    for name in ('operator', 'workload', 'workload,instant_marker'):
        mine, theirs = section(ours, name), section(ref, name)
        assert mine[:4] == theirs[:4]            # title, rule, header, dashes
        assert len(mine) == len(theirs) - (name == 'operator') * sum(
            line.split()[0] in MXNET_ONLY for line in theirs[4:])
        for line in mine[4:]:
            row = next(r for r in theirs[4:] if len(r.split()[0]) < 25)
            assert ends(line)[1:] == ends(row)[1:]
            assert re.fullmatch(r'\S+ +\d+( +\d+\.\d{4}){4}', line)


def test_sorting_as_mxnet(tmp_path):
    """MXNet's test_aggregate_stats_sorting: each category is in order."""
    start(tmp_path, aggregate_stats=True)
    workload(mx, profiler)
    keys = {'total': 'Total', 'avg': 'Avg', 'min': 'Min', 'max': 'Max', 'count': 'Count'}
    for sort_by, key in keys.items():
        for ascending in (False, True):
            for rows in stats(sort_by=sort_by, ascending=ascending).values():
                values = [r[key] for r in rows.values()]
                assert values == sorted(values, reverse=not ascending)
    assert list(stats(sort_by='count')['operator'])[0] == 'dot'


def test_reset_and_dumps_without_stats(tmp_path):
    start(tmp_path, aggregate_stats=True)
    nd.ones((2,)).wait_to_read()
    assert '_ones' in stats(reset=True)['operator']
    assert stats() == {}
    profiler.set_config(aggregate_stats=False)
    with pytest.warns(UserWarning, match='aggregate_stats=True'):
        assert profiler.dumps() == ''


# --- the user's scopes --------------------------------------------------------------
def test_user_objects_in_the_trace(tmp_path):
    start(tmp_path)
    domain = profiler.Domain('data')
    counter = domain.new_counter('queued', 2)
    counter += 3
    counter -= 1
    counter.increment(10)
    counter.decrement()
    counter.set_value(0)
    task, frame = domain.new_task('load'), domain.new_frame('epoch')
    event = profiler.Event('step')
    for obj in (task, frame, event):
        obj.start()
        obj.stop()
    profiler.pause()
    task.start()
    task.stop()                                  # paused: left out
    counter += 100                               # not recorded, but counted
    profiler.resume()
    counter += 1
    domain.new_marker('here').mark('global')
    domain.new_marker('there').mark()
    profiler.set_state('stop')
    profiler.dump()
    trace = load(tmp_path)
    assert set(trace) == {'data', 'data,frame', 'data,instant_marker', 'event'}
    assert [(lane, e['name']) for lane, e in trace['data'] if e['ph'] == 'X'] == [
        ('MainThread', 'load')]
    values = [e['args']['queued'] for _, e in trace['data'] if e['ph'] == 'C']
    assert values == [2, 5, 4, 14, 13, 0, 101]
    assert op_names(trace, 'data,frame') == ['epoch']
    assert op_names(trace, 'event') == ['step']
    marks = [(e['name'], e['ph'], e['s']) for _, e in trace['data,instant_marker']]
    assert marks == [('here', 'i', 'g'), ('there', 'i', 'p')]
    assert str(domain) == 'data' and str(task) == 'load' and str(counter) == 'queued'


def test_dump_finished_ends_the_profile(tmp_path):
    ctx = mx.current_context()
    label = f'{ctx.device_type}/{ctx.device_id}'
    start(tmp_path)
    nd.ones((2,)).wait_to_read()
    profiler.set_state('stop')
    profiler.dump(finished=False)
    profiler.dump()                              # still there, then ended
    assert op_names(load(tmp_path), label) == ['_ones']
    with pytest.raises(mx.MXNetError, match="hasn't run"):
        profiler.dump()
    profiler.set_state('run')                    # a new profile
    nd.zeros((2,)).wait_to_read()
    profiler.set_state('stop')
    profiler.dump()
    assert op_names(load(tmp_path), label) == ['_zeros']


def test_a_profile_never_dumped_is_written_at_exit(tmp_path):
    script = ('import d2lmini as mx\nfrom d2lmini import profiler\n'
              "profiler.set_config(filename='exit.json')\n"
              "profiler.set_state('run')\nmx.nd.ones((2,)) + 1\n")
    env = dict(os.environ, PYTHONPATH=child_pythonpath(os.path.dirname(HERE)))
    subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env,
                   check=True, timeout=60)
    doc = json.loads((tmp_path / 'exit.json').read_text())
    assert [e['name'] for e in doc['traceEvents'] if e['ph'] == 'X'] == [
        '_ones', '_plus_scalar']


# --- clear errors --------------------------------------------------------------
def test_bad_config_state_and_calls(tmp_path):
    with pytest.raises(TypeError, match="'profile_imperativ'.*did you mean "
                                        "'profile_imperative'"):
        profiler.set_config(profile_imperativ=True)
    with pytest.raises(mx.MXNetError, match='bogus.*its keywords are profile_all'):
        profiler.set_config(bogus=1)
    with pytest.raises(ValueError, match="profile_all must be a boolean, got 'maybe'"):
        profiler.set_config(profile_all='maybe')
    with pytest.raises(ValueError, match='dump_period must be a positive number'):
        profiler.set_config(dump_period=0)
    with pytest.raises(NotImplementedError, match='D2LMINI_PS_TRACE'):
        profiler.set_config(profile_process='server')
    with pytest.raises(mx.MXNetError, match="hasn't run"):
        profiler.dump()
    with pytest.raises(ValueError, match="state must be 'run' or 'stop', got 'go'"):
        profiler.set_state('go')
    for kw in ({'format': 'xml'}, {'sort_by': 'median'}, {'ascending': 'yes'}):
        with pytest.raises(ValueError, match=f'{next(iter(kw))} must be one of'):
            profiler.dumps(**kw)
    with pytest.raises(ValueError, match="scope must be one of 'global'"):
        profiler.Marker(profiler.Domain('d'), 'm').mark('galaxy')
    with pytest.raises(mx.MXNetError, match=r"Task 'late': stop\(\) without start"):
        profiler.Task(profiler.Domain('d'), 'late').stop()
    with pytest.raises(TypeError, match='expected a profiler.Domain'):
        profiler.Task('not a domain', 't')
    profiler.set_config(aggregate_stats='True', profile_all=1)   # MXNet's spellings
    with engine.Trace():
        with pytest.raises(mx.MXNetError, match='engine.Trace is recording'):
            profiler.set_state('run')
