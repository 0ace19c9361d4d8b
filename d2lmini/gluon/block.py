"""Blocks: the building unit of Gluon models (MXNet 1.x semantics).

Why one long file: Block, HybridBlock and SymbolBlock are one class
hierarchy whose methods call each other (hybridize traces what
``Block.__call__`` runs; SymbolBlock is a HybridBlock built from a graph),
as in MXNet's own ``gluon/block.py``; read ``Block`` first, the rest builds
on it.

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
(``infer_shape``).  Its inputs may be NDArrays, ``None`` and (nested) lists.
``hybridize()`` turns it into a graph: the first call runs imperatively
(finishing deferred initialization) and traces ``hybrid_forward`` with
``F = mx.sym`` into a Symbol; later calls run that Symbol's plan
(:mod:`.cached_graph`), one engine operation per call.  ``export`` writes
the Symbol and the Parameters; :class:`SymbolBlock` runs a Symbol as a
Block.

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
from .. import name as _name
from .. import util as _util
from .. import ndarray as nd
from ..ndarray import NDArray
from .parameter import DeferredInitializationError, Parameter
from .parameter_dict import ParameterDict, load_checked
from . import cached_graph as _cg

__all__ = ['Block', 'HybridBlock', 'SymbolBlock']

# --- naming --------------------------------------------------------------------------
class _BlockScope:
    """The name scope of a Block: children created inside get its prefix."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """(prefix, ParameterDict) for a new Block, from the current scope."""
        current = getattr(_BlockScope._current, 'value', None)
        if current is None:
            if prefix is None:         # top level: mx.name's current manager
                prefix = _name._current().get(None, hint) + '_'
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
        # As in MXNet, names from mx.name inside the scope get the prefix too.
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return False
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope
        return False


def _holds_unregistered_block(data, children):
    """Whether nested lists/tuples/dicts ``data`` hold a Block not in ``children``."""
    if isinstance(data, (list, tuple)):
        return any(_holds_unregistered_block(v, children) for v in data)
    if isinstance(data, dict):
        return any(_holds_unregistered_block(v, children) for v in data.values())
    return isinstance(data, Block) and not any(data is c for c in children)


# --- inputs of a HybridBlock ---------------------------------------------------------
_HYBRID = threading.local()      # .inside: running within a hybridized Block


def _input_contexts(args):
    """(context of the first NDArray, set of all contexts) in nested lists."""
    first, ctxs = None, set()
    stack = list(reversed(args))
    while stack:
        a = stack.pop()
        if isinstance(a, NDArray):
            if first is None:
                first = a._ctx
            ctxs.add(a._ctx)
        elif isinstance(a, (list, tuple)):
            stack.extend(reversed(a))
    return first, ctxs


def _input_format(args, block_name):
    """``(flat NDArrays, MXNet's input format)`` of a hybridized call: 0 for
    an NDArray, -1 for None, a list for a list; anything else is refused."""
    flat, fmt = _cg.flatten(args)
    for a in flat:
        if not isinstance(a, NDArray):
            raise ValueError(
                f'{block_name}: after hybridize() the inputs of a HybridBlock must '
                f'be NDArrays, None or (nested) lists of them, but got {a!r} of '
                f'type {type(a).__name__}')
    return flat, fmt


def _formats_agree(stored, fmt):
    """Equal, or differing only by trailing Nones (arguments left to defaults)."""
    n = min(len(stored), len(fmt))
    return stored[:n] == fmt[:n] and all(f == -1 for f in stored[n:] + fmt[n:])


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
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({k: v for k, v in self.params.items() if pattern.match(k)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _check_container_with_block(self):
        """Warn about Blocks kept in a list/tuple/dict attribute: they are not
        children, so their Parameters are invisible to collect_params()."""
        children = list(self._children.values())
        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not k.startswith('__') and \
                    k != '_children' and _holds_unregistered_block(v, children):
                warnings.warn(
                    f'"{type(self).__name__}.{k}" is an unregistered container with '
                    f'Blocks. Note that Blocks inside the list, tuple or dict will '
                    f'not be registered automatically. Make sure to register them '
                    f'using register_child() or switching to '
                    f'nn.Sequential/nn.HybridSequential instead. ', stacklevel=3)

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
        """Deprecated: MXNet's older format, the parameters under their full
        names less this Block's prefix (``save_parameters`` names them by
        their place in the tree).  A ``SymbolBlock`` of the same graph reads
        it back."""
        warnings.warn('save_params is deprecated; use save_parameters',
                      DeprecationWarning, stacklevel=2)
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        """Deprecated: loads what :meth:`save_params` wrote."""
        warnings.warn('load_params is deprecated; use load_parameters',
                      DeprecationWarning, stacklevel=2)
        self.collect_params().load(filename, ctx, allow_missing, ignore_extra,
                                   restore_prefix=self.prefix)

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
        """Print each layer's output shape and parameter count for ``inputs``.

        The table is MXNet's: one row per layer (containers left out) in the
        order the layers run, then the totals, counting a shared Parameter
        once per use and once in 'Unique parameters in model'.  The Block
        must be initialized and not hybridized.
        """
        from .nn.basic_layers import Sequential, HybridSequential
        rows = [('Input', _shape_str(inputs), 0, 0, 0)]
        seen = set()

        def hook(block, _, outputs):
            n = trainable = shared = 0
            for p in block.params.values():
                size = int(np.prod(p.shape))     # p may live on several contexts
                n += size
                trainable += 0 if p.grad_req == 'null' else size
                if id(p) in seen:
                    shared += size
                seen.add(id(p))
            rows.append((f'{type(block).__name__}-{len(rows)}', _shape_str(outputs),
                         n, trainable, shared))

        blocks = []
        self.apply(blocks.append)
        for block in blocks:
            # A hybridized Block is one graph in MXNet: no per-layer hooks.
            assert not getattr(block, '_active', False), \
                f'"{block.name}" must not be hybridized to print summary.'
        handles = [b.register_forward_hook(hook) for b in blocks
                   if not isinstance(b, (Sequential, HybridSequential))]
        try:
            self(*inputs)
        finally:
            for h in handles:
                h.detach()
        line = '{:>20}  {:>42} {:>15}'
        total, trainable, shared = (sum(r[i] for r in rows) for i in (2, 3, 4))
        print('-' * 80)
        print(line.format('Layer (type)', 'Output Shape', 'Param #'))
        print('=' * 80)
        for name, shape, n, _, _ in rows:
            print(line.format(name, shape, n))
        print('=' * 80)
        print('Parameters in forward computation graph, duplicate included')
        print(f'   Total params: {total}')
        print(f'   Trainable params: {trainable}')
        print(f'   Non-trainable params: {total - trainable}')
        print(f'Shared params in forward computation graph: {shared}')
        print(f'Unique parameters in model: {total - shared}')
        print('-' * 80)


def _shape_str(args):
    """Shapes of the NDArrays in nested lists, as MXNet's summary writes them."""
    def shapes(a):
        if isinstance(a, (list, tuple)):
            return [shapes(x) for x in a]
        return a.shape if isinstance(a, NDArray) else a
    s = shapes(args)
    return str(s)[1:-1] if isinstance(s, list) else str(s)


def _np_mode():
    return _util._FLAGS.np_array


def _wrong_array_type(block, x):
    """MXNet refuses a legacy NDArray in NumPy mode and an mx.np array
    outside it (its operators are not the same); so does d2lmini."""
    if _np_mode():
        raise TypeError(
            f'{type(block).__name__}: NumPy mode is on (npx.set_np()), so the block '
            f'takes mx.np arrays, got an nd.NDArray {x.shape}; convert it with '
            f'x.as_np_ndarray(), or call npx.reset_np() to use nd arrays')
    raise TypeError(
        f'{type(block).__name__}: got an mx.np array {x.shape} outside NumPy mode; '
        f'call npx.set_np() first (or convert it with x.as_nd_ndarray())')


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
        self.__dict__['_in_format'] = None    # input structure of the 1st hybrid call
        self.__dict__['_cached_graph'] = None  # None: not traced; False: cannot be

    def hybridize(self, active=True, clear=True, **kwargs):
        """Run this Block (and its children) as a graph from the next call on.

        The first call after ``hybridize()`` traces ``hybrid_forward`` with
        ``F = mx.sym``; later calls run the traced graph.  MXNet's flags
        (``static_alloc``, ``static_shape``) are accepted: a plan is always
        static for its input shapes.  ``clear=False`` keeps a graph already
        traced; ``hybridize(False)`` goes back to imperative execution.
        """
        self._active = active
        self._flags = dict(kwargs)
        if clear:
            self._in_format = None
            self.__dict__['_cached_graph'] = None
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self.name}" is being hybridized while still having '
                          f'forward hook/pre-hook. If "{self.name}" is a child of '
                          f'HybridBlock, the hooks will not take effect.', stacklevel=2)
        super().hybridize(active, **kwargs)

    def __call__(self, *args, **kwargs):
        # The hybridized fast path: one NDArray in, the traced graph, no hooks.
        graph = self._cached_graph
        if graph and len(args) == 1 and not kwargs and self._in_format == [0] \
                and args[0].__class__ is NDArray and not self._forward_hooks \
                and not self._forward_pre_hooks \
                and not getattr(_HYBRID, 'inside', False):
            x = args[0]
            return graph([x], x._ctx)
        return super().__call__(*args, **kwargs)

    def register_child(self, block, name=None):
        """Add a child; it must be a HybridBlock too (it joins this graph)."""
        if not isinstance(block, HybridBlock):
            raise ValueError(
                f'Children of HybridBlock must also be HybridBlock, but '
                f'{type(block).__name__} ({block.name}) is a Block. If you are '
                f'using Sequential, please try HybridSequential instead.')
        self.__dict__['_in_format'] = None    # a new graph, as MXNet rebuilds it
        self.__dict__['_cached_graph'] = None
        super().register_child(block, name)

    def cast(self, dtype):
        self.__dict__['_in_format'] = None
        self.__dict__['_cached_graph'] = None
        super().cast(dtype)

    def infer_shape(self, *args):
        """Fill in the unknown dimensions of this Block's Parameters from inputs.

        Layers with deferred Parameters (Dense, Conv2D, BatchNorm, ...)
        override it; ``x.shape`` is all they need.
        """

    def _params_on(self, ctx):
        return {k: v.data(ctx) for k, v in self._reg_params.items()}

    def forward(self, x, *args, **kwargs):
        """Run ``hybrid_forward`` with the Parameters on the inputs' context.

        Inputs may be NDArrays, ``None`` or (nested) lists of them, and, until
        ``hybridize()``, anything else too; at least one NDArray must be among
        them: its context (the first one found) is where the Block runs.
        """
        if isinstance(x, NDArray) and not args:     # the common case, kept cheap
            ctx, ctxs = x._ctx, (x._ctx,)
            if (x.__class__ is NDArray) is _np_mode():
                _wrong_array_type(self, x)
        elif _cg.has_symbol((x,) + args):
            if _cg.holds((x,) + args, NDArray):
                raise ValueError(
                    f'{type(self).__name__}: the inputs mix Symbols and NDArrays; '
                    f'call a HybridBlock with Symbols only (to build a graph) or '
                    f'NDArrays only (to compute)')
            return self._symbolic_forward(x, *args, **kwargs)
        else:
            ctx, ctxs = _input_contexts((x,) + args)
        if ctx is None:
            raise ValueError(
                f'{type(self).__name__}: a HybridBlock needs at least one NDArray '
                f'among its inputs (None and nested lists are allowed), got '
                f'{", ".join(type(a).__name__ for a in (x,) + args)}; convert data '
                f'with nd.array(...)')
        if self._active and not getattr(_HYBRID, 'inside', False):
            return self._call_hybridized(ctx, ctxs, x, *args, **kwargs)
        if x is not None and not isinstance(x, NDArray):
            with ctx:
                return self._forward_on(ctx, x, *args, **kwargs)
        return self._forward_on(ctx, x, *args, **kwargs)

    def _forward_on(self, ctx, x, *args, **kwargs):
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

    def _call_hybridized(self, ctx, ctxs, *args, **kwargs):
        """Run the traced graph (tracing it on the first call).

        Refused as MXNet's cached graph refuses: inputs on several contexts,
        inputs other than NDArrays/None/lists (a graph has no place for a
        Python number), and a call whose structure of inputs (where the
        Nones and lists are) differs from the first call's.
        """
        if len(ctxs) > 1:
            raise ValueError(
                f'{type(self).__name__}: inputs on several contexts '
                f'{sorted(map(str, ctxs))}; after hybridize() a HybridBlock takes '
                f'its inputs on one context')
        flat, fmt = _input_format(args, type(self).__name__)
        if self._in_format is None:
            self._in_format = fmt
        elif not _formats_agree(self._in_format, fmt):
            raise ValueError(
                f'{type(self).__name__}: the argument structure of this call '
                f'{fmt} does not match the first call after hybridize() '
                f'{self._in_format} (0: an NDArray, -1: None, [...]: a list); '
                f'call hybridize() again to start anew')
        graph = self.__dict__.get('_cached_graph')
        if graph and not kwargs:
            return graph(flat, ctx)
        if graph is None and not kwargs and self._initialized():
            # First call with every Parameter known: as MXNet, only the
            # symbolic pass runs hybrid_forward (F = mx.sym), then the graph.
            graph = self.__dict__['_cached_graph'] = self._trace(args)
            if graph:
                return graph(flat, ctx)
        # First call with Parameters still deferred (or a Block that cannot be
        # traced): imperatively, which also finishes their initialization;
        # then trace the graph.
        _HYBRID.inside = True
        try:
            with ctx:
                out = self._forward_on(ctx, *args, **kwargs)
        finally:
            _HYBRID.inside = False
        if graph is None and not kwargs:
            self.__dict__['_cached_graph'] = self._trace(args)
        return out

    def _initialized(self):
        """Whether every Parameter of this Block and its children has data."""
        return all(p._data is not None for p in self.collect_params().values())

    def _trace(self, args):
        """The CachedGraph of this Block, or False (with a warning) if its
        ``hybrid_forward`` cannot run on Symbols (it reads a shape, ...)."""
        try:
            return _cg.build(self, args)
        except (AttributeError, TypeError, NotImplementedError, ValueError) as e:
            warnings.warn(f'{type(self).__name__} ({self.name}): hybridize() could '
                          f'not trace hybrid_forward with F=mx.sym ({e}); it runs '
                          f'imperatively', stacklevel=4)
            return False

    def _symbolic_forward(self, *args, **kwargs):
        """``hybrid_forward`` with ``F = mx.sym``: Parameters as variables."""
        from .. import symbol
        params = {k: p.var() for k, p in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, *args, **kwargs, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """Override this (or ``forward``): the computation, written with ``F``."""
        raise NotImplementedError(f'{type(self).__name__} must define '
                                  f'hybrid_forward(self, F, x, ...) or forward(self, x)')

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write ``path-symbol.json`` (the traced graph) and
        ``path-%04d.params`` (``arg:name``/``aux:name`` arrays), as MXNet.

        Returns the two file names.  The Block must have been hybridized and
        called once (that is when the graph is traced).
        """
        graph = self.__dict__.get('_cached_graph')
        if not graph:
            raise RuntimeError('Please first call block.hybridize() and then run '
                               'forward with this block at least once before calling '
                               'export.')
        sym_file = f'{path}-symbol.json'
        graph.symbol.save(sym_file)
        args = set(graph.symbol.list_arguments())
        aux = set(graph.symbol.list_auxiliary_states())
        arrays = {}
        for p in self.collect_params().values():
            if p.name in args:
                arrays['arg:' + p.name] = p._reduce()
            elif p.name in aux:
                arrays['aux:' + p.name] = p._reduce()
        params_file = f'{path}-{epoch:04d}.params'
        nd.save(params_file, arrays)
        return sym_file, params_file


class SymbolBlock(HybridBlock):
    """A Block that runs a Symbol: ``SymbolBlock(outputs, inputs, params=None)``.

    The variables of ``outputs`` that are not among ``inputs`` become
    Parameters named like them (shapes inferred on the first call), so a
    graph exported by ``HybridBlock.export`` (or built with ``mx.sym``) can
    be trained and used like any Block.

    >>> data = mx.sym.var('data')
    >>> net = gluon.SymbolBlock(mx.sym.FullyConnected(data, num_hidden=3), data)
    >>> net.initialize(); net(nd.ones((2, 5))).shape
    (2, 3)
    """

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix='', params=None)
        from .. import symbol
        if isinstance(inputs, symbol.Symbol):
            inputs = list(inputs)
        if isinstance(outputs, (list, tuple)):
            outputs = symbol.Group(list(outputs)) if len(outputs) > 1 else outputs[0]
        names = []
        for i in inputs:
            if len(i) != 1 or not i._outputs[0][0].is_variable:
                raise ValueError(f'SymbolBlock: inputs must be variables, got {i}')
            names.append(i.name)
        missing = set(names) - set(outputs.list_inputs())
        if missing:
            raise ValueError(f'SymbolBlock: input(s) {sorted(missing)} are not used by '
                             f'the outputs; their inputs are {outputs.list_inputs()}')
        given = params if params is not None else {}
        aux = set(outputs.list_auxiliary_states())
        for name in outputs.list_inputs():
            if name in names:
                continue
            if name in given:
                self._params._params[name] = given[name]
            else:
                self.params.get(name, grad_req='null' if name in aux else 'write',
                                allow_deferred_init=True)
        self._reg = {p.name: p for p in self.params.values()}
        self.__dict__['_cached_graph'] = _cg.CachedGraph(
            outputs, names, self._reg, [0] * len(outputs), len(outputs) == 1)
        self._active = True

    def forward(self, x, *args):
        if _cg.is_symbol(x):
            graph = self.__dict__['_cached_graph']
            return graph.symbol(**dict(zip(graph.input_names, (x,) + args)))
        flat, _ = _cg.flatten((x,) + args)
        graph = self.__dict__['_cached_graph']
        if any(p._data is None for p in self._reg.values()):
            self._finish_init(graph, flat)
        return graph(flat, flat[0]._ctx)

    def _finish_init(self, graph, flat):
        shapes = dict(zip(graph.input_names, (a.shape for a in flat)))
        arg_shapes, _, aux_shapes = graph.symbol.infer_shape(**shapes)
        if arg_shapes is None:
            raise ValueError(f'SymbolBlock: cannot infer the parameter shapes from '
                             f'the inputs {shapes}')
        sym = graph.symbol
        known = dict(zip(sym.list_arguments(), arg_shapes))
        known.update(zip(sym.list_auxiliary_states(), aux_shapes))
        for name, p in self._reg.items():
            if p._data is None:
                p.shape = known[name]
                p._finish_deferred_init()

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError('SymbolBlock runs its Symbol')

    def hybridize(self, active=True, **kwargs):
        pass                      # always a graph

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None,
                allow_missing=False, ignore_extra=False):
        """A SymbolBlock from files written by ``export``.

        >>> net = gluon.SymbolBlock.imports('lenet-symbol.json', ['data'],
        ...                                 'lenet-0000.params')  # doctest: +SKIP
        """
        from .. import symbol
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        block = SymbolBlock(sym, [symbol.var(n) for n in input_names])
        if param_file is not None:
            block.collect_params().load(param_file, ctx=ctx, allow_missing=allow_missing,
                                        ignore_extra=ignore_extra, cast_dtype=True,
                                        dtype_source='saved')
        return block
