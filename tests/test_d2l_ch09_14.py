"""The helpers of chapters 9-14 in d2lmini.d2l (run headless), and the
engine trace's record of which operations autograd's backward pass pushed,
which chapter 10's timeline colours by."""
import json
import os
import subprocess
import sys

import matplotlib
import numpy as np
import pytest

matplotlib.use('Agg')

import d2lmini as mx                                   # noqa: E402
from d2lmini import autograd, d2l, engine, nd          # noqa: E402
from d2lmini.gluon import nn                           # noqa: E402
from d2lmini.launch import mpi as launch_mpi           # noqa: E402
from d2lmini.launch.mpi import mpich_mpiexec           # noqa: E402
from matplotlib.colors import to_rgba                  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    d2l.plt.close('all')


# --- which pass pushed an operation ------------------------------------------
def _traced_step(devices):
    """A fused Dense+relu layer on devices[0], a copy, a Dense on
    devices[-1]: forward and backward, traced."""
    mx.random.seed(0)
    first, last = nn.Dense(8, activation='relu'), nn.Dense(3)
    first.initialize(ctx=devices[0])
    last.initialize(ctx=devices[-1])
    x = nd.random.normal(shape=(4, 5), ctx=devices[0])
    last(first(x).as_in_context(devices[-1]))            # deferred init
    with engine.Trace() as tr:
        with autograd.record():
            out = last(first(x).as_in_context(devices[-1]))
        out.backward()
    return tr


@pytest.mark.parametrize('mode', ['threaded', 'naive'])
def test_a_fused_forward_op_is_forward_and_its_gradient_backward(mode):
    with engine.engine_mode(mode):
        tr = _traced_step([mx.cpu(0)])
    spans = tr.spans(backward=True)
    assert [s[:4] for s in spans] == tr.spans()          # the same spans
    forward = [n for _, n, _, _, bw in spans if not bw]
    backward = [n for _, n, _, _, bw in spans if bw]
    assert '_fc_act' in forward and '_fc_act' not in backward
    assert forward.index('_fc_act') < forward.index('FullyConnected')
    assert backward and not set(backward) & {'_fc_act', 'FullyConnected'}
    # every backward op ran after every forward op (one device, in order)
    assert max(e for _, _, _, e, bw in spans if not bw) <= \
        min(s for _, _, s, _, bw in spans if bw)


def test_trace_passes_on_two_devices_keeps_copies_apart():
    devices = [mx.cpu(0), mx.cpu(1)]
    tr = _traced_step(devices)
    kinds = {d: [(n, k) for n, _, _, k in d2l.trace_passes(tr, d)]
             for d in devices}
    assert ('_fc_act', 'forward') in kinds[devices[0]]
    assert ('FullyConnected', 'forward') in kinds[devices[1]]
    # the activation's copy forward, and its gradient's copy back
    copies = [k for d in devices for n, k in kinds[d] if n == 'copyto']
    assert copies and set(copies) == {'copy'}
    assert any(k == 'backward' for _, k in kinds[devices[0]])
    assert any(k == 'backward' for _, k in kinds[devices[1]])


def test_no_trace_no_marks_and_old_event_tuples_still_work():
    assert engine.backward_pass() is engine.backward_pass()   # a no-op
    tr = engine.Trace()                      # events set by hand, as tests do
    tr.events = [(mx.cpu(0), 'a', 0.0, 1.0, 1), (mx.cpu(0), 'b', 1.0, 2.0, 2)]
    assert tr.spans(backward=True) == [(mx.cpu(0), 'a', 0.0 - tr.t0,
                                        1.0 - tr.t0, False),
                                       (mx.cpu(0), 'b', 1.0 - tr.t0,
                                        2.0 - tr.t0, False)]


def test_plot_passes_colours_bars_by_pass():
    devices = [mx.cpu(0), mx.cpu(1)]
    tr = _traced_step(devices)
    ax = d2l.plot_passes(tr, devices, title='one step')
    colours = {tuple(np.round(c.get_facecolor()[0], 3)): c.get_label()
               for c in ax.collections}
    for kind, colour in d2l.figures._PASS_COLORS.items():
        assert colours[tuple(np.round(to_rgba(colour), 3))] == kind
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        ['forward', 'backward', 'copy']
    assert [t.get_text() for t in ax.get_yticklabels()] == ['cpu(0)', 'cpu(1)']
    assert ax.get_title(loc='left') == 'one step'
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars == len(tr.spans(devices[0])) + len(tr.spans(devices[1]))


# --- diagrams ---------------------------------------------------------------------
def test_draw_cluster_connects_every_worker_to_every_server():
    fig = d2l.draw_cluster(num_workers=3, num_servers=2)
    ax, = fig.axes
    texts = [t.get_text() for t in ax.texts]
    for name in ('worker 0', 'worker 2', 'server 0', 'server 1', 'scheduler'):
        assert any(t.startswith(name) for t in texts), name
    assert not any(t.startswith('worker 3') for t in texts)
    data = [ln for ln in ax.lines if ln.get_linestyle() == '-']
    control = [ln for ln in ax.lines if ln.get_linestyle() == ':']
    assert len(data) == 3 * 2 and len(control) == 3 + 2


def _ring_history(n):
    """(phase, moves, holds) of chapter 13's ring, holds only."""
    holds = [[{r} for _ in range(n)] for r in range(n)]
    history = [('start', [], [[set(h) for h in row] for row in holds])]
    for phase, add in (('reduce-scatter', True), ('all-gather', False)):
        for s in range(n - 1):
            c0 = (lambda r: (r - s) % n) if add else (lambda r: (r + 1 - s) % n)
            moves = [(r, (r + 1) % n, c0(r)) for r in range(n)]
            sent = [(dst, c, set(holds[src][c])) for src, dst, c in moves]
            for dst, c, who in sent:
                holds[dst][c] = holds[dst][c] | who if add else who
            history.append((phase, moves, [[set(h) for h in row]
                                           for row in holds]))
    return history


def test_draw_ring_draws_a_panel_per_step_and_the_counts():
    n = 3
    fig = d2l.draw_ring(_ring_history(n), n)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ['start', 'reduce-scatter, step 1',
                      'reduce-scatter, step 2', 'all-gather, step 1',
                      'all-gather, step 2', '']
    arrows = [sum(1 for t in ax.texts
                  if getattr(t, 'arrow_patch', None) is not None)
              for ax in fig.axes]
    assert arrows == [0, n, n, n, n, 0]
    counts = [t.get_text() for t in fig.axes[4].texts if t.get_text().isdigit()]
    assert counts == [str(n)] * (n * n)          # the end: all complete
    counts = [t.get_text() for t in fig.axes[0].texts if t.get_text().isdigit()]
    assert counts == ['1'] * (n * n)             # the start: own values only


def _timeline(num_steps, per_step):
    """{rank: spans} as trace.load reads a HOROVOD_TIMELINE file (seconds)."""
    spans = {}
    for rank in (0, 1):
        sp = [(rank, 'init', 1e-3 * k, 1e-3 * k + 50e-6, {'cat': 'broadcast'})
              for k in range(2)]
        sp += [(rank, 'grad', t, t + 80e-6, {'cat': 'allreduce'})
               for s in range(num_steps) for k in range(per_step)
               for t in [1e-2 * (s + 1) + 1e-4 * k + 1e-6 * rank]]
        spans[rank] = sp
    return spans


def test_plot_collectives_whole_run_and_one_step():
    fig = d2l.plot_collectives({'fused': _timeline(10, 1),
                                'unfused': _timeline(10, 3)},
                               num_steps=10, step=5)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ['fused: 10 steps', 'step 5: 1 allreduce(s)',
                      'unfused: 10 steps', 'step 5: 3 allreduce(s)']
    whole, step = fig.axes[2], fig.axes[3]
    per_rank = [len(c.get_paths()) for c in whole.collections]
    assert per_rank == [2, 2, 30, 30]            # broadcasts, then allreduces
    assert [len(c.get_paths()) for c in step.collections] == [3, 3]
    lo, hi = step.get_xlim()                     # the step, magnified
    assert lo < 0 < 0.28 < hi < 0.3
    assert [t.get_text() for t in step.get_yticklabels()] == ['rank 0', 'rank 1']


# --- starting processes ---------------------------------------------------------------
REPORT = ('import json, os; print("RESULT", json.dumps({k: os.environ.get(k) '
          'for k in ("DMLC_ROLE", "DMLC_WORKER_ID", "DMLC_SERVER_ID", '
          '"DMLC_NUM_WORKER", "DMLC_PS_ROOT_PORT", "PYTHONPATH")}))')


def test_dmlc_env_and_names():
    assert d2l.ps_node_names(2, 1) == ['scheduler', 'server 0', 'worker 0',
                                       'worker 1']
    assert d2l.dmlc_env('scheduler', 9, 2, 1) == {
        'DMLC_ROLE': 'scheduler', 'DMLC_PS_ROOT_URI': '127.0.0.1',
        'DMLC_PS_ROOT_PORT': '9', 'DMLC_NUM_SERVER': '1',
        'DMLC_NUM_WORKER': '2'}
    assert d2l.dmlc_env('server 0', 9, 2, 1)['DMLC_SERVER_ID'] == '0'
    assert d2l.dmlc_env('worker 1', 9, 2, 1, '10.0.0.1')['DMLC_PS_ROOT_URI'] \
        == '10.0.0.1'


def test_ps_job_tells_every_process_its_role(tmp_path):
    started = []
    with d2l.ps_job([sys.executable, '-c', REPORT], num_workers=2,
                    num_servers=1, log_dir=str(tmp_path),
                    started=started) as procs:
        codes = d2l.wait_all(procs, timeout=60)
    assert codes == {'scheduler': 0, 'server 0': 0, 'worker 0': 0,
                     'worker 1': 0}
    assert started == list(procs.values())
    told = {name: d2l.results(open(d2l.ps_log(str(tmp_path), name)).read())[0]
            for name in procs}
    assert told['worker 1']['DMLC_WORKER_ID'] == '1'
    assert told['server 0']['DMLC_ROLE'] == 'server'
    assert len({t['DMLC_PS_ROOT_PORT'] for t in told.values()}) == 1
    root = os.path.dirname(os.path.dirname(os.path.abspath(mx.__file__)))
    assert all(t['PYTHONPATH'].split(os.pathsep)[0] == root
               for t in told.values())


def test_ps_job_kills_what_still_runs(tmp_path):
    with d2l.ps_job([sys.executable, '-c', 'import time; time.sleep(60)'],
                    num_workers=1, num_servers=0, log_dir=str(tmp_path)) as procs:
        assert d2l.wait_all(procs, timeout=0.2) == {'scheduler': None,
                                                     'worker 0': None}
    assert all(p.poll() is not None for p in procs.values())


def test_results_sorts_by_rank_and_skips_other_lines():
    text = 'noise\nRESULT {"rank": 1, "x": 2}\nRESULT {"rank": 0}\nRESULTS\n'
    assert d2l.results(text) == [{'rank': 0}, {'rank': 1, 'x': 2}]
    assert d2l.results('RESULT [[1, 2], [3, 4]]') == [[[1, 2], [3, 4]]]


def test_results_names_a_mixed_line_and_the_cure():
    # two ranks' print('RESULT', ...) interleaved, as mpiexec forwarded them
    mixed = 'RESULT RESULT {"rank": 0}\n{"rank": 1}\n'
    with pytest.raises(ValueError, match='not JSON.*single sys.stdout.write'):
        d2l.results(mixed)


_MPIEXEC, _WHY_NOT = mpich_mpiexec()
needs_mpi = pytest.mark.skipif(_MPIEXEC is None, reason=f'needs MPI: {_WHY_NOT}')


@pytest.mark.parametrize('version, kind', [
    ('mpiexec (OpenRTE) 4.1.2', 'openmpi'), ('HYDRA build details:', 'mpich')])
def test_mpirun_says_when_the_mpiexec_is_not_mpichs(tmp_path, monkeypatch,
                                                    version, kind):
    fake = tmp_path / 'mpiexec'
    fake.write_text(f'#!/bin/sh\necho "{version}"\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setattr(launch_mpi, 'find_mpiexec', lambda: str(fake))
    assert launch_mpi.mpiexec_kind(str(fake)) == kind
    if kind == 'mpich':
        assert mpich_mpiexec() == (str(fake), None)
        return
    with pytest.raises(RuntimeError, match="Open MPI's mpiexec; MPICH's is needed"):
        d2l.mpirun(2, ['-c', 'pass'], cwd=str(tmp_path))


@needs_mpi
def test_mpirun_runs_the_ranks_and_stops_a_hung_job(tmp_path):
    # one write per line: with PYTHONUNBUFFERED=1 (as in CI), print() makes
    # several, and the two ranks' pieces interleave in mpiexec's output
    rank = ('import json, os, sys; sys.stdout.write("RESULT " + json.dumps('
            '{"rank": int(os.environ.get("PMI_RANK", os.environ.get('
            '"OMPI_COMM_WORLD_RANK", 0)))}) + "\\n")')
    status, out = d2l.mpirun(2, ['-c', rank], cwd=str(tmp_path))
    assert status == 0 and d2l.results(out) == [{'rank': 0}, {'rank': 1}]
    status, out = d2l.mpirun(1, ['-c', 'raise SystemExit(3)'],
                             cwd=str(tmp_path), check=False)
    assert status != 0
    with pytest.raises(RuntimeError, match='exited with'):
        d2l.mpirun(1, ['-c', 'raise SystemExit(3)'], cwd=str(tmp_path))
    started = []
    with pytest.raises(subprocess.TimeoutExpired):
        d2l.mpirun(1, ['-c', 'import time; time.sleep(60)'],
                   cwd=str(tmp_path), timeout=1, started=started)
    assert started[0].poll() is not None         # the job is gone
