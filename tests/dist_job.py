"""Run a real distributed job on loopback, for the tests: one scheduler,
S servers and W workers, each a process running the same script with its
``DMLC_*`` variables.  A free port is picked at run time, every wait is
bounded, and every process started is killed (by pid) before returning.
"""
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from conftest import child_pythonpath

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'tests', 'dist_scripts')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    """One process of the job; its output is read as it comes, by threads."""
    name: str
    popen: subprocess.Popen
    lines: list = field(default_factory=list)
    errs: list = field(default_factory=list)

    def __post_init__(self):
        self._readers = [threading.Thread(target=self._read, args=(f, buf), daemon=True)
                         for f, buf in ((self.popen.stdout, self.lines),
                                        (self.popen.stderr, self.errs))]
        for t in self._readers:
            t.start()

    @staticmethod
    def _read(f, buf):
        for line in f:
            buf.append(line)

    @property
    def rc(self):
        return self.popen.returncode

    @property
    def out(self):
        return ''.join(self.lines)

    @property
    def err(self):
        return ''.join(self.errs)

    def wait_for(self, text, timeout=30):
        """Wait until a line of stdout contains ``text``; False at timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return True
            if self.popen.poll() is not None:
                break
            time.sleep(0.02)
        return any(text in line for line in self.lines)


def job_env(num_workers, num_servers, port, extra=None):
    env = dict(os.environ, PYTHONPATH=child_pythonpath(ROOT), DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT=str(port), DMLC_NUM_WORKER=str(num_workers),
               DMLC_NUM_SERVER=str(num_servers), PYTHONUNBUFFERED='1',
               PS_HEARTBEAT_INTERVAL='0.2', PS_HEARTBEAT_TIMEOUT='3',
               PS_START_TIMEOUT='30', OMP_NUM_THREADS='1')
    env.pop('DMLC_ROLE', None)
    env.update(extra or {})
    return env


def start(script, num_workers, num_servers, args=(), env=None, roles=None, port=None,
          module=False):
    """Start the job's processes; returns ``[Proc]`` (scheduler, servers,
    workers, or the ``roles`` named, e.g. ``['scheduler', 'worker 1']``).
    ``module``: the scheduler and servers run ``python -m d2lmini.kvstore.dist``
    instead of the script."""
    port = port or free_port()
    base = job_env(num_workers, num_servers, port, env)
    path = script if os.path.isabs(script) else os.path.join(SCRIPTS, script)
    procs = []
    names = roles or (['scheduler'] + [f'server {i}' for i in range(num_servers)]
                      + [f'worker {i}' for i in range(num_workers)])
    for name in names:
        role, _, rank = name.partition(' ')
        e = dict(base, DMLC_ROLE=role)
        if rank:
            e['DMLC_WORKER_ID' if role == 'worker' else 'DMLC_SERVER_ID'] = rank
        argv = [sys.executable, path, *map(str, args)]
        if module and role != 'worker':
            argv = [sys.executable, '-m', 'd2lmini.kvstore.dist']
        procs.append(Proc(name, subprocess.Popen(
            argv, env=e, cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)))
    return procs


def finish(procs, timeout=60):
    """Wait (at most ``timeout`` s in all) for every process; kill the rest."""
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.popen.poll() is None:
            os.killpg(p.popen.pid, signal.SIGKILL)
            p.popen.wait()
            p.errs.append('\n[killed by the test: still running at the deadline]')
        for t in p._readers:
            t.join(timeout=5)
    return procs


def run(script, num_workers, num_servers, args=(), env=None, timeout=60):
    return finish(start(script, num_workers, num_servers, args, env), timeout)


def report(procs):
    return '\n'.join(f'--- {p.name}: rc={p.rc}\n{p.out}{p.err}' for p in procs)


@contextlib.contextmanager
def running(script, num_workers, num_servers, args=(), env=None, timeout=60):
    """``with running(...) as procs:`` a job that is finished (or killed) on exit."""
    procs = start(script, num_workers, num_servers, args, env)
    ok = False
    try:
        yield procs
        ok = True
    finally:
        finish(procs, timeout if ok else 0)
