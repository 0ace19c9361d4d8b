"""Run a real distributed job on loopback, for the tests: one scheduler,
S servers and W workers, each a process running the same script with its
``DMLC_*`` variables.  A free port is picked at run time, every wait is
bounded, and every process started is killed (by pid) before returning.
"""
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'tests', 'dist_scripts')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    out: str = ''
    err: str = ''

    @property
    def rc(self):
        return self.popen.returncode


def job_env(num_workers, num_servers, port, extra=None):
    env = dict(os.environ, PYTHONPATH=ROOT, DMLC_PS_ROOT_URI='127.0.0.1',
               DMLC_PS_ROOT_PORT=str(port), DMLC_NUM_WORKER=str(num_workers),
               DMLC_NUM_SERVER=str(num_servers), PYTHONUNBUFFERED='1',
               PS_HEARTBEAT_INTERVAL='0.2', PS_HEARTBEAT_TIMEOUT='3',
               PS_START_TIMEOUT='30', OMP_NUM_THREADS='1')
    env.pop('DMLC_ROLE', None)
    env.update(extra or {})
    return env


def start(script, num_workers, num_servers, args=(), env=None, roles=None):
    """Start the job's processes; returns ``[Proc]`` (scheduler, servers, workers)."""
    port = free_port()
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
        procs.append(Proc(name, subprocess.Popen(
            [sys.executable, path, *map(str, args)], env=e, cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)))
    return procs


def finish(procs, timeout=60):
    """Wait (at most ``timeout`` s in all) for every process; kill the rest."""
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.out, p.err = p.popen.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.popen.poll() is None:
            os.killpg(p.popen.pid, signal.SIGKILL)
            p.out, p.err = p.popen.communicate()
            p.err += '\n[killed by the test: still running at the deadline]'
    return procs


def run(script, num_workers, num_servers, args=(), env=None, timeout=60):
    return finish(start(script, num_workers, num_servers, args, env), timeout)


def report(procs):
    return '\n'.join(f'--- {p.name}: rc={p.rc}\n{p.out}{p.err}' for p in procs)
