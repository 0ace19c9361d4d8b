"""``gluon.Trainer``: applies an optimizer to a set of Parameters.

One step of data-parallel training over the contexts a net lives on::

    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1},
                            kvstore='device')
    with autograd.record():
        l = loss(net(X), y)
    l.backward()
    trainer.step(batch_size)     # = allreduce_grads() + update(batch_size)

The gradients of the contexts meet in a KVStore (:mod:`d2lmini.kvstore`),
made at the first step, with MXNet 1.x's rules:

* ``kvstore='device'`` or ``'local'`` on several contexts: a store of that
  type; on one context no store at all (nothing to reduce); ``None``: no
  store (each context follows its own gradient); a store object is used as
  given.
* ``update_on_kvstore=None`` (default) picks True when the store can run
  an optimizer (``'local'`` with a parameter over 16M elements: False):
  the store sums the gradients, updates its copy of each weight once, and
  every context pulls the new weight.  With False the store only sums
  (all-reduce) and every context runs the same update on the same sum.
  Both keep the copies identical; only False allows calling
  :meth:`allreduce_grads` and :meth:`update` yourself.

With a store, every parameter is first broadcast from its first context
to the others, so the copies also start identical.  On the update path,
each context's updates go out as one fused kernel per step
(:meth:`d2lmini.optimizer.Optimizer.update_multi`), and the contexts'
kernels run at the same time, each on its device's stream.
"""
from .. import optimizer as opt
from .. import kvstore as kvs
from ..kvstore import states as _states

__all__ = ['Trainer']

# A 'local' store with a parameter this big updates on the devices (MXNet).
_BIG_PARAM = 1024 * 1024 * 16


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
        ``'device'`` (default: sum on the devices), ``'local'`` (sum on the
        CPU), a name registered with ``mx.kv``, a store made by
        ``mx.kv.create``, or None (no reduction: each context trains on its
        own gradient).  A name on a single context makes no store.
    compression_params : dict or None
        E.g. ``{'type': '2bit', 'threshold': 0.5}``: the store sends the
        gradients 2 bits an element (``kv.set_gradient_compression``).
    update_on_kvstore : bool or None
        True: the store runs the optimizer once per step and every context
        pulls the new weight.  False: every context runs the update on the
        summed gradient (needed for :meth:`allreduce_grads` + :meth:`update`).
        None: True when the store can run an optimizer, as in MXNet.

    Notes
    -----
    A parameter whose gradient no backward has written since the last step
    (a stale gradient: the parameter took no part in the loss, or no
    ``backward()`` ran at all, as before the first one) raises MXNet's
    ``UserWarning`` naming it, unless ``step(..., ignore_stale_grad=True)``,
    which skips it.

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
        self._kvstore = None
        self._reset_kvstore()

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
        """Forget the store (``Parameter.reset_ctx``, ``set_data`` and loads
        call this): the next step makes a new one and broadcasts again."""
        if self._kvstore is not None and 'dist' in self._kvstore.type:
            raise RuntimeError('Cannot reset distributed KVStore.')
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

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

    def _create_kvstore(self, contexts):
        """The store and MXNet's default ``update_on_kvstore`` for it."""
        kv = self._kvstore_params['kvstore']
        if kv is None or kv is False:
            return None, False
        if isinstance(kv, kvs.KVStoreBase):
            store, update = kv, True
        elif isinstance(kv, str):
            if len(contexts) == 1 and 'dist' not in kv:
                return None, False              # nothing to reduce
            store, update = kvs.create(kv), True
            if kv == 'local' and max((p.list_data()[0].size for p in self._params
                                      if p._data is not None), default=0) > _BIG_PARAM:
                update = False
        else:
            raise TypeError(f"kvstore must be a KVStore (mx.kv.create(...)), a "
                            f"name such as 'device' or 'local', or None; got "
                            f"{type(kv).__name__}")
        return store, update and store.is_capable(kvs.KVStoreBase.OPTIMIZER)

    def _init_kvstore(self):
        contexts = self._check_contexts()
        if contexts != self._contexts:
            self._contexts = contexts
            self._updaters = [opt.get_updater(self._optimizer) for _ in contexts]
        asked = self._kvstore_params['update_on_kvstore']
        store, update = self._create_kvstore(contexts)
        self._distributed = store is not None and 'dist' in store.type
        if self._distributed and 'async' in store.type:
            if asked is False:
                raise ValueError('Please set update_on_kvstore=True when training '
                                 'in async mode.')
            update = True
        if asked is not None:
            update = bool(asked)
        if store is not None and update and \
                not store.is_capable(kvs.KVStoreBase.OPTIMIZER):
            if asked:
                raise ValueError(f'Please set update_on_kvstore=False when training '
                                 f'with {type(store)}: it cannot run an optimizer')
            update = False
        if store is None:
            self._kvstore, self._update_on_kvstore = None, None
        else:
            if self._compression_params:
                store.set_gradient_compression(self._compression_params)
            if update:
                store.set_optimizer(self._optimizer)
            self._kvstore, self._update_on_kvstore = store, update
        self._kv_initialized = True

    def _init_params(self):
        """Put every parameter in the store and broadcast its first copy."""
        later, keys, firsts, outs = [], [], [], []
        kv = self._kvstore
        if kv is not None:
            for p in self._params_to_init:
                if p._data is None:             # deferred: on a later step
                    later.append(p)
                    continue
                data, idx = p.list_data(), self._param2idx[p.name]
                if isinstance(kv, kvs.KVStore) and idx in kv:
                    kv._reinit(idx, data[0])     # a store object used again
                    kv.pull(idx, out=data)
                elif isinstance(kv, kvs.KVStore):
                    keys.append(idx)
                    firsts.append(data[0])
                    outs.append(data)
                else:                            # a store of the user's: a key a call
                    kv.broadcast(idx, data[0], data)
            if keys:              # one call: a dist store then waits once
                kv.broadcast(keys, firsts, outs)
        self._params_to_init = later

    def _ensure_init(self):
        if not self._kv_initialized or self._check_contexts() != self._contexts:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    # -- hyperparameters ---------------------------------------------------------------
    @property
    def optimizer(self):
        """The :class:`~d2lmini.optimizer.Optimizer` that updates the parameters."""
        return self._optimizer

    @property
    def learning_rate(self):
        """The current learning rate (the scheduler's, if there is one)."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Set the learning rate (not allowed with an LR scheduler)."""
        self._optimizer.set_learning_rate(lr)

    def _check_and_rescale_grad(self, scale):
        if self._update_on_kvstore and self._distributed and self._kv_initialized \
                and self._optimizer.rescale_grad != scale:
            raise UserWarning('Possible change in the `batch_size` from previous '
                              '`step` detected. Optimizer gradient normalizing '
                              'factor will not change w.r.t new batch_size when '
                              'update_on_kvstore=True and when distributed kvstore '
                              'is used.')
        self._optimizer.rescale_grad = scale

    # -- stale gradients ------------------------------------------------------------------
    # MXNet's rule: every copy (one per context) of a parameter with
    # grad_req != 'null' must have a *fresh* gradient, one a backward pass
    # wrote since the last update consumed it (``NDArray._fresh_grad``, set
    # by autograd.backward, cleared here).  A gradient never written counts
    # as stale, so a step before the first backward is an error too.
    def _fresh(self):
        """Per parameter, per context: was the gradient written since last step?

        ``None`` for parameters with ``grad_req='null'``.
        """
        return [None if p.grad_req == 'null' else
                [bool(w._fresh_grad) for w in p.list_data()]
                for p in self._params]

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

    def _consume(self, fresh):
        # The gradients used by this step are stale from now on.  (MXNet
        # clears them only when the contexts run the update, so with
        # update_on_kvstore it reports a gradient that was never written,
        # but not one that went stale later; here both paths report both.)
        for p, row in zip(self._params, fresh):
            if row is not None:
                for w, was_fresh in zip(p.list_data(), row):
                    if was_fresh:
                        w._fresh_grad = False

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

        Only with ``update_on_kvstore=False``; follow with :meth:`update`.
        """
        self._ensure_init()
        if self._update_on_kvstore:
            raise _UpdateOnKVStoreError(
                'allreduce_grads() when parameters are updated on kvstore is not '
                'supported. Try setting `update_on_kvstore` to False when '
                'creating trainer.')
        self._allreduce_grads(self._fresh())

    def _allreduce_grads(self, fresh):
        kv = self._kvstore
        if kv is None:
            return
        todo = [i for i, p in enumerate(self._params)
                if p.grad_req != 'null' and any(fresh[i])]
        if self._distributed and todo:
            # one call for all keys: every push leaves before the first pull
            # waits, so the network round trips overlap instead of adding up
            grads = [self._params[i].list_grad() for i in todo]
            out = [self._params[i].list_data() for i in todo] \
                if self._update_on_kvstore else None
            kv.pushpull(todo, grads, out=out)
            return
        for i in todo:
            p = self._params[i]
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
        fresh = self._fresh()
        if not ignore_stale_grad:
            self._check_stale(fresh)
        self._update(fresh)

    def _update(self, fresh):
        scaler = getattr(self, '_amp_loss_scaler', None)     # mx.contrib.amp
        if scaler is not None and scaler.has_overflow(self._params):
            return                       # an inf/nan gradient: skip the update
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
        self._consume(fresh)

    # -- checkpoints -----------------------------------------------------------------------
    def save_states(self, fname):
        """Save the optimizer's states and counters to ``fname`` (no pickle).

        One ``nd.save`` archive (:mod:`d2lmini.kvstore.states`), written by
        the store when it runs the optimizer, else from the first context
        (all contexts hold the same states).
        """
        self._ensure_init()
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
            return
        _states.save(fname, self._updaters[0], dump_optimizer=True,
                     extra={'params': [p.name for p in self._params]})

    def load_states(self, fname):
        """Load what :meth:`save_states` wrote (on any number of contexts)."""
        self._ensure_init()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            shapes = {i: p.shape for i, p in enumerate(self._params)}
            _states.load(fname, list(zip(self._updaters, self._contexts)),
                         shape_of=lambda i: shapes.get(i),
                         contexts=self._contexts, num_params=len(self._params))
            for upd in self._updaters:
                upd.optimizer = self._optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))
