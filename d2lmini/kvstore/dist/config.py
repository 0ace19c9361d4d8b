"""Who this process is in a distributed job: the ``DMLC_*`` variables.

The only module of :mod:`d2lmini.kvstore.dist` that reads the environment.
The names are MXNet's (its ps-lite reads the same ones), so a job script
written for MXNet's ``tools/launch.py`` runs unchanged:

=============================  ==============================================
``DMLC_ROLE``                  ``scheduler``, ``server`` or ``worker``
``DMLC_PS_ROOT_URI``/``_PORT`` where the scheduler listens (it binds exactly
                               that address; every other node connects to it)
``DMLC_NUM_SERVER``            S, the number of servers
``DMLC_NUM_WORKER``            W, the number of workers
``DMLC_NODE_HOST``             the address a server binds and announces
                               (default ``127.0.0.1``: nothing is reachable
                               from another machine unless you say so)
``DMLC_WORKER_ID``/``_SERVER_ID``  the rank this process asks for (the
                               launcher sets them, so that its ``[worker 1]``
                               prefix is the process with ``kv.rank == 1``)
``D2LMINI_PS_SECRET``          a shared secret: every message is signed
                               (HMAC-SHA256) and unsigned ones are rejected
``PS_HEARTBEAT_INTERVAL``      seconds between heartbeats (default 1)
``PS_HEARTBEAT_TIMEOUT``       a node silent this long is dead (default 10)
``PS_START_TIMEOUT``           seconds to wait for every node to register
                               (default 120)
``MXNET_KVSTORE_BIGARRAY_BOUND``  arrays with more elements are split over
                               all servers (default 1000000)
``D2LMINI_PS_TRACE``           a directory: every process writes its
                               timeline there (:mod:`.trace`)
=============================  ==============================================
"""
import os
from dataclasses import dataclass

from ...base import MXNetError

__all__ = ['Config', 'DistributedError', 'role']

ROLES = ('scheduler', 'server', 'worker')


class DistributedError(MXNetError, RuntimeError):
    """A distributed job failed: a node died, hangs, or was misconfigured."""


def role(env=None):
    """This process's ``DMLC_ROLE`` (None outside a distributed job)."""
    return (os.environ if env is None else env).get('DMLC_ROLE') or None


def _number(env, name, kind, default=None, low=None):
    raw = env.get(name)
    if raw in (None, ''):
        if default is None:
            raise DistributedError(
                f'{name} is not set: every process of a distributed job needs '
                f'DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_SERVER '
                f'and DMLC_NUM_WORKER (python -m d2lmini.launch sets them)')
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise DistributedError(f'{name}={raw!r} is not a {kind.__name__}') from None
    if low is not None and value < low:
        raise DistributedError(f'{name}={raw!r}: must be at least {low}')
    return value


@dataclass(frozen=True)
class Config:
    role: str
    root_uri: str
    root_port: int
    num_server: int
    num_worker: int
    node_host: str = '127.0.0.1'
    rank_wish: int = None
    secret: bytes = None
    heartbeat_interval: float = 1.0
    heartbeat_timeout: float = 10.0
    start_timeout: float = 120.0
    bigarray_bound: int = 1000000
    trace_dir: str = None

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        r = role(env)
        if r not in ROLES:
            raise DistributedError(
                f'this process is not part of a distributed job (DMLC_ROLE='
                f'{r!r}, not one of {ROLES}): start every process of the job '
                f'with python -m d2lmini.launch -n W -s S python your_script.py')
        uri = env.get('DMLC_PS_ROOT_URI')
        if not uri:
            _number(env, 'DMLC_PS_ROOT_URI', str)
        wish = env.get('DMLC_WORKER_ID' if r == 'worker' else 'DMLC_SERVER_ID')
        secret = env.get('D2LMINI_PS_SECRET')
        interval = _number(env, 'PS_HEARTBEAT_INTERVAL', float, 1.0)
        timeout = _number(env, 'PS_HEARTBEAT_TIMEOUT', float, 10.0)
        if not 0 < interval < timeout:
            raise DistributedError(
                f'PS_HEARTBEAT_INTERVAL={interval} must be positive and below '
                f'PS_HEARTBEAT_TIMEOUT={timeout}')
        return cls(role=r, root_uri=uri,
                   root_port=_number(env, 'DMLC_PS_ROOT_PORT', int, low=1),
                   num_server=_number(env, 'DMLC_NUM_SERVER', int, low=1),
                   num_worker=_number(env, 'DMLC_NUM_WORKER', int, low=1),
                   node_host=env.get('DMLC_NODE_HOST') or '127.0.0.1',
                   rank_wish=None if wish in (None, '') else
                   _number(env, 'DMLC_WORKER_ID' if r == 'worker' else
                           'DMLC_SERVER_ID', int, low=0),
                   secret=secret.encode() if secret else None,
                   heartbeat_interval=interval, heartbeat_timeout=timeout,
                   start_timeout=_number(env, 'PS_START_TIMEOUT', float, 120.0),
                   bigarray_bound=_number(env, 'MXNET_KVSTORE_BIGARRAY_BOUND', int,
                                          1000000, low=1),
                   trace_dir=env.get('D2LMINI_PS_TRACE') or None)

    @property
    def scheduler_address(self):
        return f'tcp://{self.root_uri}:{self.root_port}'
