"""``python -m d2lmini.launch``: variables, output, failures, ssh, mpi.

The processes are ``tests/launch_helpers/node.py``: each prints its
variables, writes its pid to a directory, then exits / sleeps / fails as
told.  Every test checks afterwards that none of them is left running.
ssh runs through a fake ``ssh`` (``launch_helpers/bin/ssh``) that records its
arguments and runs the remote command with bash on this machine.
"""
import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from d2lmini import launch as L
from conftest import child_pythonpath

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
NODE = str(HERE / 'launch_helpers' / 'node.py')
FAKE_SSH_DIR = str(HERE / 'launch_helpers' / 'bin')


# ---------------------------------------------------------------- helpers
def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                   # a zombie is as good as gone
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def _pids(piddir):
    return {p.name: int(p.read_text()) for p in pathlib.Path(piddir).iterdir()}


def _assert_all_gone(piddir, expected=None, within=10.0):
    """Every process that wrote its pid is gone (waiting at most ``within``
    seconds for ones a remote watcher is still stopping)."""
    pids = _pids(piddir)
    if expected is not None:          # 'worker 1' wrote 'worker-1'
        assert set(pids) >= {'scheduler-0' if n == 'scheduler' else
                             n.replace(' ', '-') for n in expected}
    deadline = time.monotonic() + within
    while any(map(_alive, pids.values())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert {n: p for n, p in pids.items() if _alive(p)} == {}


def _envs(lines):
    """{prefix name: the variables node.py printed}."""
    return {name: json.loads(text.split(' ', 1)[1]) for name, stream, text
            in lines if stream == 'stdout' and text.startswith('env ')}


def _run(tmp_path, *rules, n=2, s=1, **kw):
    piddir = tmp_path / 'pids'
    piddir.mkdir(exist_ok=True)
    env = dict(kw.pop('env', {}), TEST_PIDDIR=str(piddir))
    kw.setdefault('kill_grace', 2)
    result = L.launch([sys.executable, NODE, *rules], n, s, env=env,
                      echo=False, capture=True, timeout=kw.pop('timeout', 60),
                      **kw)
    return result, piddir


def _names(n, s):
    return ['scheduler'] * bool(s) + [f'server {i}' for i in range(s)] + \
        [f'worker {i}' for i in range(n)]


# ---------------------------------------------------------------- local
def test_every_process_gets_its_role_rank_and_the_job_variables(tmp_path):
    result, piddir = _run(tmp_path, n=3, s=2, env={'TEST_ALL': 'a:b'},
                          env_worker={'TEST_W': '1'},
                          env_server={'TEST_S': '2'})
    assert (result.returncode, result.message) == (0, '')
    envs = _envs(result.lines)
    assert sorted(envs) == sorted(_names(3, 2))
    ports = {e['DMLC_PS_ROOT_PORT'] for e in envs.values()}
    assert len(ports) == 1 and 0 < int(ports.pop()) < 65536
    for name, e in envs.items():
        role = name.split()[0]
        assert e['DMLC_ROLE'] == role
        assert e['DMLC_PS_ROOT_URI'] == e['DMLC_NODE_HOST'] == '127.0.0.1'
        assert (e['DMLC_NUM_WORKER'], e['DMLC_NUM_SERVER']) == ('3', '2')
        assert e['DMLC_JOB_CLUSTER'] == 'local'
        assert e['TEST_ALL'] == 'a:b'       # split at the first ':' only
        assert e['PYTHONUNBUFFERED'] == '1'
        assert ('TEST_W' in e) == (role == 'worker')
        assert ('TEST_S' in e) == (role == 'server')
        if role != 'scheduler':             # the prefix names the rank
            assert e[f'DMLC_{role.upper()}_ID'] == name.split()[1]
        else:
            assert 'DMLC_WORKER_ID' not in e and 'DMLC_SERVER_ID' not in e
    # stderr is prefixed too, line by line
    notes = {(n, t) for n, stream, t in result.lines if stream == 'stderr'}
    assert notes == {(n, f'note from {n.split()[0]}\n') for n in envs}
    _assert_all_gone(piddir, _names(3, 2))


def test_the_printed_prefix_and_a_shell_line_command(tmp_path, capfd):
    """The CLI form: ``[worker 1] ...`` on stdout; one word is a shell line."""
    line = shlex.join([sys.executable, NODE]) + ' && echo "done $DMLC_ROLE"'
    proc = subprocess.run(
        [sys.executable, '-m', 'd2lmini.launch', '-n', '2', '-s', '1', line],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=child_pythonpath(ROOT)))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    for name in _names(2, 1):
        assert f'[{name}] done {name.split()[0]}' in out
        assert f'[{name}] note from {name.split()[0]}' in \
            proc.stderr.splitlines()
    assert sum(line.startswith('[worker 1] env {') for line in out) == 1


def test_children_import_this_d2lmini_and_the_launchers_pythonpath(tmp_path):
    """``python -m d2lmini.launch`` from a checkout finds d2lmini in its
    working directory: a child that starts elsewhere gets that directory
    first on ``PYTHONPATH``, then the launcher's own entries made absolute
    (in the GPU run, where ``D2LMINI_CUPY``'s stand-in lives)."""
    mods = tmp_path / 'mods'
    mods.mkdir()
    (mods / 'marker_mod.py').write_text('WHERE = __file__\n')
    probe = ('import d2lmini, marker_mod; '
             'print(d2lmini.__file__, marker_mod.WHERE)')
    line = f'cd / && {shlex.quote(sys.executable)} -c {shlex.quote(probe)}'
    inherited = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep)
                 if p and os.path.abspath(p) != str(ROOT)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.relpath(mods, ROOT)] + [os.path.abspath(p) for p in inherited]))
    proc = subprocess.run(
        [sys.executable, '-m', 'd2lmini.launch', '-n', '2', '-s', '0', line],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr
    for name in ('worker 0', 'worker 1'):
        d2l_file, marker = next(l for l in proc.stdout.splitlines()
                                if l.startswith(f'[{name}] ')).split()[2:]
        assert d2l_file == str(ROOT / 'd2lmini' / '__init__.py')
        assert marker == str(mods / 'marker_mod.py')


def test_one_failed_worker_stops_everyone(tmp_path):
    result, piddir = _run(tmp_path, 'worker:1=late:exit:3', '*=sleep:60',
                          n=2, s=2)
    assert result.returncode == 1
    assert result.message == ('worker 1 exited with status 3; stopping '
                              'scheduler, server 0, server 1, worker 0')
    _assert_all_gone(piddir, _names(2, 2))


def test_a_process_killed_by_a_signal_is_named(tmp_path):
    result, piddir = _run(tmp_path, 'server=late:signal:9', '*=sleep:60',
                          n=1, s=1)
    assert result.returncode == 1
    assert result.message.startswith(
        'server 0 was killed by signal 9 (SIGKILL); stopping')
    _assert_all_gone(piddir)


def test_servers_outliving_the_workers_are_stopped_after_the_grace(tmp_path):
    # the servers outlive the workers by 0.5 s: shorter than the grace
    ok, piddir = _run(tmp_path, 'server=sleep:0.5', 'scheduler=sleep:0.5',
                      server_grace=30)
    assert (ok.returncode, ok.message) == (0, '')
    # they never end: stopped after the grace, and said so
    stuck, piddir = _run(tmp_path, 'server=sleep:60', 'scheduler=sleep:60',
                         server_grace=0.3)
    assert stuck.returncode == 1
    assert stuck.message == ('scheduler, server 0 still running 0.3 s after '
                             'every worker finished; stopping scheduler, '
                             'server 0')
    _assert_all_gone(piddir)


def test_timeout(tmp_path):
    result, piddir = _run(tmp_path, '*=sleep:60', timeout=0.5)
    assert result.returncode == 124
    assert result.message == ('timed out after 0.5 s; stopping scheduler, '
                              'server 0, worker 0, worker 1')
    _assert_all_gone(piddir)


def test_sigkill_after_the_kill_grace(tmp_path):
    result, piddir = _run(tmp_path, 'server=stubborn', 'worker:0=late:exit:1',
                          '*=sleep:60', kill_grace=0.3)
    assert result.returncode == 1
    said = [t for n, s, t in result.lines if n == 'launch']
    assert said[1:] == ['server 0 still running 0.3 s after SIGTERM; '
                        'killing it\n']
    _assert_all_gone(piddir, _names(2, 1))


def test_leftover_processes_in_a_group_are_killed(tmp_path):
    result, piddir = _run(tmp_path, 'worker:0=orphan', n=1, s=1)
    assert result.returncode == 0
    said = [t for n, s, t in result.lines if n == 'launch']
    assert said == ['worker 0 left processes in its group; killed them\n']
    assert 'worker-0.orphan' in _pids(piddir)
    _assert_all_gone(piddir)


def _start_cli(tmp_path, *rules, options=()):
    piddir = tmp_path / 'pids'
    piddir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, '-m', 'd2lmini.launch', '-n', '2', '-s', '1',
         '--kill-grace', '2', '--env', f'TEST_PIDDIR:{piddir}', *options,
         sys.executable, NODE, *rules],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=child_pythonpath(ROOT)))
    deadline = time.monotonic() + 30
    while len(list(piddir.iterdir())) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(list(piddir.iterdir())) == 4, 'the job did not start'
    return proc, piddir


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_to_the_launcher_stops_everything(tmp_path, sig):
    proc, piddir = _start_cli(tmp_path, '*=sleep:60')
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig
    assert f'[launch] interrupted by {sig.name}; stopping scheduler, ' \
           'server 0, worker 0, worker 1' in err
    _assert_all_gone(piddir)


def test_a_killed_launcher_takes_its_children_along(tmp_path):
    proc, piddir = _start_cli(tmp_path, '*=sleep:60')
    proc.kill()                              # no chance to clean up
    proc.communicate(timeout=30)
    _assert_all_gone(piddir)                 # Linux's parent-death signal


def test_ctrl_c_in_python_stops_the_job_then_raises(tmp_path):
    """launch() from Python (a notebook cell): Ctrl-C stops every process,
    then KeyboardInterrupt reaches the caller (a loop of runs ends too)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip('signals reach only the main thread')
    piddir = tmp_path / 'pids'
    piddir.mkdir()

    def interrupt():
        deadline = time.monotonic() + 30
        while len(list(piddir.iterdir())) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt, match='interrupted by SIGINT'):
        L.launch([sys.executable, NODE, '*=sleep:60'], 2, 1, echo=False,
                 env={'TEST_PIDDIR': str(piddir)}, timeout=60, kill_grace=2)
    _assert_all_gone(piddir, _names(2, 1))


def test_a_closed_stdout_does_not_stall_the_job(tmp_path):
    """``python -m d2lmini.launch ... | head -1``: the rest is drained."""
    launcher = shlex.join([sys.executable, '-m', 'd2lmini.launch', '-n', '2',
                           '-s', '1', 'for i in $(seq 30000); do echo $i; '
                           'done'])
    proc = subprocess.run(
        ['bash', '-c', f'{launcher} | head -1; exit ${{PIPESTATUS[0]}}'],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=child_pythonpath(ROOT)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count('\n') == 1


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize('argv,words', [
    (['-n', '0', 'python'], ['-n/--num-workers must be at least 1']),
    (['-n', '2', '-s', '-1', 'python'], ['-s/--num-servers', '0 or more']),
    (['-n', '2'], ['no command given']),
    (['-n', '2', '--'], ['no command given']),
    (['-n', '2', '--env', 'FOO', 'python'], ['--env expects NAME:VALUE',
                                             "'FOO'"]),
    (['-n', '2', '--env', '1X:2', 'python'], ['not a valid']),
    (['-n', '2', '--env', 'DMLC_ROLE:worker', 'python'],
     ['sets DMLC_ROLE itself']),
    (['-n', '2', '-H', '/nonexistent/hosts', 'python'],
     ['cannot read the hostfile', '/nonexistent/hosts']),
    (['-n', '2', '--launcher', 'ssh', 'python'], ['needs a hostfile']),
    (['-n', '2', '--timeout', '0', 'python'], ['--timeout must be positive']),
    (['-n', '2', '--port', '70000', 'python'], ['--port must be in']),
    (['-n', '2', '--sync-dst-dir', '/x', 'python'], ['is not supported']),
    (['-n', 'two', 'python'], ['invalid int value', "'two'"]),
])
def test_bad_command_lines_say_what_is_wrong(argv, words, capsys):
    assert L.main(argv) == 2
    err = capsys.readouterr().err
    assert 'usage: python -m d2lmini.launch' in err
    for w in words:
        assert w in err


def test_bad_hostfiles_and_bad_api_arguments(tmp_path):
    empty = tmp_path / 'empty'
    empty.write_text('# nobody\n\n')
    with pytest.raises(ValueError, match='lists no host'):
        L.launch(['python'], 2, hostfile=str(empty))
    badport = tmp_path / 'badport'
    badport.write_text('a:22\nb:ssh\n')
    with pytest.raises(ValueError, match=r'badport:2.*must be a number'):
        L.launch(['python'], 2, hostfile=str(badport))
    with pytest.raises(ValueError, match='sets DMLC_PS_ROOT_PORT itself'):
        L.launch(['x'], 1, env={'DMLC_PS_ROOT_PORT': '1'})
    with pytest.raises(ValueError, match='at least 1'):
        L.launch(['python'], 0)


def test_defaults_follow_mxnet(tmp_path):
    o = L._options(['-n', '3', 'python', 'train.py', '--lr', '0.1'])
    assert o.num_servers == 3                      # -s defaults to -n
    assert o.launcher == 'local'
    assert o.command == ['python', 'train.py', '--lr', '0.1']
    hosts = tmp_path / 'hosts'
    hosts.write_text('a\n')
    assert L._options(['-n', '1', '-H', str(hosts), 'x']).launcher == 'ssh'
    assert L._options(['-n', '1', '--port', '1234', 'x']).port == 1234
    specs = L._plan(L._options(['-n', '1', '--port', '1234', 'x']))
    assert {s.env['DMLC_PS_ROOT_PORT'] for s in specs} == {'1234'}
    specs = L._plan(L._options(['-n', '2', '-s', '0', 'x']))
    assert [s.name for s in specs] == ['worker 0', 'worker 1']


def test_mpi_without_mpiexec_is_a_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv('PATH', str(tmp_path))
    assert L.main(["-n", "1", "--launcher", "mpi", "x"]) == 1
    assert 'no mpiexec or mpirun on PATH' in capsys.readouterr().err


# ---------------------------------------------------------------- ssh
@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    log = tmp_path / 'ssh-log'
    log.mkdir()
    monkeypatch.setenv('PATH', FAKE_SSH_DIR + os.pathsep + os.environ['PATH'])
    monkeypatch.setenv('FAKE_SSH_LOG', str(log))
    monkeypatch.setenv('D2LMINI_PS_SECRET', 's3cr3t')
    hosts = tmp_path / 'hosts'
    hosts.write_text('# two "machines"\nhostA\n\n'
                     'alice@hostB:2222   # user and ssh port\n')

    def calls():
        return [p.read_bytes().decode().split('\0')[:-1]
                for p in sorted(log.iterdir())]
    return str(hosts), calls


@pytest.mark.parametrize('login_shell', ['bash', 'sh'])
def test_ssh_command_lines_and_run(tmp_path, fake_ssh, login_shell,
                                   monkeypatch):
    monkeypatch.setenv('FAKE_SSH_SHELL', login_shell)
    hostfile, calls = fake_ssh
    result, piddir = _run(tmp_path, n=2, s=1, hostfile=hostfile)
    assert (result.returncode, result.message) == (0, '')
    # scheduler on the first host, then servers and workers round-robin
    where = {'scheduler': 'hostA', 'server 0': 'hostA', 'worker 0': 'hostB',
             'worker 1': 'hostA'}
    envs = _envs(result.lines)
    assert {n: e['DMLC_NODE_HOST'] for n, e in envs.items()} == where
    for e in envs.values():
        assert e['DMLC_PS_ROOT_URI'] == 'hostA'
        assert e['DMLC_JOB_CLUSTER'] == 'ssh'
        assert e['D2LMINI_PS_SECRET'] == 's3cr3t'       # arrived ...
    argvs = calls()
    assert len(argvs) == 4
    assert not any('s3cr3t' in a for argv in argvs for a in argv)  # ... unseen
    by_role = {}
    for argv in argvs:
        ssh_opts, host, remote = argv[:-2], argv[-2], argv[-1]
        assert ssh_opts == ['-o', 'StrictHostKeyChecking=no'] + \
            (['-p', '2222'] if host == 'alice@hostB' else [])
        prefix = f'cd {shlex.quote(os.getcwd())} && export '
        assert remote.startswith(prefix)
        exports = dict(w.split('=', 1) for w in
                       shlex.split(remote[len(prefix):].split(' && ')[0]))
        assert exports['DMLC_NODE_HOST'] == host.replace('alice@', '')
        assert exports['DMLC_PS_ROOT_URI'] == 'hostA'
        assert exports['TEST_PIDDIR'] == str(piddir)
        assert 'IFS= read -r D2LMINI_PS_SECRET && export D2LMINI_PS_SECRET' \
            in remote
        assert remote.endswith(shlex.quote(shlex.join([sys.executable, NODE]))
                               + ' 2')                  # + the kill grace
        name = exports['DMLC_ROLE'] + (
            ' ' + exports.get('DMLC_WORKER_ID', exports.get('DMLC_SERVER_ID'))
            if exports['DMLC_ROLE'] != 'scheduler' else '')
        by_role[name] = host
    assert by_role == {n: h.replace('hostB', 'alice@hostB')
                       for n, h in where.items()}
    _assert_all_gone(piddir, _names(2, 1))


def test_ssh_failure_stops_the_remote_processes(tmp_path, fake_ssh):
    hostfile, calls = fake_ssh
    result, piddir = _run(tmp_path, 'worker:0=late:exit:3', '*=sleep:60',
                          n=2, s=1, hostfile=hostfile)
    assert result.returncode == 1
    assert result.message.startswith('worker 0 exited with status 3; stopping')
    _assert_all_gone(piddir, ['scheduler-0', 'server-0', 'worker-1'])


def test_a_killed_launcher_stops_the_remote_processes(tmp_path, fake_ssh):
    hostfile, calls = fake_ssh
    proc, piddir = _start_cli(tmp_path, '*=sleep:60',
                              options=['-H', hostfile])
    assert len(calls()) == 4
    proc.kill()                 # the ssh clients die, their stdin closes
    proc.communicate(timeout=30)
    _assert_all_gone(piddir)    # the remote watchers stopped the processes


def test_ssh_with_host_ip_runs_the_scheduler_here(tmp_path, fake_ssh):
    hostfile, calls = fake_ssh
    result, piddir = _run(tmp_path, n=1, s=1, hostfile=hostfile,
                          host_ip='127.0.0.1')
    assert result.returncode == 0
    envs = _envs(result.lines)
    assert envs['scheduler']['DMLC_PS_ROOT_URI'] == '127.0.0.1'
    assert envs['worker 0']['DMLC_PS_ROOT_URI'] == '127.0.0.1'
    assert len(calls()) == 2                      # server 0 and worker 0 only
    _assert_all_gone(piddir)


# ---------------------------------------------------------------- mpi
needs_mpi = pytest.mark.skipif(
    not (shutil.which('mpiexec') or shutil.which('mpirun')),
    reason='no mpiexec on PATH (the mpich wheel has one: pip install mpich)')


@needs_mpi
def test_mpi_ranks_become_scheduler_servers_workers(tmp_path):
    result, piddir = _run(tmp_path, n=2, s=2, launcher='mpi',
                          env={'TEST_ALL': '1'})
    assert (result.returncode, result.message) == (0, '')
    envs = {}        # the wrappers print '[name] ...' through mpiexec
    for name, stream, text in result.lines:
        if stream == 'stdout' and ' env {' in text:
            prefix, body = text.split(' env ', 1)
            envs[prefix.strip('[]')] = json.loads(body)
    assert sorted(envs) == sorted(_names(2, 2))
    for name, e in envs.items():
        assert e['DMLC_ROLE'] == name.split()[0]
        assert e['DMLC_JOB_CLUSTER'] == 'mpi' and e['TEST_ALL'] == '1'
        assert e['DMLC_PS_ROOT_URI'] == e['DMLC_NODE_HOST'] == '127.0.0.1'
        if name != 'scheduler':
            assert e[f'DMLC_{e["DMLC_ROLE"].upper()}_ID'] == name.split()[1]
    _assert_all_gone(piddir)


@needs_mpi
def test_mpi_failure_stops_every_rank(tmp_path):
    result, piddir = _run(tmp_path, 'worker:1=late:exit:3', '*=sleep:60', n=2,
                          s=1, launcher='mpi')
    assert result.returncode == 1
    assert result.message.startswith('worker 1 exited with status 3; stopping')
    _assert_all_gone(piddir, _names(2, 1))


def test_a_command_that_cannot_start_is_a_clear_error(tmp_path, capsys):
    assert L.main(['-n', '1', '-s', '1', str(tmp_path / 'no-such-program'),
                   'x']) == 1
    err = capsys.readouterr().err
    assert f'cannot start scheduler: {tmp_path}/no-such-program: No such ' \
        'file or directory' in err
    # a shell line that fails is a process that fails (status 127)
    result = L.launch(str(tmp_path / 'no-such-program'), 1, 1, echo=False,
                      capture=True)
    assert result.returncode == 1
    assert 'exited with status 127' in result.message


# ---------------------------------------------------------------- real job
DIST_WORKER = str(HERE / 'launch_helpers' / 'dist_worker.py')
FAST_HEARTBEAT = {'PS_HEARTBEAT_INTERVAL': '0.2', 'PS_HEARTBEAT_TIMEOUT': '5',
                  'OMP_NUM_THREADS': '1'}


def _dist_job(*args, timeout=120):
    return L.launch([sys.executable, DIST_WORKER, *args], 2, 1,
                    env=dict(FAST_HEARTBEAT, PYTHONPATH=child_pythonpath(ROOT)),
                    echo=False, capture=True, timeout=timeout,
                    server_grace=30, kill_grace=5)


def test_a_real_dist_sync_job_through_the_launcher():
    result = _dist_job()
    out = ''.join(f'[{n}] {t}' for n, s, t in result.lines)
    assert (result.returncode, result.message) == (0, ''), out
    results = {n: json.loads(t.split(' ', 1)[1]) for n, s, t in result.lines
               if s == 'stdout' and t.startswith('result ')}
    assert sorted(results) == ['worker 0', 'worker 1']
    for name, r in results.items():
        # the prefix is the process whose kv.rank is that rank
        assert r == {'rank': int(name.split()[1]), 'num_workers': 2,
                     'worker_id': int(name.split()[1]), 'ok': True}


def test_a_failed_worker_stops_a_real_job_at_once():
    result = _dist_job('fail-after-init')
    assert result.returncode == 1
    assert result.message.startswith('worker 1 exited with status 3; stopping')
    assert not any(t.startswith('result ') for n, s, t in result.lines)


@needs_mpi
def test_mpi_ranks_stop_when_the_launcher_is_killed(tmp_path):
    proc, piddir = _start_cli(tmp_path, '*=sleep:60',
                              options=['--launcher', 'mpi'])
    proc.kill()             # mpiexec gets SIGTERM, the wrappers lose the
    proc.communicate(timeout=30)       # launcher: each stops its process
    _assert_all_gone(piddir, _names(2, 1))


# ---------------------------------------------------------------- real ssh
@pytest.fixture
def real_sshd(tmp_path, monkeypatch):
    """A private sshd on a free loopback port (key login as this user) and
    an ``ssh`` on PATH that uses its key; skipped where there is no sshd."""
    sshd = shutil.which('sshd') or '/usr/sbin/sshd'
    if not (os.path.exists(sshd) and shutil.which('ssh')
            and shutil.which('ssh-keygen')):
        pytest.skip('no sshd/ssh/ssh-keygen (apt-get install openssh-server)')
    if os.geteuid() != 0:
        pytest.skip('a private sshd is set up here only as root')
    d = tmp_path / 'sshd'
    (d / 'bin').mkdir(parents=True)
    for key in ('host', 'user'):
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f',
                        str(d / key)], check=True, timeout=30)
    (d / 'authorized_keys').write_text((d / 'user.pub').read_text())
    port = L.plan._free_port('127.0.0.1')
    (d / 'config').write_text(
        f'Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host\n'
        f'AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\n'
        'UsePAM no\nPermitRootLogin prohibit-password\n')
    os.makedirs('/run/sshd', exist_ok=True)       # privilege separation
    server = subprocess.Popen([sshd, '-D', '-f', str(d / 'config'), '-E',
                               str(d / 'log')], start_new_session=True)
    try:
        client = d / 'bin' / 'ssh'
        client.write_text(
            f'#!/bin/sh\nexec {shutil.which("ssh")} -i {d}/user -o '
            'UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes '
            '"$@"\n')
        client.chmod(0o755)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            probe = subprocess.run(
                [str(client), '-o', 'StrictHostKeyChecking=no', '-p',
                 str(port), '127.0.0.1', 'true'], capture_output=True,
                timeout=20)
            if probe.returncode == 0:
                break
            time.sleep(0.1)
        else:
            pytest.skip(f'the private sshd did not answer: '
                        f'{(d / "log").read_text()[-300:]}')
        monkeypatch.setenv('PATH', f'{d / "bin"}{os.pathsep}'
                                   f'{os.environ["PATH"]}')
        hosts = tmp_path / 'hosts'
        hosts.write_text(f'127.0.0.1:{port}\nlocalhost:{port}\n')
        yield str(hosts)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


def test_real_ssh_runs_a_dist_sync_job_and_stops_remote_processes(
        tmp_path, real_sshd, monkeypatch):
    monkeypatch.setenv('D2LMINI_PS_SECRET', 'a "secret" with $pace')
    monkeypatch.setenv('PYTHONPATH', child_pythonpath(ROOT))
    # a real job over real ssh: signed messages, the closed-form value
    result = L.launch([sys.executable, DIST_WORKER], 2, 2, hostfile=real_sshd,
                      env=FAST_HEARTBEAT, echo=False, capture=True,
                      timeout=120)
    out = ''.join(f'[{n}] {t}' for n, s, t in result.lines)
    assert (result.returncode, result.message) == (0, ''), out
    assert sum('"ok": true' in t for n, s, t in result.lines) == 2, out
    # a failure: the processes behind the other ssh connections are stopped
    result, piddir = _run(tmp_path, 'worker:0=late:exit:3', '*=sleep:60',
                          hostfile=real_sshd)
    assert result.returncode == 1
    assert result.message.startswith('worker 0 exited with status 3; stopping')
    envs = _envs(result.lines)
    assert {e['D2LMINI_PS_SECRET'] for e in envs.values()} == \
        {'a "secret" with $pace'}
    _assert_all_gone(piddir, _names(2, 1))


@needs_mpi
def test_mpi_runs_a_real_dist_sync_job():
    result = L.launch([sys.executable, DIST_WORKER], 2, 1, launcher='mpi',
                      env=dict(FAST_HEARTBEAT, PYTHONPATH=child_pythonpath(ROOT)),
                      echo=False, capture=True, timeout=120)
    out = ''.join(t for n, s, t in result.lines)
    assert (result.returncode, result.message) == (0, ''), out
    for rank in (0, 1):          # mpiexec's lines carry the wrappers' prefix
        assert f'[worker {rank}] result {{"rank": {rank}, "num_workers": 2, ' \
               f'"worker_id": {rank}, "ok": true}}\n' in out


MPI_PROGRAM = '''
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
total = np.zeros(1)
c.Allreduce(np.array([c.rank + 1.0]), total)
print(f'rank {c.rank} of {c.size}: sum {total[0]:g}', flush=True)
'''


@needs_mpi
def test_mpi_workers_only_run_an_mpi_program(tmp_path):
    """-s 0 under mpiexec: the workers are the MPI ranks of one MPI program
    (how d2lmini.horovod jobs start: horovodrun's part)."""
    pytest.importorskip('mpi4py')
    script = tmp_path / 'allreduce.py'
    script.write_text(MPI_PROGRAM)
    result = L.launch([sys.executable, str(script)], 3, 0, launcher="mpi",
                    timeout=60, echo=False, capture=True)
    assert (result.returncode, result.message) == (0, '')
    lines = sorted(text.strip() for name, stream, text in result.lines
                   if stream == 'stdout')
    assert lines == [f'[worker {r}] rank {r} of 3: sum 6' for r in range(3)]
