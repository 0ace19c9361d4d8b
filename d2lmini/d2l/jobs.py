"""The processes of a distributed job, started from a notebook (chapters
11-13): a parameter-server job by hand (:func:`ps_node_names`,
:func:`dmlc_env`, :class:`ps_job`, :func:`ps_log`, :func:`wait_all`), an
MPI job (:func:`mpirun`), and what their processes report
(:func:`results`).  Every wait has a limit, and every process started is
stopped, even after an error.
"""
import os
import sys
import time


def free_port(host='127.0.0.1'):
    """A TCP port nobody listens on right now (the OS picks it)."""
    import socket
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ps_node_names(num_workers, num_servers):
    """The processes of a parameter-server job, in the order they start.

    >>> d2l.ps_node_names(2, 1)
    ['scheduler', 'server 0', 'worker 0', 'worker 1']
    """
    return (['scheduler'] + [f'server {i}' for i in range(num_servers)]
            + [f'worker {i}' for i in range(num_workers)])


def dmlc_env(name, port, num_workers, num_servers, root_uri='127.0.0.1'):
    """The ``DMLC_*`` variables of the job's process ``name`` (one of
    :func:`ps_node_names`): its role, where the scheduler listens, how many
    servers and workers there are, and its rank within its role.

    >>> d2l.dmlc_env('worker 1', 9000, 2, 1)['DMLC_WORKER_ID']
    '1'
    """
    role, _, rank = name.partition(' ')
    env = {'DMLC_ROLE': role, 'DMLC_PS_ROOT_URI': root_uri,
           'DMLC_PS_ROOT_PORT': str(port),
           'DMLC_NUM_SERVER': str(num_servers),
           'DMLC_NUM_WORKER': str(num_workers)}
    if rank:
        env[f'DMLC_{role.upper()}_ID'] = rank
    return env


def ps_log(log_dir, name):
    """The path of the output of the job's process ``name`` in ``log_dir``."""
    return os.path.join(log_dir, name.replace(' ', '-') + '.log')


def _this_package_first(env):
    # children import this d2lmini, whatever the PYTHONPATH they inherit
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    paths = [os.path.abspath(p) for p in env.get('PYTHONPATH', '').split(
        os.pathsep) if p]
    return os.pathsep.join([root] + [p for p in paths if p != root])


class ps_job:
    """Start a parameter-server job by hand: the scheduler, the servers
    and the workers, each running ``argv`` with its :func:`dmlc_env`, in
    ``cwd`` (default ``log_dir``), in a session of its own, with its output
    in the file ``ps_log(log_dir, name)``.  ``env`` is added to every
    process's environment; with ``hosts`` (objects with ``addr`` and
    ``popen``, such as ``tests/netns.py``'s), process ``i`` runs on
    ``hosts[i]`` and announces its address.  The ``with`` block gets
    ``{name: Popen}``; at its end every process still running is killed by
    its pid, even after an error.  ``started``, a list, gets every process.

    Examples
    --------
    >>> with d2l.ps_job([python, 'hello.py'], 2, 1, log_dir=workdir) as procs:
    ...     codes = d2l.wait_all(procs, timeout=60)
    >>> codes
    {'scheduler': 0, 'server 0': 0, 'worker 0': 0, 'worker 1': 0}
    """

    def __init__(self, argv, num_workers=2, num_servers=1, env=None,
                 hosts=None, log_dir='.', cwd=None, started=None):
        self.argv, self.env, self.hosts = list(argv), env or {}, hosts
        self.num_workers, self.num_servers = num_workers, num_servers
        self.log_dir, self.cwd = log_dir, cwd or log_dir
        self.started = started if started is not None else []
        self.procs = {}

    def __enter__(self):
        import subprocess
        port = free_port()
        root_uri = self.hosts[0].addr if self.hosts else '127.0.0.1'
        try:
            for i, name in enumerate(ps_node_names(self.num_workers,
                                                   self.num_servers)):
                env = dict(os.environ, **self.env, **dmlc_env(
                    name, port, self.num_workers, self.num_servers, root_uri))
                env['PYTHONPATH'] = _this_package_first(env)
                start = subprocess.Popen
                if self.hosts:
                    env['DMLC_NODE_HOST'] = self.hosts[i].addr
                    start = self.hosts[i].popen
                with open(ps_log(self.log_dir, name), 'w') as log:
                    self.procs[name] = start(
                        self.argv, env=env, cwd=self.cwd, stdout=log,
                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        start_new_session=True)
                self.started.append(self.procs[name])
        except BaseException:
            self.__exit__()
            raise
        return self.procs

    def __exit__(self, *exc):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
        for p in self.procs.values():
            p.wait(timeout=10)
        return False


def wait_all(procs, timeout):
    """``{name: exit status}`` of ``procs`` (``{name: Popen}``) after at
    most ``timeout`` seconds in all; None for a process still running.

    >>> d2l.wait_all({'sleeper': subprocess.Popen(['sleep', '9'])}, 0.1)
    {'sleeper': None}
    """
    import subprocess
    deadline = time.monotonic() + timeout
    for p in procs.values():
        try:
            p.wait(timeout=max(0.01, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    return {name: p.poll() for name, p in procs.items()}


def results(text):
    """The JSON values of the lines of ``text`` that start with
    ``RESULT `` (how the chapters' scripts report), sorted by their
    ``'rank'`` when they have one.  Ranks that share one output must write
    each line in one call (``sys.stdout.write(f'RESULT {...}\\n')``):
    ``print('RESULT', ...)`` makes several writes when Python's output is
    unbuffered, and the ranks' pieces interleave.

    >>> d2l.results('noise\\nRESULT {"rank": 1}\\nRESULT {"rank": 0}\\n')
    [{'rank': 0}, {'rank': 1}]
    """
    import json
    found = []
    for line in text.splitlines():
        if line.startswith('RESULT '):
            try:
                found.append(json.loads(line[len('RESULT '):]))
            except ValueError:
                # processes that share an output (the ranks under mpiexec)
                # mix their lines unless each line is a single write
                raise ValueError(
                    f'a RESULT line that is not JSON: {line[:200]!r}; '
                    'write each one with a single sys.stdout.write, '
                    'not print(), so that lines do not mix') from None
    return sorted(found, key=lambda r: r.get('rank', 0)
                  if isinstance(r, dict) else 0)


def mpirun(n, argv, cwd, timeout=60, env=None, check=True, started=None):
    """Run ``mpiexec -n n python *argv`` in ``cwd``; ``(exit status,
    output)``.  ``mpiexec`` runs in a session of its own with its output in
    a file (a full pipe would block the ranks); after ``timeout`` seconds,
    an error or an interrupt, its process group gets ``SIGTERM``, which
    ``mpiexec`` passes on to every rank, and ``SIGKILL`` five seconds
    later if it is still there.  With ``check``, a non-zero status raises
    ``RuntimeError`` with the end of the output.  ``started``, a list,
    gets the ``mpiexec`` process.

    Examples
    --------
    >>> status, out = d2l.mpirun(2, ['hello.py'], cwd=workdir)
    >>> d2l.results(out)                   # each rank's RESULT line
    """
    import signal
    import subprocess
    import tempfile
    from ..launch.mpi import mpich_mpiexec
    python = sys.executable
    mpiexec, why = mpich_mpiexec()
    if mpiexec is None:
        raise RuntimeError(f'mpirun: {why} (see the appendix)')
    with tempfile.TemporaryFile('w+') as log:
        proc = subprocess.Popen(
            [mpiexec, '-n', str(n), python, *argv], cwd=cwd,
            env=dict(os.environ, **(env or {})), stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        if started is not None:
            started.append(proc)
        try:
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:          # timed out, or interrupted
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        log.seek(0)
        out = log.read()
    if check and proc.returncode != 0:
        raise RuntimeError(f'mpiexec -n {n} {" ".join(argv)} exited with '
                           f'{proc.returncode}:\n{out[-3000:]}')
    return proc.returncode, out
