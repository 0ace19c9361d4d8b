"""The ``mpi`` launcher: one ``mpiexec``, a small wrapper in each rank.

One ``mpiexec -n 1+S+W [hostfile] python -m d2lmini.launch ...`` whose
ranks each run a small wrapper: MPI rank 0 is the scheduler, ranks 1..S
the servers, the rest the workers (the rank comes from ``PMI_RANK``,
``OMPI_COMM_WORLD_RANK``, ``PMIX_RANK`` or ``SLURM_PROCID``).  Each
wrapper reports to the launcher over a TCP connection, so failures, the
timeout and Ctrl-C behave as with the other launchers even though
``mpiexec`` itself does not stop a job when a non-MPI program fails.
The hostfile, if any, is in your MPI's own format and passed to it.
With ``-s 0`` (no scheduler, no servers) the workers are the ranks of
one MPI program, which inherits its rank's connection to ``mpiexec``:
``python -m d2lmini.launch -n 4 -s 0 --launcher mpi python train.py``
runs a ``d2lmini.horovod`` job as ``horovodrun -np 4`` would, with the
launcher's prefixes and failure rules.

``_start_mpi`` runs on the launcher's side (``mpiexec`` and a ``_Rank`` per
process, fed by the wrappers' connections); ``_mpi_rank_main`` is the
wrapper (``python -m d2lmini.launch --mpi-control ...``).
"""
import hmac
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading

from .jobs import _POLL, LaunchError, _describe, _Job, _Output, _Signals
from .local import _Child, _local_argv
from .plan import _Spec, _child_env, _plan

_RANK_VARS = ('PMI_RANK', 'OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'SLURM_PROCID')


class _Rank:
    """One MPI rank as the launcher sees it, through its wrapper's socket."""

    def __init__(self, spec, mpiexec):
        self.spec, self.name, self.role = spec, spec.name, spec.role
        self.mpiexec, self.conn, self.code = mpiexec, None, None
        self.request = None            # b'term' / b'kill' once asked to stop
        self.lock = threading.Lock()

    def attach(self, conn, reader):
        with self.lock:                # a stop asked before it called in
            self.conn = conn
            if self.request:
                self._send(self.request)
        for line in reader:
            word, _, arg = line.decode().strip().partition(' ')
            if word == 'exit':
                self.code = int(arg)
                break
        else:
            self.code = 255           # the wrapper vanished without a word

    def poll(self):
        if self.code is None and self.conn is None and \
                self.mpiexec.poll() is not None:
            self.code = 255           # mpiexec ended before this rank began
        return self.code

    def describe(self, code):
        if code == 255 and self.conn is None:
            return f'{self.name} never started (mpiexec ended first)'
        return _describe(self.name, code)

    def signal(self, sig):
        with self.lock:
            self.request = b'kill' if sig == signal.SIGKILL else b'term'
            if self.conn is not None:
                self._send(self.request)

    def _send(self, word):
        try:
            self.conn.sendall(word + b'\n')
        except OSError:
            pass


def find_mpiexec():
    """The ``mpiexec`` beside this Python (the ``mpich`` wheel's, in a venv),
    else the first on the PATH, else None."""
    return (shutil.which('mpiexec', path=os.path.dirname(sys.executable))
            or shutil.which('mpiexec'))


_KINDS = {}


def mpiexec_kind(exe):
    """``'mpich'`` (MPICH's Hydra), ``'openmpi'`` or ``'unknown'``, from what
    ``exe --version`` prints."""
    if exe not in _KINDS:
        try:
            r = subprocess.run([exe, '--version'], capture_output=True, text=True,
                               timeout=30, stdin=subprocess.DEVNULL)
            text = r.stdout + r.stderr
        except (OSError, subprocess.TimeoutExpired):
            text = ''
        _KINDS[exe] = ('mpich' if 'HYDRA' in text else
                       'openmpi' if 'Open MPI' in text or 'OpenRTE' in text
                       else 'unknown')
    return _KINDS[exe]


def mpich_mpiexec():
    """``(path, None)`` for MPICH's ``mpiexec``, or ``(None, why not)``.

    The course's MPI jobs (``d2l.mpirun``, Horovod's tests) need MPICH's:
    mpi4py comes from the ``mpich`` wheel, and they use Hydra's options.
    """
    exe = find_mpiexec()
    if exe is None:
        return None, (f'no mpiexec beside {sys.executable} or on the PATH: '
                      'pip install mpich (requirements.txt)')
    kind = mpiexec_kind(exe)
    if kind != 'mpich':
        return None, (f"{exe} is {'Open MPI' if kind == 'openmpi' else 'not MPICH'}'s "
                      "mpiexec; MPICH's is needed: pip install mpich "
                      f'(requirements.txt) puts one beside {sys.executable}')
    return exe, None


def _mpiexec_argv(o, nprocs):
    exe = shutil.which('mpiexec') or shutil.which('mpirun')
    if exe is None:
        raise LaunchError('--launcher mpi: no mpiexec or mpirun on PATH '
                          '(install an MPI, e.g. `pip install mpich`, or use '
                          '--launcher local or ssh)')
    version = subprocess.run([exe, '--version'], capture_output=True,
                             text=True, timeout=30).stdout
    argv = [exe, '-n', str(nprocs)]
    if 'Open MPI' in version or 'OpenRTE' in version:
        if os.geteuid() == 0:
            argv.append('--allow-run-as-root')
        argv += ['--hostfile', o.hostfile] if o.hostfile \
            else ['--oversubscribe']
    elif o.hostfile:
        argv += ['-f', o.hostfile]
    return argv


def _start_mpi(o, specs, output):
    mpiexec = _mpiexec_argv(o, len(specs))
    token = secrets.token_hex(16).encode()
    here = '127.0.0.1' if not o.hosts else _address_towards(o.hosts[0][0])
    server = socket.create_server(('127.0.0.1' if not o.hosts else '', 0))
    server.settimeout(_POLL)
    control = f'{here}:{server.getsockname()[1]}:{token.decode()}'
    root = specs[0].env['DMLC_PS_ROOT_URI']
    wrapper = [sys.executable, '-m', 'd2lmini.launch', '--mpi-control',
               control, '--launcher', 'mpi', '-n', str(o.num_workers),
               '-s', str(o.num_servers),
               '--port', specs[0].env['DMLC_PS_ROOT_PORT'],
               '--kill-grace', f'{o.kill_grace:g}']
    if root != '127.0.0.1':
        wrapper += ['--host-ip', root]
    for option, pairs in (('--env', o.env), ('--env-server', o.env_server),
                          ('--env-worker', o.env_worker)):
        for item in pairs:
            wrapper += [option, item]
    wrapper += ['--', *o.command]
    env = _child_env({'PYTHONUNBUFFERED': '1'})
    try:
        mpi = _Child(_Spec('mpiexec', 0, {}), mpiexec + wrapper, env, output,
                     prefix=False)
    except OSError as e:
        server.close()
        raise LaunchError(f'cannot start {mpiexec[0]}: {e.strerror}') from None
    ranks = [_Rank(s, mpi.popen) for s in specs]
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:                  # 'hello TOKEN RANK' within 10 s, or out
                conn.settimeout(10)
                reader = conn.makefile('rb')
                hello = reader.readline(200).split()
                word, tok, rank = (hello + [b''] * 3)[:3]
                conn.settimeout(None)
            except OSError:
                conn.close()
                continue
            if word != b'hello' or not hmac.compare_digest(tok, token) or \
                    not rank.isdigit() or int(rank) >= len(ranks) or \
                    ranks[int(rank)].conn is not None:
                conn.close()
                continue
            threading.Thread(target=ranks[int(rank)].attach,
                             args=(conn, reader), daemon=True).start()
    threading.Thread(target=accept, daemon=True).start()

    def close():
        stop.set()
        server.close()
        for r in ranks:
            if r.conn is not None:
                r.conn.close()
    return ranks + [mpi], close


def _address_towards(host):
    """This machine's address on the route to ``host`` (no packet sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((host, 9))
            return s.getsockname()[0]
    except OSError:
        return socket.gethostbyname(socket.gethostname())


def _mpi_rank_main(o):
    """Inside mpiexec: run this rank's role, report to the launcher."""
    host, port, token = o.mpi_control.rsplit(':', 2)
    rank = next((os.environ[v] for v in _RANK_VARS if v in os.environ), None)
    if rank is None:
        sys.exit('[launch] no MPI rank in the environment (looked for '
                 + ', '.join(_RANK_VARS) + ')')
    specs = _plan(o)
    spec = specs[int(rank)]
    spec.env['DMLC_NODE_HOST'] = _address_towards(
        spec.env['DMLC_PS_ROOT_URI'])
    try:
        conn = socket.create_connection((host, int(port)), timeout=30)
    except OSError as e:
        sys.exit(f'[launch] rank {rank} cannot reach the launcher at '
                 f'{host}:{port}: {e}')
    conn.settimeout(None)
    conn.sendall(f'hello {token} {rank}\n'.encode())
    output = _Output()
    # the command may be an MPI program itself (d2lmini.horovod with -s 0):
    # it inherits this rank's connection to mpiexec's process manager
    pmi = tuple(int(os.environ[v]) for v in ('PMI_FD',)
                if os.environ.get(v, '').isdigit())
    child = _Child(spec, _local_argv(o.command), _child_env(spec.env), output,
                   pass_fds=pmi)
    o.timeout, o.server_grace = None, float('inf')
    job = _Job([child], output, o, quiet=True)

    def listen():
        for line in conn.makefile('rb'):
            if line.strip() == b'kill':
                child.signal(signal.SIGKILL)
            elif job.stop_request is None:
                job.stop_request = (143, 'stopped by the launcher')
        if job.stop_request is None:          # the launcher is gone
            job.stop_request = (143, 'lost the launcher')
    threading.Thread(target=listen, daemon=True).start()
    with _Signals(job):
        job.run()
    code = child.poll()
    try:
        conn.sendall(f'exit {code}\n'.encode())
        conn.close()
    except OSError:
        pass
    return code if code >= 0 else 128 - code
