"""``python -m d2lmini.launch``: start a parameter-server job, as MXNet does.

Why one long file: one command, whose parts (the local, ssh and mpi ways of
starting processes, and the supervision that stops the whole job when one
process dies) only make sense together; ``launch`` at the bottom is the
place to start reading.

A distributed store needs one scheduler, S servers and W workers, each told
its role and where the scheduler listens through the ``DMLC_*`` environment
variables.  The launcher starts all of them with the *same* command, watches
them, and makes the job fail fast and cleanly::

    python -m d2lmini.launch -n 2 -s 1 python train.py --kv-store dist_sync

MXNet's equivalent is ``python tools/launch.py -n 2 -s 1 --launcher local
python train.py --kv-store dist_sync``; the options keep MXNet's names
(``-n``, ``-s``, ``-H``, ``--launcher``, ``--env-server``, ``--env-worker``)
and meanings.  ``-s`` defaults to ``-n``.  ``-s 0`` starts only the workers
(no scheduler), for jobs that do not use a parameter server.

Every process gets ``DMLC_ROLE``, ``DMLC_PS_ROOT_URI``,
``DMLC_PS_ROOT_PORT`` (a free port picked at run time unless ``--port``),
``DMLC_NUM_SERVER``, ``DMLC_NUM_WORKER``, ``DMLC_NODE_HOST`` (its host),
``DMLC_SERVER_ID`` / ``DMLC_WORKER_ID`` (its rank within its role, so that
the output prefix ``[worker 1]`` is the process whose ``kv.rank`` is 1),
``DMLC_JOB_CLUSTER`` (the launcher mode) and
the ``--env NAME:VALUE`` pairs (``--env-server`` / ``--env-worker``: servers
or workers only).  ``PYTHONPATH`` starts with the directory of this
``d2lmini`` and keeps the launcher's entries, made absolute.
``PYTHONUNBUFFERED=1`` is set (unless ``--env`` sets
it), so that output arrives line by line.

Launcher modes (``--launcher``; the default is ``ssh`` when a hostfile is
given with ``-H``, ``local`` otherwise):

``local``
    every process is a child of the launcher on this machine, in its own
    process group; ``DMLC_PS_ROOT_URI`` and ``DMLC_NODE_HOST`` are
    ``127.0.0.1``.
``ssh``
    one ``ssh -o StrictHostKeyChecking=no [-p PORT] HOST 'cd CWD && export
    NAME=VALUE ... && ...'`` per process.  The hostfile has one host per line
    (``[user@]host[:sshport]``, ``#`` comments); servers, then workers, are
    placed round-robin from its first host, and the scheduler runs on that
    first host (``DMLC_PS_ROOT_URI`` is its name), unless ``--host-ip ADDR``
    is given: then the scheduler runs on this machine, bound to ``ADDR``, as
    dmlc-core's tracker does.  The port is one free here: give ``--port``
    if it may be taken there.  The remote side (it needs ``bash``) runs the
    command in its own process group with a watcher on ssh's standard
    input: when the launcher stops a process, or dies, the connection closes
    and the remote process group is terminated too.  Variables whose names
    look secret (``SECRET``, ``TOKEN``, ``PASSWORD``, ``..._KEY``; e.g.
    ``D2LMINI_PS_SECRET``) travel on ssh's standard input, never on a
    command line that ``ps`` shows.
    ``PYTHONPATH``, thread-count variables and the ``D2LMINI_*``, ``DMLC_*``,
    ``PS_*`` and ``MXNET_*`` settings of this shell are passed on.
``mpi``
    one ``mpiexec -n 1+S+W [hostfile] python -m d2lmini.launch ...`` whose
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

A command of several words is run as given (``python train.py --lr 0.1``);
a single word is a shell command line (``'python train.py > log.$DMLC_ROLE'``).

Failure semantics.  Each output line is prefixed with its process
(``[worker 1] loss 0.3``, ``[server 0] ...``, ``[scheduler] ...``).  When
every worker has exited 0 and the servers and scheduler then exit 0, the
launcher exits 0.  When any process exits non-zero or is killed, on Ctrl-C
(SIGINT, SIGTERM or SIGHUP to the launcher), after ``--timeout`` seconds, or
when servers are still running ``--server-grace`` seconds (30) after the last
worker finished, the launcher sends SIGTERM to every remaining process group,
SIGKILL ``--kill-grace`` seconds (5) later, says why on stderr (``[launch]
worker 1 exited with status 3``), and exits non-zero: 1 for a failed process,
124 for the timeout, 128+N for signal N.  Processes a finished process
left in its group are killed (and named).  Even when the launcher itself is
killed (``kill -9``), Linux sends SIGTERM to what it started (local
processes, ssh clients, mpiexec), and an ssh client's end stops its remote
process.

From Python (a notebook, a benchmark)::

    from d2lmini.launch import launch
    result = launch(['python', 'train.py'], num_workers=2, num_servers=1,
                    capture=True, echo=False)
    result.returncode, result.lines[:3]   # lines: (name, stream, text)
"""
import argparse
import hmac
import os
import re
import secrets
import shlex
import shutil
import signal
import site
import socket
import subprocess
import sys
import threading
import time
from collections import namedtuple

__all__ = ['launch', 'main', 'LaunchResult', 'LaunchError']

LaunchResult = namedtuple('LaunchResult', 'returncode message lines')
LaunchResult.__doc__ = """What a launch ended with: the exit status the
command line would have, the launcher's explanation ('' on success) and the
captured output lines ``(name, 'stdout' | 'stderr', text)`` (with
``capture=True``)."""

# The variables the launcher owns, and the option that sets each instead.
_OWNED = {'DMLC_ROLE': '-n/-s', 'DMLC_NUM_WORKER': '-n',
          'DMLC_NUM_SERVER': '-s', 'DMLC_WORKER_ID': '-n',
          'DMLC_SERVER_ID': '-s',
          'DMLC_PS_ROOT_PORT': '--port', 'DMLC_PS_ROOT_URI': '--host-ip'}
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')
_SECRET = re.compile(r'SECRET|TOKEN|PASSWORD|PASSWD|_KEY\Z|^KEY\Z', re.I)
# What ssh passes on from this shell (remote shells start with a bare env).
_FORWARD = re.compile(r'(D2LMINI_|DMLC_|PS_|MXNET_)\w+\Z|PYTHONPATH\Z|'
                      r'(OMP|MKL|OPENBLAS)_NUM_THREADS\Z|LD_LIBRARY_PATH\Z')
_RANK_VARS = ('PMI_RANK', 'OMPI_COMM_WORLD_RANK', 'PMIX_RANK', 'SLURM_PROCID')
_POLL = 0.05                       # seconds between looks at the processes


# --------------------------------------------------------------------------
# Options
class _UsageError(ValueError):
    """A bad command line; the message says what to change."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message)


def _parser():
    p = _Parser(
        prog='python -m d2lmini.launch',
        description='Launch a scheduler, S servers and W workers running '
                    'the same command (MXNet tools/launch.py).',
        epilog='example: python -m d2lmini.launch -n 2 -s 1 '
               'python train.py --kv-store dist_sync')
    p.add_argument('-n', '--num-workers', type=int, required=True,
                   help='number of workers')
    p.add_argument('-s', '--num-servers', type=int,
                   help='number of servers (default: as many as workers)')
    p.add_argument('--launcher', choices=['local', 'ssh', 'mpi'],
                   help='where processes run (default: ssh with -H, else '
                        'local)')
    p.add_argument('-H', '--hostfile',
                   help='hosts for ssh (host[:port] per line) or mpi')
    p.add_argument('--env', action='append', default=[], metavar='NAME:VALUE',
                   help='set a variable for every process (repeatable)')
    p.add_argument('--env-server', action='append', default=[],
                   metavar='NAME:VALUE', help='... for the servers only')
    p.add_argument('--env-worker', action='append', default=[],
                   metavar='NAME:VALUE', help='... for the workers only')
    p.add_argument('--port', type=int,
                   help="the scheduler's port (default: a free one)")
    p.add_argument('--host-ip',
                   help="the scheduler's address for ssh/mpi (ssh: the "
                        'scheduler then runs on this machine)')
    p.add_argument('--timeout', type=float,
                   help='stop everything after this many seconds')
    p.add_argument('--server-grace', type=float, default=30.0,
                   help='seconds servers and scheduler get to exit after the '
                        'workers finished (default 30)')
    p.add_argument('--kill-grace', type=float, default=5.0,
                   help='seconds between SIGTERM and SIGKILL (default 5)')
    p.add_argument('--mpi-control', help=argparse.SUPPRESS)   # rank wrapper
    p.add_argument('--sync-dst-dir', help=argparse.SUPPRESS)  # MXNet's
    p.add_argument('command', nargs=argparse.REMAINDER,
                   help='the command every process runs')
    return p


def _pairs(parser, values, option):
    out = {}
    for item in values:
        name, sep, value = item.partition(':')
        if not sep:
            parser.error(f"{option} expects NAME:VALUE, got {item!r} "
                         f"(e.g. {option} OMP_NUM_THREADS:1)")
        if not _NAME.match(name):
            parser.error(f'{option} {item!r}: {name!r} is not a valid '
                         'environment variable name')
        if name in _OWNED:
            parser.error(f'{option} {item!r}: the launcher sets {name} '
                         f'itself; use {_OWNED[name]} instead')
        out[name] = value
    return out


def _options(argv):
    parser = _parser()
    o = parser.parse_args(argv)
    if o.sync_dst_dir:
        parser.error('--sync-dst-dir (MXNet copies the directory with rsync) '
                     'is not supported: run from a directory that every host '
                     'has at the same path (shared, or copied beforehand)')
    if o.command and o.command[0] == '--':
        o.command = o.command[1:]
    if not o.command:
        parser.error('no command given: say what every process runs, e.g. '
                     'python -m d2lmini.launch -n 2 python train.py')
    if o.num_workers < 1:
        parser.error(f'-n/--num-workers must be at least 1 (got '
                     f'{o.num_workers})')
    if o.num_servers is None:
        o.num_servers = o.num_workers
    if o.num_servers < 0:
        parser.error(f'-s/--num-servers must be 0 or more (got '
                     f'{o.num_servers})')
    for name in ('timeout', 'server_grace', 'kill_grace'):
        value = getattr(o, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive "
                         f'(got {value})')
    if o.port is not None and not 0 < o.port < 65536:
        parser.error(f'--port must be in 1..65535 (got {o.port})')
    if o.launcher is None:
        o.launcher = 'ssh' if o.hostfile else 'local'
    if o.launcher == 'ssh' and not o.hostfile:
        parser.error('the ssh launcher needs a hostfile: -H FILE, one host '
                     '(or host:port) per line')
    if o.launcher == 'local' and o.hostfile:
        parser.error('--launcher local runs everything on this machine; '
                     'drop -H or use --launcher ssh')
    if o.hostfile:
        try:
            o.hosts = _read_hostfile(o.hostfile)
        except OSError as e:
            parser.error(f'cannot read the hostfile {o.hostfile!r}: '
                         f'{e.strerror}')
        except ValueError as e:
            parser.error(str(e))
    else:
        o.hosts = None
    o.env_all = _pairs(parser, o.env, '--env')
    o.env_role = {'server': _pairs(parser, o.env_server, '--env-server'),
                  'worker': _pairs(parser, o.env_worker, '--env-worker'),
                  'scheduler': {}}
    return o


def _read_hostfile(path):
    """``[(host, ssh_port or None)]``: one host per line, ``#`` comments;
    an MPI hostfile's ``slots=`` / ``:nprocs`` are tolerated for its name."""
    hosts = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.split('#', 1)[0].split('slots=', 1)[0].strip()
            if not line:
                continue
            host, _, port = line.split()[0].partition(':')
            if port and not port.isdigit():
                raise ValueError(f'{path}:{number}: {line!r}: the port after '
                                 "':' must be a number")
            hosts.append((host, int(port) if port else None))
    if not hosts:
        raise ValueError(f'the hostfile {path!r} lists no host')
    return hosts


# --------------------------------------------------------------------------
# Who runs where
class _Spec:
    """One process of the job: its role, its rank and its variables."""

    def __init__(self, role, rank, env, host='127.0.0.1', ssh_port=None):
        self.role, self.rank, self.env = role, rank, env
        self.host, self.ssh_port = host, ssh_port

    @property
    def name(self):
        if self.role in ('server', 'worker'):
            return f'{self.role} {self.rank}'
        return self.role                 # scheduler, mpiexec


def _address(destination):
    """The host of an ssh destination ``[user@]host``."""
    return destination.rpartition('@')[2]


def _free_port(host):
    """A port free on ``host`` now (on any address if ``host`` is not ours)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, 0))
        except OSError:
            s.bind(('', 0))
        return s.getsockname()[1]


def _plan(o):
    """The processes of the job, scheduler first, with their variables."""
    root = o.host_ip or (_address(o.hosts[0][0]) if o.hosts else '127.0.0.1')
    bind = root if o.launcher == 'local' or o.host_ip else ''
    port = o.port or _free_port(bind)
    common = {'DMLC_PS_ROOT_URI': root, 'DMLC_PS_ROOT_PORT': str(port),
              'DMLC_NUM_SERVER': str(o.num_servers),
              'DMLC_NUM_WORKER': str(o.num_workers),
              'DMLC_JOB_CLUSTER': o.launcher}
    roles = ([('scheduler', 0)] if o.num_servers else []) + \
        [('server', i) for i in range(o.num_servers)] + \
        [('worker', i) for i in range(o.num_workers)]
    specs = []
    for place, (role, rank) in enumerate(roles):
        env = dict(common, DMLC_ROLE=role)
        if role != 'scheduler':
            env[f'DMLC_{role.upper()}_ID'] = str(rank)
        host, ssh_port = '127.0.0.1', None
        if o.launcher == 'ssh':
            if role == 'scheduler':
                host, ssh_port = (None, None) if o.host_ip else o.hosts[0]
            else:        # servers then workers, round-robin (dmlc-core's way)
                host, ssh_port = o.hosts[(place - bool(o.num_servers))
                                         % len(o.hosts)]
        env['DMLC_NODE_HOST'] = _address(host) if host else o.host_ip
        env.update(o.env_all)
        env.update(o.env_role[role])
        env.setdefault('PYTHONUNBUFFERED', '1')
        specs.append(_Spec(role, rank, env, host, ssh_port))
    return specs


def _shell_line(command):
    """One word is a shell line as written; several are quoted as argv."""
    return command[0] if len(command) == 1 else shlex.join(command)


def _local_argv(command):
    if len(command) == 1:
        return [shutil.which('bash') or '/bin/sh', '-c', command[0]]
    return list(command)


def _child_pythonpath():
    """``PYTHONPATH`` for a child: the directory this ``d2lmini`` was
    imported from first (unless it is an installed package's site
    directory), then this process's entries made absolute, so that a child
    started in another directory imports what the launcher imports (with
    ``python -m d2lmini.launch`` from a checkout, or a ``D2LMINI_CUPY``
    module found on ``PYTHONPATH``)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    sites = set(site.getsitepackages()) | {site.getusersitepackages()}
    inherited = os.environ.get('PYTHONPATH', '').split(os.pathsep)
    parts = ([] if root in sites else [root]) + \
        [os.path.abspath(p) for p in inherited if p]
    return os.pathsep.join(dict.fromkeys(parts))


def _child_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in _OWNED and k != 'DMLC_NODE_HOST'}
    pythonpath = _child_pythonpath()
    if pythonpath:
        env['PYTHONPATH'] = pythonpath
    env.update(extra)                      # --env PYTHONPATH:... wins
    return env


# The remote half of an ssh process (bash): run the command in its own
# process group, and terminate that group when ssh's stdin closes (the
# launcher stopping it, or gone).
_SSH_WATCH = ('set -m; eval "$1" </dev/null & job=$!; '
              '{ while read -r _; do :; done; kill -TERM -- -$job; sleep $2; '
              'kill -KILL -- -$job; } >/dev/null 2>&1 & watch=$!; set +m; '
              'wait $job; status=$?; kill -- -$watch 2>/dev/null; '
              'exit $status')


def _ssh_argv(spec, command, kill_grace, cwd=None):
    """``(argv, stdin_text)`` for one process on ``spec.host``."""
    cwd = cwd or os.getcwd()
    env = {k: v for k, v in os.environ.items() if _FORWARD.match(k)
           and k not in _OWNED and k != 'DMLC_NODE_HOST'}
    env.update(spec.env)
    secret = [k for k in env if _SECRET.search(k)]
    for k in secret:
        if '\n' in env[k]:
            raise ValueError(f'{k} contains a newline; ssh cannot pass it')
    exports = ' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items()
                       if k not in secret)
    line = f'cd {shlex.quote(cwd)} && export {exports} && '
    line += ''.join(f'IFS= read -r {k} && export {k} && ' for k in secret)
    line += (f'exec bash -c {shlex.quote(_SSH_WATCH)} d2lmini-launch '
             f'{shlex.quote(_shell_line(command))} {kill_grace:g}')
    argv = ['ssh', '-o', 'StrictHostKeyChecking=no']
    if spec.ssh_port:
        argv += ['-p', str(spec.ssh_port)]
    return argv + [spec.host, line], ''.join(env[k] + '\n' for k in secret)


# --------------------------------------------------------------------------
# Output
class _Output:
    """Writes whole lines, prefixed, from many reader threads."""

    def __init__(self, echo=True, capture=False):
        self.echo, self.lines = echo, [] if capture else None
        self._lock = threading.Lock()

    def line(self, name, stream, text, prefix=True):
        if not text.endswith('\n'):
            text += '\n'
        with self._lock:
            if self.lines is not None:
                self.lines.append((name, stream, text))
            if self.echo:
                out = sys.stdout if stream == 'stdout' else sys.stderr
                try:
                    out.write(f'[{name}] {text}' if prefix else text)
                    out.flush()
                except (OSError, ValueError):   # e.g. `... | head` ended:
                    self.echo = False           # keep draining the pipes

    def say(self, text):
        self.line('launch', 'stderr', text)

    def pump(self, pipe, name, stream, prefix=True):
        def run():
            with pipe:
                for raw in iter(pipe.readline, b''):
                    self.line(name, stream,
                              raw.decode('utf-8', 'replace'), prefix)
        t = threading.Thread(target=run, name=f'launch-{name}-{stream}',
                             daemon=True)
        t.start()
        return t


def _die_with_parent():
    """Ask Linux to SIGTERM this child when the launcher dies (best effort)."""


if sys.platform.startswith('linux'):
    try:
        import ctypes
        _prctl = ctypes.CDLL(None, use_errno=True).prctl

        def _die_with_parent():                      # noqa: F811
            _prctl(1, int(signal.SIGTERM))           # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


# --------------------------------------------------------------------------
# Processes
class _Child:
    """A process on this machine, in a process group of its own."""

    def __init__(self, spec, argv, env, output, stdin_text=None, prefix=True,
                 pass_fds=()):
        self.spec, self.name, self.role = spec, spec.name, spec.role
        self.popen = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.PIPE if stdin_text is not None else
            subprocess.DEVNULL, start_new_session=True,
            preexec_fn=_die_with_parent, pass_fds=pass_fds)
        self.pid = self.popen.pid
        if stdin_text is not None:       # kept open: closing it stops (ssh)
            try:
                self.popen.stdin.write(stdin_text.encode())
                self.popen.stdin.flush()
            except OSError:              # ssh died at once: poll() says how
                pass
        self.readers = [output.pump(self.popen.stdout, self.name, 'stdout',
                                    prefix),
                        output.pump(self.popen.stderr, self.name, 'stderr',
                                    prefix)]

    def poll(self):
        return self.popen.poll()

    def describe(self, code):
        return _describe(self.name, code)

    def signal(self, sig):
        if self.popen.stdin and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()     # the remote watcher's cue
            except OSError:
                pass
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self, timeout):
        """After the process exited: kill what it left in its group."""
        left = False
        try:
            os.killpg(self.pid, 0)
            left = True
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.popen.stdin and not self.popen.stdin.closed:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
        for t in self.readers:
            t.join(timeout)
        return left


def _describe(name, code):
    if code < 0:
        try:
            signame = f' ({signal.Signals(-code).name})'
        except ValueError:
            signame = ''
        return f'{name} was killed by signal {-code}{signame}'
    return f'{name} exited with status {code}'


class _SshChild(_Child):
    def describe(self, code):
        text = _describe(self.name, code)
        if code == 255:
            return text + f' (ssh to {self.spec.host} failed?)'
        if 128 < code < 160:
            return text + f' (killed by signal {code - 128} on ' \
                          f'{self.spec.host}?)'
        return text


# --------------------------------------------------------------------------
# The job: watch, and stop everything on the first failure
class _Job:
    def __init__(self, procs, output, opts, quiet=False):
        self.procs, self.out, self.o, self.quiet = procs, output, opts, quiet
        self.stop_request = None         # (returncode, message) from outside
        self.exited = {}                 # proc -> (code, time first seen)

    def _say(self, text):
        if not self.quiet:
            self.out.say(text)

    def run(self):
        start = time.monotonic()
        done_at = None
        while True:
            now = time.monotonic()
            for p in self.procs:
                if p not in self.exited:
                    code = p.poll()
                    if code is not None:
                        self.exited[p] = (code, now)
            bad = [p for p in self.exited if self.exited[p][0] != 0]
            if bad:
                first = min(bad, key=lambda p: self.exited[p][1])
                rc, why = 1, first.describe(self.exited[first][0])
                break
            running = [p for p in self.procs if p not in self.exited]
            if not running:
                self.clean_up()
                return 0, ''
            if self.stop_request:
                rc, why = self.stop_request
                break
            workers = [p for p in self.procs if p.role == 'worker']
            if workers and all(p in self.exited for p in workers):
                done_at = done_at or now
                if now - done_at > self.o.server_grace:
                    names = ', '.join(p.name for p in running)
                    rc, why = 1, (f'{names} still running '
                                  f'{self.o.server_grace:g} s after every '
                                  'worker finished')
                    break
            if self.o.timeout and now - start > self.o.timeout:
                rc, why = 124, f'timed out after {self.o.timeout:g} s'
                break
            time.sleep(_POLL)
        running = [p for p in self.procs if p not in self.exited]
        if running:
            why += f'; stopping {", ".join(p.name for p in running)}'
        self._say(why)
        self.stop(running)
        self.clean_up()
        return rc, why

    def stop(self, running):
        """SIGTERM every group, SIGKILL those alive ``kill_grace`` later;
        ``mpiexec`` last, once its ranks had their chance to end cleanly."""
        last = [p for p in running if p.role == 'mpiexec']
        for group in ([p for p in running if p not in last], last):
            for p in group:
                p.signal(signal.SIGTERM)
            group = self._wait(group)
            for p in group:
                self._say(f'{p.name} still running {self.o.kill_grace:g} s '
                          'after SIGTERM; killing it')
                p.signal(signal.SIGKILL)
            for p in self._wait(group):
                self._say(f'{p.name} survived SIGKILL')

    def _wait(self, procs):
        """Those of ``procs`` still running after ``kill_grace`` seconds."""
        deadline = time.monotonic() + self.o.kill_grace
        while procs and time.monotonic() < deadline:
            procs = [p for p in procs if p.poll() is None]
            if procs:
                time.sleep(_POLL)
        return procs

    def clean_up(self):
        """Kill what exited processes left in their groups; end the readers."""
        for p in self.procs:
            if hasattr(p, 'finish') and p.finish(2.0):
                self._say(f'{p.name} left processes in its group; killed them')


class _Signals:
    """Turn SIGINT/SIGTERM/SIGHUP into a stop request while the job runs."""

    def __init__(self, job):
        self.job, self.old = job, {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                self.old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        if self.job.stop_request is None:
            name = signal.Signals(signum).name
            self.job.stop_request = (128 + signum, f'interrupted by {name}')

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)


# --------------------------------------------------------------------------
# mpi: a control connection per rank, so the launcher keeps the same rules
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


# --------------------------------------------------------------------------
# Entry points
class LaunchError(RuntimeError):
    """The job could not be started (the message says why)."""


def _start(o, spec, output):
    ssh = o.launcher == 'ssh' and spec.host is not None
    argv, stdin = _ssh_argv(spec, o.command, o.kill_grace) if ssh else \
        (_local_argv(o.command), None)
    try:
        if ssh:
            return _SshChild(spec, argv, _child_env({}), output, stdin)
        return _Child(spec, argv, _child_env(spec.env), output)
    except OSError as e:
        raise LaunchError(f'cannot start {spec.name}: {argv[0]}: '
                          f'{e.strerror}') from None


def _run(o, output):
    """Start the job's processes and watch them to the end: ``(rc, why)``."""
    specs = _plan(o)
    procs, close = [], (lambda: None)
    job = _Job(procs, output, o)
    with _Signals(job):
        try:
            if o.launcher == 'mpi':
                ranks, close = _start_mpi(o, specs, output)
                procs.extend(ranks)
            else:
                procs.extend(_start(o, spec, output) for spec in specs)
        except BaseException:         # nothing half-started stays behind
            job.stop([p for p in procs if p.poll() is None])
            job.clean_up()
            close()
            raise
        try:
            return job.run()
        finally:
            close()


def launch(command, num_workers, num_servers=None, *, launcher=None,
           hostfile=None, env=None, env_server=None, env_worker=None,
           port=None, host_ip=None, timeout=None, server_grace=30.0,
           kill_grace=5.0, echo=True, capture=False):
    """Run a job as ``python -m d2lmini.launch`` would; wait for its end.

    ``command`` is a list of words (or one shell line as a string); ``env``,
    ``env_server``, ``env_worker`` are dicts.  Returns a
    :class:`LaunchResult`; bad arguments raise ``ValueError``, a process
    that cannot start :class:`LaunchError`, and Ctrl-C (SIGINT) stops the
    job, then raises ``KeyboardInterrupt``.

    >>> launch(['python', 'train.py'], num_workers=2, num_servers=1)
    """
    argv = ['-n', str(num_workers)]
    if num_servers is not None:
        argv += ['-s', str(num_servers)]
    for option, value in (('--launcher', launcher), ('-H', hostfile),
                          ('--port', port), ('--host-ip', host_ip),
                          ('--timeout', timeout),
                          ('--server-grace', server_grace),
                          ('--kill-grace', kill_grace)):
        if value is not None:
            argv += [option, str(value)]
    for option, pairs in (('--env', env), ('--env-server', env_server),
                          ('--env-worker', env_worker)):
        for k, v in (pairs or {}).items():
            argv += [option, f'{k}:{v}']
    argv += ['--', *([command] if isinstance(command, str) else command)]
    o = _options(argv)               # a _UsageError (ValueError) if bad
    output = _Output(echo, capture)
    rc, why = _run(o, output)
    if rc == 128 + signal.SIGINT:    # Ctrl-C / a notebook's interrupt:
        raise KeyboardInterrupt(why)  # the job is stopped; stop the caller
    return LaunchResult(rc, why, output.lines)


def main(argv=None):
    try:
        o = _options(sys.argv[1:] if argv is None else argv)
    except _UsageError as e:
        _parser().print_usage(sys.stderr)
        print(f'python -m d2lmini.launch: error: {e}', file=sys.stderr)
        return 2
    if o.mpi_control:
        return _mpi_rank_main(o)
    try:
        rc, _ = _run(o, _Output())
    except (LaunchError, ValueError) as e:
        print(f'[launch] {e}', file=sys.stderr)
        return 1
    return rc
