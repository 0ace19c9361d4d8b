"""``python -m d2lmini.launch``: start a parameter-server job, as MXNet does.

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

The parts, in the order a reader meets them (``launch`` at the bottom of
this file is the place to start):

``cli.py``
    the options, checked, with their defaults (dmlc-core's ``opts.py``);
``plan.py``
    who runs where: the processes of the job and their ``DMLC_*`` variables;
``local.py``, ``ssh.py``, ``mpi.py``
    the three ways of starting them (``--launcher``; the default is ``ssh``
    when a hostfile is given with ``-H``, ``local`` otherwise), as
    dmlc-core's tracker has one module per cluster type;
``jobs.py``
    the watch: prefixed output, and the rules that end a job (the first
    failure, the timeout, Ctrl-C: SIGTERM, then SIGKILL, to every process
    group; exit status 1, 124 or 128+N).

A command of several words is run as given (``python train.py --lr 0.1``);
a single word is a shell command line (``'python train.py > log.$DMLC_ROLE'``).

Each output line is prefixed with its process (``[worker 1] loss 0.3``,
``[server 0] ...``, ``[scheduler] ...``); ``jobs.py`` tells when and how a
job ends.

From Python (a notebook, a benchmark)::

    from d2lmini.launch import launch
    result = launch(['python', 'train.py'], num_workers=2, num_servers=1,
                    capture=True, echo=False)
    result.returncode, result.lines[:3]   # lines: (name, stream, text)
"""
import signal
import sys
from collections import namedtuple

from .cli import _options, _parser, _UsageError
from .jobs import LaunchError, _Job, _Output, _Signals
from .local import _Child, _local_argv
from .mpi import _mpi_rank_main, _start_mpi
from .plan import _child_env, _plan
from .ssh import _ssh_argv, _SshChild

__all__ = ['launch', 'main', 'LaunchResult', 'LaunchError']

LaunchResult = namedtuple('LaunchResult', 'returncode message lines')
LaunchResult.__doc__ = """What a launch ended with: the exit status the
command line would have, the launcher's explanation ('' on success) and the
captured output lines ``(name, 'stdout' | 'stderr', text)`` (with
``capture=True``)."""


def _start(o, spec, output):
    remote = o.launcher == 'ssh' and spec.host is not None
    argv, stdin = _ssh_argv(spec, o.command, o.kill_grace) if remote else \
        (_local_argv(o.command), None)
    try:
        if remote:
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
