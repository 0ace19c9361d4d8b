"""Blocks: the building unit of Gluon models (MXNet 1.x semantics).

A :class:`Block` owns Parameters and child Blocks.  Assigning one to an
attribute registers it (``self.dense = nn.Dense(10)``), so
``collect_params()`` finds everything below a Block and ``save_parameters``
names each value by its place in the tree (``'0.weight'``).  Every Block has
a ``prefix`` (``dense0_``) that names its parameters (``dense0_weight``);
inside ``with net.name_scope():`` children get the parent's prefix too.

A :class:`HybridBlock` writes its computation as
``hybrid_forward(F, x, *args, **params)``: ``F`` is the ``nd`` module and its
Parameters arrive as keyword arguments holding the copies on ``x``'s context.
It also infers the shapes of deferred Parameters from the first input
(``infer_shape``).  ``hybridize()`` is accepted and currently changes nothing.

Examples
--------
>>> class MLP(nn.Block):
...     def __init__(self, **kwargs):
...         super().__init__(**kwargs)
...         self.hidden = nn.Dense(256, activation='relu')
...         self.output = nn.Dense(10)
...     def forward(self, x):
...         return self.output(self.hidden(x))
>>> net = MLP(); net.initialize(); net(nd.ones((2, 20))).shape
(2, 10)
"""
import collections
import difflib
import inspect
import re
import threading
import warnings

import numpy as np

from .. import initializer
from .. import ndarray as nd
from ..ndarray import NDArray
from .parameter import (DeferredInitializationError, Parameter, ParameterDict,
                        load_checked)

__all__ = ['Block', 'HybridBlock']

# --- naming --------------------------------------------------------------------------
_COUNTERS = {}                        # top-level blocks: 'dense' -> next index
_COUNTER_LOCK = threading.Lock()


def _next_name(hint):
    with _COUNTER_LOCK:
        n = _COUNTERS.get(hint, 0)
        _COUNTERS[hint] = n + 1
    return f'{hint}{n}'


class _BlockScope:
    """The name scope of a Block: children created inside get its prefix."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """(prefix, ParameterDict) for a new Block, from the current scope."""
        current = getattr(_BlockScope._current, 'value', None)
        if current is None:
            if prefix is None:
                prefix = _next_name(hint) + '_'
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = f'{hint}{count}_'
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, 'value', None)
        _BlockScope._current.value = self
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return False
        _BlockScope._current.value = self._old_scope
        return False


def _indent(s, n):
    lines = s.split('\n')
    return lines[0] + ''.join('\n' + ' ' * n + line for line in lines[1:])


class _HookHandle:
    """Returned by ``register_forward_hook``; ``detach()`` removes the hook."""
    _next_id = [0]

    def __init__(self, hooks, hook):
        self._hooks = hooks
        self._id = self._next_id[0]
        self._next_id[0] += 1
        hooks[self._id] = hook

    def detach(self):
        self._hooks.pop(self._id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def _reject_kwargs(block, kwargs):
    """A TypeError naming the layer, the bad keyword and the accepted ones."""
    accepted = [p.name for p in inspect.signature(type(block).__init__).parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and
                p.name != 'self']
    accepted += [k for k in ('prefix', 'params') if k not in accepted]
    hints = []
    for k in sorted(kwargs):
        close = difflib.get_close_matches(k, accepted, n=1)
        hints.append(f'{k!r}' + (f' (did you mean {close[0]!r}?)' if close else ''))
    return TypeError(f'{type(block).__name__}() got unexpected keyword argument(s) '
                     f'{", ".join(hints)}; it accepts: {", ".join(accepted)}')


class Block:
    """Base class of all layers and models.

    Subclasses create their layers and Parameters in ``__init__`` (after
    ``super().__init__(**kwargs)``) and define ``forward(self, *args)``.

    Parameters
    ----------
    prefix : str, optional
        Prefix of the names of this Block's Parameters and children
        (default: the class name in lower case plus a counter, ``mlp0_``).
    params : ParameterDict, optional
        Share these Parameters instead of creating new ones
        (``nn.Dense(8, params=other.params)``).
    """

    def __init__(self, prefix=None, params=None, **kwargs):
        if kwargs:
            raise _reject_kwargs(self, kwargs)
        if params is not None and not isinstance(params, ParameterDict):
            raise TypeError(f'params must be a ParameterDict (e.g. other.params or '
                            f'other.collect_params()), got {type(params).__name__}')
        d = self.__dict__
        d['_empty_prefix'] = prefix == ''
        d['_children'] = collections.OrderedDict()
        d['_reg_params'] = {}
        d['_forward_hooks'] = collections.OrderedDict()
        d['_forward_pre_hooks'] = collections.OrderedDict()
        prefix, params = _BlockScope.create(prefix, params, self._alias())
        d['_prefix'] = prefix
        d['_params'] = params
        d['_name'] = prefix[:-1] if prefix.endswith('_') else prefix
        d['_scope'] = _BlockScope(self)

    def _alias(self):
        return type(self).__name__.lower()

    def __repr__(self):
        mods = '\n'.join(f'  ({key}): {_indent(repr(block), 2)}'
                         for key, block in self.__dict__.items()
                         if isinstance(block, Block))
        return f'{type(self).__name__}(\n{mods}\n)'

    def __setattr__(self, name, value):
        """Register Blocks and Parameters assigned as attributes."""
        d = self.__dict__
        if isinstance(value, (Block, Parameter)) and '_children' not in d:
            raise AttributeError(
                f'{type(self).__name__}: cannot assign the {type(value).__name__} '
                f'{name!r} before Block.__init__ ran; call super().__init__(**kwargs) '
                f'first in your __init__')
        existing = d.get(name)
        if isinstance(existing, (Block, Parameter)) and \
                not isinstance(value, type(existing)):
            raise TypeError(f'{type(self).__name__}.{name} holds a '
                            f'{type(existing).__name__}; it cannot be replaced by a '
                            f'{type(value).__name__}')
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            old = self._reg_params.get(name)
            if old is not None and old is not value:
                raise ValueError(f'{type(self).__name__}.{name} is already the '
                                 f'Parameter {old.name!r}; to share parameters between '
                                 f'Blocks pass params=... when creating the Block')
            self._reg_params[name] = value
        object.__setattr__(self, name, value)

    # --- names and parameters -------------------------------------------------------
    @property
    def prefix(self):
        """The prefix of this Block's Parameter names, e.g. ``'dense0_'``."""
        return self._prefix

    @property
    def name(self):
        """The prefix without its trailing ``_``, e.g. ``'dense0'``."""
        return self._name

    @property
    def params(self):
        """This Block's own Parameters (children's are in ``collect_params()``)."""
        return self._params

    def name_scope(self):
        """``with self.name_scope():`` children created inside get this prefix."""
        return self._scope

    def collect_params(self, select=None):
        """A ParameterDict of this Block's and all descendants' Parameters.

        ``select`` is a regular expression matched against the names, e.g.
        ``'.*weight'`` or ``'dense0_weight|dense0_bias'``.
        """
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({k: v for k, v in self.params.items() if pattern.match(k)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=''):
        """{'0.weight': Parameter, ...}: names by position in the Block tree."""
        if prefix:
            prefix += '.'
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def register_child(self, block, name=None):
        """Add ``block`` as a child (named ``name``, default: its index)."""
        if not isinstance(block, Block):
            raise TypeError(f'{type(self).__name__}: children must be Blocks, got '
                            f'{type(block).__name__}')
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """Call ``hook(block, inputs)`` before every forward."""
        return _HookHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook):
        """Call ``hook(block, inputs, output)`` after every forward."""
        return _HookHandle(self._forward_hooks, hook)

    def apply(self, fn):
        """Call ``fn(block)`` on every descendant, then on this Block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    # --- initialization, devices, types -------------------------------------------------
    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialize all Parameters (``collect_params().initialize(...)``).

        ``ctx`` is a Context or a list of them (data-parallel training keeps
        one copy per device, all with the same initial values).
        """
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def reset_ctx(self, ctx):
        """Move all Parameters to ``ctx``, keeping their values."""
        self.collect_params().reset_ctx(ctx)

    def hybridize(self, active=True, **kwargs):
        """Accepted for MXNet compatibility; execution stays imperative."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Convert all Parameters to ``dtype``."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)

    # --- saving and loading --------------------------------------------------------------
    def save_parameters(self, filename, deduplicate=False):
        """Save the Parameters' values under their structural names ('0.weight').

        Uses :func:`nd.save`: an atomic write in MXNet 1.x's file format, so
        MXNet's ``load_parameters`` reads the file (and this method MXNet's).
        Values on several contexts are averaged.  ``deduplicate=True`` stores a
        shared Parameter once.
        """
        params = self._collect_params_with_prefix()
        if deduplicate:
            seen, unique = set(), {}
            for k, p in params.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    unique[k] = p
            params = unique
        nd.save(filename, {k: p._reduce() for k, p in params.items()})

    def load_parameters(self, filename, ctx=None, allow_missing=False,
                        ignore_extra=False, cast_dtype=False, dtype_source='current'):
        """Load what :meth:`save_parameters` wrote.

        The file's names and shapes are checked against this Block first; a
        mismatch raises a ValueError listing every missing, extra and
        mis-shaped parameter, and nothing is loaded.  Parameters not yet
        initialized are created on ``ctx`` (default: the current context).
        """
        if dtype_source not in ('current', 'saved'):
            raise ValueError(f"dtype_source must be 'current' or 'saved', got "
                             f"{dtype_source!r}")
        loaded = nd.load(filename)
        if isinstance(loaded, list) and not loaded:
            loaded = {}                     # MXNet's format: no arrays, no names
        if not isinstance(loaded, dict):
            raise ValueError(f'{filename}: holds a list of arrays, not named '
                             f'parameters (was it written by nd.save?)')
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if dtype_source == 'saved':
            for k, arr in loaded.items():
                if k in params:
                    params[k].cast(arr.dtype)
        if loaded and not any('.' in k for k in loaded) and \
                not set(loaded) & set(params):
            # A file from collect_params().save(f, strip_prefix=net.prefix):
            # full names without this Block's prefix.
            full = dict(self.collect_params().items())
            if set(self.prefix + k for k in loaded) & set(full):
                self.collect_params().load(filename, ctx, allow_missing,
                                           ignore_extra, self.prefix, cast_dtype,
                                           dtype_source)
                return
        load_checked(loaded, params, filename, ctx, allow_missing, ignore_extra,
                     cast_dtype)

    def save_params(self, filename):
        warnings.warn('save_params is deprecated; use save_parameters',
                      DeprecationWarning, stacklevel=2)
        self.save_parameters(filename)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        warnings.warn('load_params is deprecated; use load_parameters',
                      DeprecationWarning, stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    # --- running -------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Run ``forward`` (with hooks) in the context of the first input."""
        for hook in tuple(self._forward_pre_hooks.values()):
            hook(self, args)
        x = args[0] if args else None
        if isinstance(x, NDArray):
            with x._ctx:
                out = self.forward(*args, **kwargs)
        else:
            out = self.forward(*args, **kwargs)
        for hook in tuple(self._forward_hooks.values()):
            hook(self, args, out)
        return out

    def forward(self, *args):
        """Override this: the computation of the Block."""
        raise NotImplementedError(f'{type(self).__name__} must define '
                                  f'forward(self, x, ...)')

    def summary(self, *inputs):
        """Print each layer's output shape and parameter count for ``inputs``."""
        rows, handles, seen = [], [], set()

        def hook(block, _, out):
            shapes = [o.shape for o in (out if isinstance(out, (list, tuple))
                                        else [out]) if isinstance(o, NDArray)]
            n = 0
            for p in block._reg_params.values():
                if id(p) not in seen and p.shape is not None:
                    seen.add(id(p))
                    n += int(np.prod(p.shape))
            rows.append((f'{type(block).__name__}-{len(rows) + 1}',
                         ', '.join(str(s) for s in shapes), n))

        def add(block):
            handles.append(block.register_forward_hook(hook))
        self.apply(add)
        try:
            self(*inputs)
        finally:
            for h in handles:
                h.detach()
        width = max([len(r[0]) for r in rows] + [12]) + 2
        line = '-' * (width + 46)
        print(line)
        print(f'{"Layer (type)":>{width}}{"Output Shape":>30}{"Param #":>16}')
        print('=' * (width + 46))
        for name, shape, n in rows:
            print(f'{name:>{width}}{shape:>30}{n:>16}')
        print('=' * (width + 46))
        print(f'Parameters in total: {sum(r[2] for r in rows)}')
        print(line)


class HybridBlock(Block):
    """A Block whose computation is ``hybrid_forward(F, x, *args, **params)``.

    ``F`` is the ``nd`` module; each registered Parameter is passed as a
    keyword argument (its attribute name) holding its data on ``x``'s
    context.  Parameters with unknown (0) dimensions are initialized on the
    first call, after ``infer_shape(x, *args)`` has filled in their shapes.
    """

    def __init__(self, prefix=None, params=None, **kwargs):
        super().__init__(prefix=prefix, params=params, **kwargs)
        self.__dict__['_active'] = False
        self.__dict__['_flags'] = {}

    def hybridize(self, active=True, **kwargs):
        """Accepted for MXNet compatibility (``static_alloc=...`` too)."""
        self._active = active
        self._flags = dict(kwargs)
        super().hybridize(active, **kwargs)

    def infer_shape(self, *args):
        """Fill in the unknown dimensions of this Block's Parameters from inputs.

        Layers with deferred Parameters (Dense, Conv2D, BatchNorm, ...)
        override it; ``x.shape`` is all they need.
        """

    def _params_on(self, ctx):
        return {k: v.data(ctx) for k, v in self._reg_params.items()}

    def forward(self, x, *args, **kwargs):
        if not isinstance(x, NDArray):
            raise TypeError(f'{type(self).__name__} expects an NDArray as its first '
                            f'input, got {type(x).__name__}; convert with nd.array(...)')
        ctx = x._ctx
        if not self._reg_params:
            return self.hybrid_forward(nd, x, *args, **kwargs)
        try:
            params = self._params_on(ctx)
        except DeferredInitializationError:
            self.infer_shape(x, *args)
            for p in list(self._reg_params.values()) + list(self.params.values()):
                p._finish_deferred_init()
            params = self._params_on(ctx)
        return self.hybrid_forward(nd, x, *args, **kwargs, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override this (or ``forward``): the computation, written with ``F``."""
        raise NotImplementedError(f'{type(self).__name__} must define '
                                  f'hybrid_forward(self, F, x, ...) or forward(self, x)')

    def export(self, path, epoch=0):
        raise NotImplementedError('export needs a symbolic graph, which d2lmini does '
                                  'not build yet; use save_parameters')
