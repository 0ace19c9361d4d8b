"""d2lmini.horovod across real processes: mpiexec with 2, 3 and 4 ranks.

Every job runs a script of ``tests/mpi_scripts`` under ``mpi_job.run``
(bounded, nothing left behind).  The ranks save what they got; the test
rebuilds every rank's input and compares with NumPy (values), with one
process on the joined batch (training), or with what the issue asks of a
fault (a clear error naming the tensor and ranks, or an exit in bounded
time, never a hang).
"""
import contextlib
import json
import os
import re
import signal
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mpi_job  # noqa: E402
from d2lmini.engine import trace as trace_mod  # noqa: E402
from mpi_job import needs_mpi  # noqa: E402

sys.path.insert(0, mpi_job.SCRIPTS)
import _data  # noqa: E402
import _net  # noqa: E402

pytestmark = needs_mpi
TOL = {'float16': 1e-3, 'float32': 1e-6, 'float64': 1e-12}


def _alive(pid):
    return not mpi_job._gone(pid)


def _ok(job):
    assert job.rc == 0 and not job.killed, job.report()
    return job


# ------------------------------------------------------------- the harness
def test_job_collects_every_ranks_output():
    job = _ok(mpi_job.run('mpi_plain.py', 3, ['hello'], timeout=60))
    for r in range(3):
        assert f'rank {r} of 3: sum 6' in job.out(r)      # 1 + 2 + 3
        assert f'rank {r} to stderr' in job.err(r)
    assert job.leftovers == []


def test_job_past_its_deadline_is_killed_and_leaves_nothing(tmp_path):
    job = mpi_job.run('mpi_plain.py', 2, ['hang', tmp_path], timeout=4)
    assert job.killed and job.rc != 0
    pids = [int((tmp_path / f'pid.{r}').read_text()) for r in range(2)]
    assert not any(_alive(p) for p in pids)   # though each had its own session


@pytest.mark.parametrize('case', ['fail', 'kill9'])
def test_a_dead_rank_ends_the_job(case):
    job = mpi_job.run('mpi_plain.py', 3, [case], timeout=60)
    assert not job.killed and job.rc != 0, job.report()
    assert all('past the barrier' not in o for o in job.outs)


# ---------------------------------------------------- values against NumPy
def _sum(fn, n_ranks, **kw):
    return np.sum([fn(r, **kw).astype(np.float64) for r in range(n_ranks)], axis=0)


def _check(got, expected_f64, dtype, average, n_ranks):
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    if average:
        np.testing.assert_allclose(got, (expected_f64 / n_ranks).astype(dtype),
                                   rtol=TOL[dtype], atol=TOL[dtype])
    else:                         # quarters: every order of adding is exact
        np.testing.assert_array_equal(got, expected_f64.astype(dtype))


@pytest.mark.parametrize('n_ranks', [2, 3, 4])
def test_collectives_equal_numpy(tmp_path, n_ranks):
    _ok(mpi_job.run('collectives.py', n_ranks, [tmp_path], timeout=120))
    digests = [json.loads((tmp_path / f'digests.{r}.json').read_text())
               for r in range(n_ranks)]
    for r in range(1, n_ranks):                       # every rank, same bits
        assert digests[r] == digests[0], f'rank {r} differs from rank 0'
    with np.load(tmp_path / 'results.npz') as f:
        res = {k.replace('|', '/'): f[k] for k in f.files}
    assert set(res) == set(digests[0])

    for algo in _data.ALGORITHMS:
        for dtype in _data.DTYPES:
            for n in _data.SIZES:
                s = _sum(_data.quarters, n_ranks, size=n, dtype=dtype)
                for avg in (True, False):
                    key = f'allreduce/{algo}/{dtype}/{n}/{"avg" if avg else "sum"}'
                    _check(res[key], s, dtype, avg, n_ranks)
        np.testing.assert_allclose(res[f'normals/{algo}'],
                                   _sum(_data.normals, n_ranks, size=1000),
                                   rtol=1e-12, atol=1e-12)
        assert res[f'allreduce_/{algo}/same']
        _check(res[f'allreduce_/{algo}'],
               _sum(_data.quarters, n_ranks, size=1000, dtype='float32', salt=2),
               'float32', True, n_ranks)
        for n in (1, 3, 1000, 1_000_003):
            _check(res[f'ring_allreduce/{n}'],
                   _sum(_data.quarters, n_ranks, size=n, dtype='float32', salt=3),
                   'float32', False, n_ranks)

    for i, shape in enumerate(_data.GROUP_SHAPES):
        size = int(np.prod(shape))
        s = _sum(_data.quarters, n_ranks, size=size, dtype='float32',
                 salt=10 + i).reshape(shape)
        for avg in (True, False):
            got = res[f'grouped/{"avg" if avg else "sum"}/{i}']
            assert got.shape == shape
            _check(got, s, 'float32', avg, n_ranks)

    np.testing.assert_array_equal(
        res['allgather'], np.concatenate([_data.gathered(r) for r in range(n_ranks)]))
    np.testing.assert_array_equal(res['broadcast'],
                                  _data.quarters(1, 7, 'float32', salt=4))
    np.testing.assert_array_equal(res['broadcast_'],
                                  _data.quarters(1, 7, 'float64', salt=5))
    assert res['broadcast_/same']


def test_broadcast_parameters_with_deferred_init(tmp_path):
    _ok(mpi_job.run('broadcast_params.py', 3, [tmp_path], timeout=60))
    got = [dict(np.load(tmp_path / f'params.{r}.npz')) for r in range(3)]
    keys = sorted(got[0])
    assert len([k for k in keys if k.startswith('a|after')]) == 4
    for r in (1, 2):
        # different seeds: the weights (not the zero biases) differ at first
        assert not np.array_equal(got[r]['a|before|0'], got[0]['a|before|0'])
        assert not np.array_equal(got[r]['a|before|2'], got[0]['a|before|2'])
        for k in keys:                    # then rank 0's values everywhere
            if '|after|' in k:
                np.testing.assert_array_equal(got[r][k], got[0][k], err_msg=k)
    for k in keys:                       # the broadcast kept rank 0's own values
        if k.startswith('a|after'):
            np.testing.assert_array_equal(got[0][k],
                                          got[0][k.replace('after', 'before')])


# --------------------------------------- training: N ranks == joined batch
def _one_process(opt):
    from d2lmini import gluon
    net = _net.make_net(seed=100)            # rank 0's seed: it is broadcast
    trainer = gluon.Trainer(net.collect_params(), opt, dict(_net.OPTIMIZERS[opt]),
                            kvstore=None)
    before = [v.data().asnumpy() for v in net.collect_params().values()]
    return before, _net.train(net, trainer.step)


@pytest.mark.parametrize('mode', ['trainer', 'optimizer'])
@pytest.mark.parametrize('opt', ['sgd', 'adam'])
def test_two_ranks_train_as_one_process_on_the_joined_batch(tmp_path, mode, opt):
    _ok(mpi_job.run('train.py', 2, [tmp_path, mode, opt], timeout=60))
    d0, d1 = (json.loads((tmp_path / f'{mode}-{opt}.{r}.json').read_text())
              for r in range(2))
    assert d0 == d1                                # the ranks stay identical
    with np.load(tmp_path / f'{mode}-{opt}.npz') as f:
        got = [f[f'arr_{i}'] for i in range(len(f.files))]
    before, expected = _one_process(opt)
    assert len(got) == len(expected) == 4
    for g, e, b in zip(got, expected, before):
        assert not np.allclose(e, b)               # the steps did move them
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------- timeline
@pytest.mark.parametrize('threshold, fused', [(None, [40000]),
                                              (16000, [16000, 16000, 8000])])
def test_timeline_is_a_chrome_trace_with_one_event_per_collective(
        tmp_path, threshold, fused):
    """One event per collective; the grouped call of ten 4000-byte tensors
    is one fused buffer (default 64 MB threshold) or buffers of at most
    HOROVOD_FUSION_THRESHOLD bytes."""
    path = tmp_path / 'timeline.json'
    env = {'HOROVOD_TIMELINE': str(path)}
    if threshold:
        env['HOROVOD_FUSION_THRESHOLD'] = str(threshold)
    _ok(mpi_job.run('timeline.py', 2, timeout=60, env=env))
    names = {'t.allreduce.mpi', 't.allreduce.ring', 't.allgather', 't.broadcast'}
    for r in range(2):
        trace = json.loads((tmp_path / f'timeline.rank{r}.json').read_text())
        events = trace['traceEvents'] if isinstance(trace, dict) else trace
        # each collective: its 'negotiate' wait, then the collective itself
        waits = [e for e in events if e.get('cat') == 'negotiate']
        events = [e for e in events if e.get('cat') != 'negotiate']
        assert sorted(e['name'] for e in waits) == sorted(
            e['name'] for e in events if e['ph'] == 'X')
        ours = [e for e in events if e.get('name') in names]
        assert sorted(e['name'] for e in ours) == sorted(names)
        for e in ours:
            assert e['ph'] == 'X' and e['dur'] >= 0 and e['pid'] is not None
            assert e['args']['bytes'] == 4000, e
        algos = {e['name']: e['args'].get('algorithm') for e in ours}
        assert algos['t.allreduce.mpi'] == 'mpi'
        assert algos['t.allreduce.ring'] == 'ring'
        grouped = [e for e in events if str(e.get('name', '')).startswith('t.grouped')]
        assert [e['args']['bytes'] for e in grouped] == fused
        assert len(events) == len(ours) + len(grouped) + sum(
            e['ph'] == 'M' for e in events)            # nothing else recorded
        # the shared span recorder reads it back (chapter 13's figure does)
        spans = trace_mod.load(str(tmp_path / f'timeline.rank{r}.json'))
        xs = sorted((e for e in trace['traceEvents'] if e['ph'] == 'X'),
                    key=lambda e: e['ts'])
        assert [(s[1], s[4]['cat']) for s in spans] == [
            (e['name'], e['cat']) for e in xs]
        assert all(abs(s[2] - e['ts'] / 1e6) < 1e-6 and s[3] >= s[2]
                   for s, e in zip(spans, xs))
        assert {s[0] for s in spans} == {f'rank {r}'}


# ------------------------------------------------------------------ faults
def _failed(case, tmp_path, horovod_timeout=None):
    """Run faults.py ``case`` on 2 ranks; it must fail (not hang).  Returns
    the job and the HorovodErrors the ranks caught (see faults.py)."""
    env = {'HOROVOD_TIMEOUT': str(horovod_timeout)} if horovod_timeout else None
    job = mpi_job.run('faults.py', 2, [case, tmp_path], timeout=60, env=env)
    assert not job.killed and job.rc != 0, job.report()
    return job, [p.read_text().strip() for p in sorted(tmp_path.glob('caught.*'))]


def test_mismatched_shapes_name_the_tensor_and_the_ranks(tmp_path):
    job, lines = _failed('shapes', tmp_path)
    assert lines, job.report()
    for ln in lines:
        assert 'MXNetError=True RuntimeError=True' in ln
        assert 'weights_0' in ln and '[3]' in ln and '[4]' in ln, ln
        assert re.search(r'rank\D*0', ln) and re.search(r'rank\D*1', ln), ln


def test_mismatched_dtypes_name_the_tensor_and_the_ranks(tmp_path):
    job, lines = _failed('dtypes', tmp_path)
    assert lines, job.report()
    for ln in lines:
        assert 'bias_1' in ln and 'float32' in ln and 'float64' in ln, ln
        assert re.search(r'rank\D*0', ln) and re.search(r'rank\D*1', ln), ln


def test_a_skipped_collective_times_out_and_the_job_exits(tmp_path):
    job, lines = _failed('skip_idle', tmp_path, horovod_timeout=3)
    assert any('only_rank_0' in ln for ln in lines), job.report()
    assert 'FINISHED' not in job.out(1)              # rank 1 was ended too


def test_a_rank_calling_another_collective_is_named(tmp_path):
    job, lines = _failed('skip_next', tmp_path, horovod_timeout=3)
    assert any('first' in ln and 'second' in ln for ln in lines), job.report()


def test_a_rank_killed_mid_training_ends_the_job(tmp_path):
    job, _ = _failed('kill9', tmp_path, horovod_timeout=5)
    assert (tmp_path / 'epochs.1').read_text() == '2'   # it trained, then died
    assert int((tmp_path / 'epochs.0').read_text()) <= 2  # rank 0 stopped too
    assert 'FINISHED' not in job.out(0)


# --------------------------- disagreements, whatever the tensor's name
LONG = 'resnet152_v1_stage4_bottleneck' * 10      # as in disagree.py


@pytest.mark.parametrize('case, n_ranks, says', [
    ('dtype', 2, "the dtype: 'float32' on rank 0, 'int32' on rank 1"),
    ('dtype', 3, "the dtype: 'float32' on ranks 0 and 2, 'int32' on rank 1"),
    ('shape', 2, 'the shape: [2,3] on rank 0, [3,2] on rank 1'),
    ('size', 2, 'the shape: [3] on rank 0, [5] on rank 1'),
    ('name', 2, f"the name: '{LONG}_gamma' on rank 0, '{LONG}_beta' on rank 1"),
    ('op', 2, "the op: 'allreduce' on rank 0, 'broadcast' on rank 1"),
    ('grouped', 2, 'the shape of tensor 1 (of 3): [3,2] on rank 0, [3,3] on rank 1'),
], ids=['dtype', 'dtype-3-ranks', 'shape', 'size', 'name', 'op', 'grouped'])
def test_every_rank_names_what_differs_and_the_job_goes_on(
        tmp_path, case, n_ranks, says):
    """The ranks compare the whole record of the call, even with a name of
    300 characters (a record cut at 256 bytes once hid the shape and dtype:
    float32 summed with int32 gave garbage, (3,) against (5,) ended in an
    MPI abort).  Every rank raises before any data moves, so the job can go
    on: the next allreduce is right."""
    job = _ok(mpi_job.run('disagree.py', n_ranks, [case, tmp_path], timeout=60))
    for r in range(n_ranks):
        caught = (tmp_path / f'caught.{r}').read_text()
        assert caught.startswith('HorovodError: '), caught
        assert 'the ranks disagree on ' + says in caught, caught
        total = n_ranks * (n_ranks + 1) / 2
        assert float((tmp_path / f'after.{r}').read_text()) == total, job.report()


# ------------------------------- a rank stopped in the middle of the data
@pytest.mark.parametrize('what, call', [('mpi', "allreduce 'big' (mpi)"),
                                        ('ring', "allreduce 'big' (ring)"),
                                        ('allgather', "allgather 'big' (mpi)"),
                                        ('broadcast', "broadcast 'big' (mpi)")])
def test_a_rank_stopped_mid_collective_times_out_and_the_job_ends(tmp_path, what, call):
    """Rank 1 stops (SIGSTOP) after both ranks agreed on the collective:
    rank 0 waits for the data at most HOROVOD_TIMEOUT, raises, and its error
    ends the job; a collective after the timeout fails at once."""
    pid_file = tmp_path / 'pid.1'
    try:
        job, lines = _failed(f'stop_{what}', tmp_path, horovod_timeout=3)
    finally:
        if pid_file.exists():              # mpi_job killed it; make sure
            pid = int(pid_file.read_text())
            for sig in (signal.SIGCONT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
    assert pid_file.exists(), job.report()         # it did stop
    assert len(lines) == 1 and lines[0].startswith('rank 0: caught'), lines
    assert call in lines[0] and 'waited 3 s (HOROVOD_TIMEOUT)' in lines[0], lines
    assert job.seconds < 40, job.report()          # not the 60 s default
    after = (tmp_path / 'after.0').read_text()
    assert after.startswith('an earlier collective of this rank failed'), after
