"""Who runs where, with which variables: the processes of one job.

``_plan(o)`` turns the options into ``_Spec`` objects, scheduler first,
then the servers and the workers; ``_child_env`` is the environment a
process on this machine starts with.

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
"""
import os
import site
import socket

from .cli import _OWNED


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


def _child_pythonpath(inherited=None):
    """``PYTHONPATH`` for a child: the directory this ``d2lmini`` was
    imported from first (unless it is an installed package's site
    directory), then ``inherited`` (this process's ``PYTHONPATH`` unless
    given) with its entries made absolute, so that a child
    started in another directory imports what the launcher imports (with
    ``python -m d2lmini.launch`` from a checkout, or a ``D2LMINI_CUPY``
    module found on ``PYTHONPATH``)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    sites = set(site.getsitepackages()) | {site.getusersitepackages()}
    if inherited is None:
        inherited = os.environ.get('PYTHONPATH', '')
    parts = ([] if root in sites else [root]) + \
        [os.path.abspath(p) for p in inherited.split(os.pathsep) if p]
    return os.pathsep.join(dict.fromkeys(parts))


def _child_env(extra):
    env = {k: v for k, v in os.environ.items()
           if k not in _OWNED and k != 'DMLC_NODE_HOST'}
    pythonpath = _child_pythonpath()
    if pythonpath:
        env['PYTHONPATH'] = pythonpath
    env.update(extra)                      # --env PYTHONPATH:... wins
    return env
