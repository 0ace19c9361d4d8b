"""The command line of ``python -m d2lmini.launch`` (dmlc-core's ``opts.py``).

``_options(argv)`` parses and checks MXNet's options (``-n``, ``-s``,
``-H``, ``--launcher``, ``--env``, ``--env-server``, ``--env-worker``, ...)
and fills in the defaults: ``-s`` is ``-n``, the launcher ``ssh`` with a
hostfile and ``local`` without one.  Every mistake raises ``_UsageError``
with a message that says what to change; ``main`` prints it under argparse's
usage line and exits 2.  ``_read_hostfile`` reads ``-H``.
"""
import argparse
import re

# The variables the launcher owns, and the option that sets each instead.
_OWNED = {'DMLC_ROLE': '-n/-s', 'DMLC_NUM_WORKER': '-n',
          'DMLC_NUM_SERVER': '-s', 'DMLC_WORKER_ID': '-n',
          'DMLC_SERVER_ID': '-s',
          'DMLC_PS_ROOT_PORT': '--port', 'DMLC_PS_ROOT_URI': '--host-ip'}
_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*\Z')


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
