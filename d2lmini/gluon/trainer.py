"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

One step of data-parallel training over the contexts a net lives on::

    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    with autograd.record():
        l = loss(net(X), y)
    l.backward()
    trainer.step(batch_size)     # = allreduce_grads() + update(batch_size)

``allreduce_grads`` sums each parameter's gradients over its contexts and
writes the sum back to every context (through a *KVStore*: an in-process
:class:`LocalKVStore` here; a real one, e.g. distributed, plugs in through
the ``kvstore`` argument).  ``update`` then runs the optimizer on each
context's copy with ``rescale_grad = 1/batch_size``; the copies see the
same gradient and the same state, so they stay identical.  On one context
there is nothing to reduce and no KVStore is made (``trainer._kvstore`` is
None), as in MXNet.

The updates of one context go out as one fused kernel per step
(:meth:`d2lmini.optimizer.Optimizer.update_multi`), and the contexts'
kernels run at the same time, each on its device's stream.
"""
import json

import numpy as np

from .. import optimizer as opt
from .. import engine

__all__ = ['Trainer', 'LocalKVStore']

_STATES_FORMAT = 'd2lmini-trainer-states'
_META_KEY = '__trainer__.json'


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class LocalKVStore:
    """The KVStore a Trainer needs on one machine: sum over devices, in process.

    ``kind`` is ``'device'`` or ``'local'`` (MXNet's names; both reduce on the
    first value's context here).  Methods follow MXNet's ``KVStore``:
    :meth:`pushpull` is all-reduce; with an optimizer set
    (:meth:`set_optimizer`), :meth:`push` sums and *updates* the stored
    weight and :meth:`pull` copies it out (``update_on_kvstore=True``).
    """

    def __init__(self, kind='device'):
        self.type = kind
        self.rank, self.num_workers = 0, 1
        self._store = {}
        self._updater = None

    def __repr__(self):
        return f'LocalKVStore({self.type!r}, keys={len(self._store)})'

    @staticmethod
    def _reduce(values):
        """The sum of ``values`` (NDArrays on any contexts) on the first's."""
        if len(values) == 1:
            return values[0]
        ctx = values[0].context
        total = values[0] + values[1].as_in_context(ctx)
        for v in values[2:]:
            total += v.as_in_context(ctx)
        return total

    def init(self, key, value):
        """Store a copy of ``value`` (the first, for a list) under ``key``."""
        if isinstance(key, (list, tuple)):
            for k, v in zip(key, value):
                self.init(k, v)
            return
        self._store[key] = _as_list(value)[0].copy()

    def set_optimizer(self, optimizer):
        """Updates happen in :meth:`push` from now on (``update_on_kvstore``)."""
        self._updater = opt.get_updater(optimizer)

    def push(self, key, value, priority=0):
        total = self._reduce(_as_list(value))
        if self._updater is None:
            self._store[key] = total if len(_as_list(value)) > 1 else total.copy()
            return
        weight = self._store[key]
        self._updater(key, total.as_in_context(weight.context), weight)

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        src = self._store[key]
        for o in _as_list(out):
            o[:] = src

    def pushpull(self, key, value, out=None, priority=0):
        """All-reduce: every ``out`` (default: ``value`` itself) gets the sum."""
        if self._updater is not None:
            self.push(key, value, priority)
            self.pull(key, value if out is None else out, priority)
            return
        values = _as_list(value)
        outs = values if out is None else _as_list(out)
        total = self._reduce(values)
        for o in outs:
            if o is not total:
                o[:] = total

    def broadcast(self, key, value, out, priority=0):
        self.init(key, value)
        self.pull(key, out, priority)


# An optimizer state is None, an NDArray, or a tuple of states (nested under
# multi-precision: ``(weight32, (mean, var))``, or ``(None, weight32)`` for
# SGD without momentum).  Its layout in the states file is None, 'array', or
# a list of layouts; the arrays are stored flat, in order.
def _state_layout(st):
    if st is None:
        return None
    if isinstance(st, (tuple, list)):
        return [_state_layout(s) for s in st]
    return 'array'


def _state_count(kind):
    if kind is None:
        return 0
    if kind == 'array':
        return 1
    if isinstance(kind, int):          # files written before nesting: n arrays
        return kind
    return sum(_state_count(k) for k in kind)


def _state_build(kind, arrays):
    if kind is None:
        return None
    if kind == 'array':
        return next(arrays)
    if isinstance(kind, int):
        return tuple(next(arrays) for _ in range(kind))
    return tuple(_state_build(k, arrays) for k in kind)


class _UpdateOnKVStoreError(RuntimeError, AssertionError):
    """``allreduce_grads``/``update`` with ``update_on_kvstore``: MXNet
    raises an AssertionError; a RuntimeError is what it is."""


def _is_parameter(p):
    return all(hasattr(p, a) for a in ('list_data', 'list_grad', 'list_ctx', 'name'))


class Trainer:
    """Applies an optimizer to Parameters (MXNet 1.x ``gluon.Trainer``).

    Parameters
    ----------
    params : dict (e.g. ``net.collect_params()``) or list of Parameter
    optimizer : str or Optimizer
        ``'sgd'``, ``'adam'``, ... or an :class:`~d2lmini.optimizer.Optimizer`.
    optimizer_params : dict
        E.g. ``{'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-4}``; with
        ``'lr_scheduler': mx.lr_scheduler.CosineScheduler(...)`` the rate
        follows the schedule, one update per step (:attr:`learning_rate`);
        ``'multi_precision': True`` keeps float32 master copies of float16
        parameters.
    kvstore : str, KVStore or None
        ``'device'``/``'local'``: sum gradients over contexts in process;
        None: no reduction (each context trains on its own gradient); a
        KVStore object (anything with MXNet's ``pushpull``) is used as is.
    update_on_kvstore : bool or None
        True: the KVStore runs the optimizer once and every context pulls
        the new weight.  None/False (default here; MXNet's None means True):
        every context runs the update itself on the reduced gradient, which
        keeps :meth:`allreduce_grads` and :meth:`update` usable.

    A parameter whose gradient no backward has written since the last step
    (a stale gradient: the parameter took no part in the loss) raises a
    ``UserWarning`` naming it, unless ``step(..., ignore_stale_grad=True)``,
    which skips it.  The check needs the threaded engine, which numbers
    every write; under the naive engine it is not made.

    Examples
    --------
    >>> trainer = gluon.Trainer(net.collect_params(), 'sgd',
    ...                         {'learning_rate': 0.1})
    >>> trainer.step(batch_size)                            # doctest: +SKIP
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None):
        if hasattr(params, 'values') and callable(params.values):
            params = list(params.values())
        if not isinstance(params, (list, tuple)):
            raise ValueError(f'First argument must be a list or dict of Parameters, '
                             f'got {type(params).__name__}.')
        self._params, self._param2idx = [], {}
        for i, p in enumerate(params):
            if not _is_parameter(p):
                raise ValueError(f'First argument must be a list or dict of '
                                 f'Parameters, got a list containing '
                                 f'{type(p).__name__}.')
            self._param2idx[p.name] = i
            self._params.append(p)
            if hasattr(p, '_set_trainer'):
                p._set_trainer(self)
        self._compression_params = compression_params
        self._init_optimizer(optimizer, dict(optimizer_params or {}))
        self._scale = self._optimizer.rescale_grad    # times 1/batch_size a step
        self._kvstore_params = {'kvstore': kvstore,
                                'update_on_kvstore': update_on_kvstore}
        self._contexts = None
        self._updaters = []
        self._reset_kvstore()
        self._grad_stamps = {}
        self._pending_fresh = None

    # -- set-up ----------------------------------------------------------------------
    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError('optimizer_params must be None if optimizer is an '
                                 'instance of Optimizer instead of str')
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict,
                                         **optimizer_params)

    def _reset_kvstore(self):
        """Forget the KVStore and contexts (Parameter.reset_ctx calls this)."""
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None

    def _check_contexts(self):
        contexts = None
        for p in self._params:
            ctx = list(p.list_ctx())
            if contexts is not None and ctx != contexts:
                raise ValueError(
                    f'All Parameters must be initialized on the same set of '
                    f'contexts, but Parameter {p.name} is initialized on {ctx} '
                    f'while previous Parameters are initialized on {contexts}.')
            contexts = ctx
        return contexts or []

    def _init_kvstore(self):
        contexts = self._check_contexts()
        if contexts != self._contexts:
            self._contexts = contexts
            self._updaters = [opt.get_updater(self._optimizer) for _ in contexts]
        kv = self._kvstore_params['kvstore']
        uok = self._kvstore_params['update_on_kvstore']
        if kv is None or kv is False:
            store = None
        elif isinstance(kv, str):
            if 'dist' in kv or 'horovod' in kv or 'byteps' in kv:
                raise NotImplementedError(
                    f'kvstore={kv!r}: only the in-process stores (\'device\', '
                    f'\'local\') are built in; pass a KVStore object for others')
            if kv not in ('device', 'local'):
                raise ValueError(f"unknown kvstore {kv!r}: use 'device', 'local', "
                                 f"None or a KVStore object")
            store = LocalKVStore(kv) if len(contexts) > 1 else None
        else:
            if not hasattr(kv, 'pushpull'):
                raise TypeError(f'kvstore must be a str, None or a KVStore with '
                                f'pushpull(), got {type(kv).__name__}')
            store = kv
        if store is None:
            self._kvstore, self._update_on_kvstore = None, None
        else:
            self._kvstore = store
            self._update_on_kvstore = bool(uok)
            if self._update_on_kvstore:
                store.set_optimizer(self._optimizer)
                for i, p in enumerate(self._params):
                    if p.grad_req != 'null':
                        store.init(i, p.list_data()[0])
        self._kv_initialized = True

    def _ensure_init(self):
        if not self._kv_initialized or self._check_contexts() != self._contexts:
            self._init_kvstore()

    # -- hyperparameters ---------------------------------------------------------------
    @property
    def optimizer(self):
        return self._optimizer

    @property
    def learning_rate(self):
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Set the learning rate (not allowed with an LR scheduler)."""
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale):
        self._optimizer.rescale_grad = scale

    # -- stale gradients ------------------------------------------------------------------
    @staticmethod
    def _stamp(grad):
        """Identifies the last write to ``grad``; None where it cannot tell."""
        if grad._stream is engine._NAIVE:
            return None           # the synchronous engine numbers no writes
        return id(grad), id(grad._stream), grad._seq

    def _fresh(self):
        """Per parameter, per context: was the gradient written since last step?

        ``None`` for parameters with ``grad_req='null'``.
        """
        fresh = []
        for i, p in enumerate(self._params):
            if p.grad_req == 'null':
                fresh.append(None)
                continue
            fresh.append([self._grad_stamps.get((i, j)) is None
                          or self._stamp(g) != self._grad_stamps[(i, j)]
                          for j, g in enumerate(p.list_grad())])
        return fresh

    def _check_stale(self, fresh):
        for p, row in zip(self._params, fresh):
            if row is not None and not all(row):
                ctx = self._contexts[row.index(False)]
                raise UserWarning(
                    f'Gradient of Parameter `{p.name}` on context {ctx} has not '
                    f'been updated by backward since last `step`. This could mean '
                    f'a bug in your model that made it only use a subset of the '
                    f'Parameters (Blocks) for this iteration. If you are '
                    f'intentionally only using a subset, call step with '
                    f'ignore_stale_grad=True to suppress this warning and skip '
                    f'updating of Parameters with stale gradient')

    def _remember_grads(self):
        for i, p in enumerate(self._params):
            if p.grad_req != 'null':
                for j, g in enumerate(p.list_grad()):
                    self._grad_stamps[(i, j)] = self._stamp(g)

    # -- the step -------------------------------------------------------------------------
    def step(self, batch_size, ignore_stale_grad=False):
        """All-reduce the gradients, then update with ``rescale_grad=1/batch_size``."""
        self._check_and_rescale_grad(self._scale / batch_size)
        self._ensure_init()
        fresh = self._fresh()
        if not ignore_stale_grad:
            self._check_stale(fresh)
        self._allreduce_grads(fresh)
        self._update(fresh)

    def allreduce_grads(self):
        """Sum each parameter's gradients over its contexts, in place.

        For ``update_on_kvstore=False`` (the default here); follow with
        :meth:`update`.
        """
        self._ensure_init()
        if self._update_on_kvstore:
            raise _UpdateOnKVStoreError(
                'allreduce_grads() when parameters are updated on kvstore is not '
                'supported. Try setting `update_on_kvstore` to False when '
                'creating trainer.')
        self._pending_fresh = self._fresh()
        self._allreduce_grads(self._pending_fresh)

    def _allreduce_grads(self, fresh):
        kv = self._kvstore
        if kv is None:
            return
        for i, p in enumerate(self._params):
            if p.grad_req == 'null' or not any(fresh[i]):
                continue
            if self._update_on_kvstore:
                kv.pushpull(i, p.list_grad(), out=p.list_data(), priority=-i)
            else:
                kv.pushpull(i, p.list_grad(), priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Run the optimizer on every context's copy (after :meth:`allreduce_grads`)."""
        self._ensure_init()
        if self._update_on_kvstore:
            raise _UpdateOnKVStoreError(
                'update() when parameters are updated on kvstore is not '
                'supported. Try setting `update_on_kvstore` to False when '
                'creating trainer.')
        self._check_and_rescale_grad(self._scale / batch_size)
        fresh, self._pending_fresh = self._pending_fresh, None
        if fresh is None:
            fresh = self._fresh()
        if not ignore_stale_grad:
            self._check_stale(fresh)
        self._update(fresh)

    def _update(self, fresh):
        if not self._update_on_kvstore:
            work = [([], [], []) for _ in self._updaters]
            for i, p in enumerate(self._params):
                if p.grad_req == 'null':
                    continue
                for j, (w, g) in enumerate(zip(p.list_data(), p.list_grad())):
                    if fresh[i][j]:
                        work[j][0].append(i)
                        work[j][1].append(g)
                        work[j][2].append(w)
            for upd, (idx, grads, weights) in zip(self._updaters, work):
                if idx:
                    upd(idx, grads, weights)
        self._remember_grads()

    # -- checkpoints -----------------------------------------------------------------------
    def _state_updater(self):
        if self._update_on_kvstore:
            return getattr(self._kvstore, '_updater', None)
        return self._updaters[0] if self._updaters else None

    def save_states(self, fname):
        """Save the optimizer's states and counters to ``fname`` (no pickle).

        One file, written atomically by ``nd.save``: the states of the first
        context (all contexts hold the same) as ``state/<index>/<k>`` arrays,
        and a JSON document (optimizer, hyperparameters, update counts,
        parameter names) stored as the uint8 array ``__trainer__.json``.
        """
        from .. import ndarray as nd
        self._ensure_init()
        if self._update_on_kvstore and not isinstance(self._kvstore, LocalKVStore):
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        upd = self._state_updater()
        o = self._optimizer
        ctx0 = self._contexts[0] if self._contexts else None
        if self._update_on_kvstore:
            ctx0 = next(iter(self._kvstore._store.values())).context \
                if self._kvstore._store else ctx0
        counts = o._all_index_update_counts.get(ctx0, o._index_update_count)
        arrays, layout = {}, {}
        for idx, st in sorted((upd.states if upd else {}).items()):
            layout[str(idx)] = _state_layout(st)
            for k, a in enumerate(opt._states(st)):
                arrays[f'state/{idx}/{k}'] = a
        meta = {'format': _STATES_FORMAT, 'version': 1,
                'optimizer': type(o).__name__.lower(),
                'hyper': o._hyper(), 'num_update': o.num_update,
                'index_update_count': {str(k): v for k, v in counts.items()},
                'states': layout,
                'params': [p.name for p in self._params]}
        blob = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        arrays[_META_KEY] = nd.array(blob, dtype='uint8')
        nd.save(fname, arrays)

    def load_states(self, fname):
        """Load what :meth:`save_states` wrote (on any number of contexts)."""
        from .. import ndarray as nd
        self._ensure_init()
        if self._update_on_kvstore and not isinstance(self._kvstore, LocalKVStore):
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
            return
        data = nd.load(fname)
        if not isinstance(data, dict) or _META_KEY not in data:
            raise ValueError(f'{fname}: not a Trainer states file (written by '
                             f'Trainer.save_states)')
        meta = json.loads(data.pop(_META_KEY).asnumpy().tobytes().decode())
        if meta.get('format') != _STATES_FORMAT or meta.get('version') != 1:
            raise ValueError(f'{fname}: unsupported trainer states format '
                             f'{meta.get("format")!r} v{meta.get("version")}')
        o = self._optimizer
        if meta['optimizer'] != type(o).__name__.lower():
            raise ValueError(f"{fname} holds states of optimizer "
                             f"'{meta['optimizer']}', but this Trainer uses "
                             f"'{type(o).__name__.lower()}'")
        if len(meta['params']) != len(self._params):
            raise ValueError(f'{fname} holds states for {len(meta["params"])} '
                             f'parameters, this Trainer has {len(self._params)}')
        for k, v in meta['hyper'].items():
            setattr(o, k, v)
        o.num_update = meta['num_update']
        counts = {int(k): v for k, v in meta['index_update_count'].items()}
        for key in list(o._all_index_update_counts):
            o._all_index_update_counts[key] = dict(counts)
        for c in self._contexts:
            o._all_index_update_counts[c] = dict(counts)
        o._index_update_count = o._all_index_update_counts[None]
        if self._update_on_kvstore:
            targets = [(self._kvstore._updater, None)]
        else:
            targets = list(zip(self._updaters, self._contexts))
        for upd, ctx in targets:
            upd.states = {}
            for sidx, kind in meta['states'].items():
                idx = int(sidx)
                if kind is None:
                    upd.states[idx] = None
                    continue
                where = ctx or self._kvstore._store[idx].context
                weight = self._params[idx].list_data()[0]
                arrs = []
                for k in range(_state_count(kind)):
                    a = data[f'state/{idx}/{k}']
                    if a.shape != weight.shape:
                        raise ValueError(
                            f'{fname}: state {k} of parameter '
                            f'{self._params[idx].name} has shape {a.shape}, the '
                            f'parameter has shape {weight.shape}')
                    arrs.append(a.as_in_context(where).copy())
                upd.states[idx] = _state_build(kind, iter(arrs))
