"""Run a script as N MPI ranks with ``mpiexec``, for the tests and benchmarks.

    job = mpi_job.run('collectives.py', 3, args=[outdir], timeout=60)
    assert job.rc == 0, job.report()
    job.out(1)                     # what rank 1 printed

MPICH's ``mpiexec`` (hydra) starts every rank in a session of its own, so
killing the launcher's process group does not reach the ranks.  Every job
therefore carries a token of its own in the environment
(``D2LMINI_MPI_JOB``); when the job ends, or passes its deadline, the
launcher's group is killed and then every process whose environment holds
the token is killed by pid.  Nothing outlives ``run``.

Each rank's stdout and stderr go to files (``-outfile-pattern``), read back
when the job is over, so a rank that prints a lot can never block on a full
pipe.  ``needs_mpi`` skips a test where there is no MPICH ``mpiexec`` (the
first beside this Python or on the PATH is Open MPI's, say) or no mpi4py.
``benchmarks/bench_horovod.py`` starts its jobs with ``run`` as well.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field

from conftest import child_pythonpath
from d2lmini.launch.mpi import mpich_mpiexec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'tests', 'mpi_scripts')
TOKEN_VAR = 'D2LMINI_MPI_JOB'


def _have_mpi4py():
    import importlib.util
    return importlib.util.find_spec('mpi4py') is not None


# MPICH's: the options below (-outfile-pattern) are Hydra's
MPIEXEC, WHY_NOT = mpich_mpiexec()
if MPIEXEC is not None and not _have_mpi4py():
    MPIEXEC, WHY_NOT = None, 'no mpi4py (pip install mpi4py)'
HAVE_MPI = MPIEXEC is not None
try:                                   # benchmarks/bench_horovod.py runs jobs too
    import pytest
    needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason=f'needs MPI: {WHY_NOT}')
except ImportError:
    pass


@dataclass
class Job:
    """A finished job: exit status, what each rank printed, and timing."""
    n: int
    rc: int
    seconds: float
    killed: bool                      # still running at the deadline
    outs: list = field(default_factory=list)
    errs: list = field(default_factory=list)
    launcher: str = ''                # mpiexec's own stdout + stderr
    leftovers: list = field(default_factory=list)   # pids killed at the end

    def out(self, rank):
        return self.outs[rank]

    def err(self, rank):
        return self.errs[rank]

    def report(self):
        parts = [f'mpiexec -n {self.n}: rc={self.rc}, {self.seconds:.1f} s'
                 + (' (killed at the deadline)' if self.killed else '')]
        if self.launcher.strip():
            parts.append(f'--- mpiexec\n{self.launcher[-3000:]}')
        for r in range(self.n):
            parts.append(f'--- rank {r}\n{self.outs[r][-3000:]}'
                         f'{self.errs[r][-3000:]}')
        return '\n'.join(parts)


def _pids_with_token(token):
    """Pids of the processes whose environment holds ``TOKEN_VAR=token``."""
    needle = f'{TOKEN_VAR}={token}'.encode()
    found = []
    for name in os.listdir('/proc'):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f'/proc/{name}/environ', 'rb') as f:
                if needle in f.read().split(b'\0'):
                    found.append(int(name))
        except OSError:                 # gone, or not ours to read
            pass
    return found


def _gone(pid):
    """True once ``pid`` has exited (a zombie waiting for its reaper counts)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[-1].split()[0] in ('Z', 'X')
    except OSError:
        return True


def _kill_token(token, known=(), timeout=10.0):
    """SIGKILL every process of the job (by pid) and wait until it is gone.

    ``known``: pids seen with the token earlier (a process that is already
    exiting may no longer show its environment, but is waited for)."""
    killed, pids = set(), set(known)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids |= set(_pids_with_token(token))
        pids = {p for p in pids if not _gone(p)}
        if not pids:
            break
        for pid in pids - killed:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    return sorted(killed)


def job_env(extra=None):
    """The environment of every rank: this checkout first on PYTHONPATH,
    unbuffered output, one BLAS thread per rank (ranks share the cores)."""
    env = dict(os.environ)
    env['PYTHONPATH'] = child_pythonpath(ROOT)
    env.update(PYTHONUNBUFFERED='1', OMP_NUM_THREADS='1',
               OPENBLAS_NUM_THREADS='1', MKL_NUM_THREADS='1')
    for k in [k for k in env if k.startswith(('PMI_', 'HYDRA_', 'MPIR_'))]:
        del env[k]                       # never join an enclosing MPI job
    env.update({k: str(v) for k, v in (extra or {}).items()})
    return env


def run(script, n, args=(), env=None, timeout=60.0, python_args=()):
    """Run ``python script args...`` as ``n`` MPI ranks; return a ``Job``.

    ``script``: a path, or a file name in ``tests/mpi_scripts``.  At
    ``timeout`` seconds the job is killed (``Job.killed``).  Whatever
    happens, no process of the job is left when this returns.
    """
    if MPIEXEC is None:
        raise RuntimeError(f'mpi_job.run: {WHY_NOT}')
    path = script if os.path.isabs(script) else os.path.join(SCRIPTS, script)
    token = uuid.uuid4().hex
    e = job_env(env)
    e[TOKEN_VAR] = token
    with tempfile.TemporaryDirectory(prefix='mpi_job-') as tmp:
        argv = [MPIEXEC, '-n', str(n),
                '-outfile-pattern', os.path.join(tmp, 'out.%r'),
                '-errfile-pattern', os.path.join(tmp, 'err.%r'),
                sys.executable, *python_args, path, *map(str, args)]
        with open(os.path.join(tmp, 'launcher'), 'w+') as log:
            t0 = time.monotonic()
            p = subprocess.Popen(argv, env=e, cwd=ROOT, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
            killed = False
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                killed = True
            finally:
                seen = _pids_with_token(token)      # while they still show it
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                seconds = time.monotonic() - t0
                leftovers = _kill_token(token, seen)
            log.seek(0)
            launcher = log.read()

        def read(name):
            try:
                with open(os.path.join(tmp, name), errors='replace') as f:
                    return f.read()
            except FileNotFoundError:
                return ''
        return Job(n=n, rc=p.returncode, seconds=seconds, killed=killed,
                   outs=[read(f'out.{r}') for r in range(n)],
                   errs=[read(f'err.{r}') for r in range(n)],
                   launcher=launcher, leftovers=leftovers)
