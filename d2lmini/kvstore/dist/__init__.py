"""The distributed parameter server: ``dist_sync``, ``dist_async`` and the
``_device`` variants, over ZeroMQ.

A job is one *scheduler*, S *servers* and W *workers*, each a process
(possibly on different machines), told who they are by the ``DMLC_*``
variables (:mod:`.config`)::

    python -m d2lmini.launch -n 2 -s 1 python train.py   # 4 processes

Every process runs ``train.py``.  In the scheduler and the servers,
``import d2lmini`` runs their loop and exits, as in MXNet; the workers go
on, and ``mx.kv.create('dist_sync')`` connects them.

============================  ===========================================
:mod:`.config`                who am I: the environment, read once
:mod:`.wire`                  the message format (JSON header + raw
                              array frames, optional HMAC); no pickle
:mod:`.scheduler`             rendezvous, barriers, heartbeats
:mod:`.server`                stores keys, sums pushes, runs the optimizer
:mod:`.worker`                a worker's sockets and its heartbeat thread
:mod:`.store`                 ``DistKVStore``: the KVStore front end
============================  ===========================================
"""
import logging
import sys

from .config import Config, DistributedError, role

__all__ = ['Config', 'DistributedError', 'DistKVStore', 'NAMES', 'run', 'role']


def __getattr__(name):
    # the store (and pyzmq) load on first use: ``import d2lmini`` reads the
    # role through this package and should stay light
    if name in ('DistKVStore', 'NAMES'):
        from . import store
        return getattr(store, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def run(cfg=None):
    """Run this process's role (scheduler or server) until the job ends.

    Returns normally when the workers have finished; raises
    :class:`DistributedError` when a node failed.
    """
    cfg = cfg or Config.from_env()
    if not logging.getLogger('d2lmini.kvstore.dist').handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter('%(levelname)s %(message)s'))
        logging.getLogger('d2lmini.kvstore.dist').addHandler(handler)
        logging.getLogger('d2lmini.kvstore.dist').setLevel(logging.INFO)
    if cfg.role not in ('scheduler', 'server'):
        raise DistributedError('a worker runs your script; only the scheduler '
                               'and the servers have a loop to run')
    import zmq
    from . import wire
    ctx = zmq.Context()
    try:
        if cfg.role == 'scheduler':
            from .scheduler import Scheduler
            Scheduler(cfg, ctx).run()
        else:
            from .server import Server
            Server(cfg, ctx).run()
    finally:
        # the loop has closed its sockets; their last messages (the
        # scheduler's stop or dead, a server's answers) leave before we do
        wire.flush(ctx)


def run_role_and_exit():
    """What ``import d2lmini`` does in a scheduler or server process: run the
    loop, then exit (status 0, or 1 with the error on stderr)."""
    try:
        run()
    except DistributedError as e:
        print(f'{role()}: {e}', file=sys.stderr, flush=True)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
