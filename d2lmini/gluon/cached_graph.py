"""What ``hybridize()`` turns a HybridBlock into: a Symbol and its plans.

On the first call after ``hybridize()`` the Block's ``hybrid_forward`` runs
once with ``F = mx.sym`` and Symbol inputs (``data``, or ``data0``,
``data1``, ...), its Parameters as variables named after them: the result
is the Block's graph, the same kind of Symbol ``mx.sym`` builds by hand.
Every later call looks up the :class:`~d2lmini.symbol.graph.Plan` for its
input shapes, dtypes, context and mode (lowered once, on first sight) and
runs it as one engine operation.  Under ``autograd.record()`` the plan puts
the imperative nodes on the tape, so ``loss.backward()`` gives the
imperative gradients.

``export`` saves this Symbol (``path-symbol.json``) and the Parameters
(``path-0000.params``); :class:`SymbolBlock` runs a Symbol as a Block.
"""
from .. import autograd as _ag
from ..ndarray import NDArray
from ..symbol import symbol as _sym
from ..symbol.graph import lower


def flatten(args):
    """Nested lists of NDArrays/None -> (flat list, format to rebuild it):
    MXNet's input format, 0 for a value, -1 for None, a list for a list."""
    flat, fmt = [], []
    for a in args:
        if isinstance(a, (list, tuple)):
            f2, sub = flatten(a)
            flat += f2
            fmt.append(sub)
        elif a is None:
            fmt.append(-1)
        else:
            flat.append(a)
            fmt.append(0)
    return flat, fmt


def regroup(flat, fmt):
    """Inverse of :func:`flatten`: ``flat`` values in the nesting ``fmt``."""
    it = iter(flat)

    def build(f):
        out = []
        for x in f:
            if isinstance(x, list):
                out.append(build(x))
            else:
                out.append(None if x == -1 else next(it))
        return out
    return build(fmt)


class CachedGraph:
    """A HybridBlock's graph: its Symbol, where each input comes from, plans."""

    def __init__(self, symbol, input_names, params, out_fmt, single):
        self.symbol = symbol
        self.nodes = symbol._nodes()
        self.inputs = [n for n in self.nodes if n.is_variable]
        where = {name: i for i, name in enumerate(input_names)}
        self.sources = []            # int: the i-th input; else a Parameter
        for n in self.inputs:
            if n.name in where:
                self.sources.append(where[n.name])
            elif n.name in params:
                self.sources.append(params[n.name])
            else:
                raise ValueError(f"the graph's input '{n.name}' is neither a data "
                                 f"input nor a Parameter of the block")
        self.input_names = list(input_names)
        self.out_fmt = out_fmt
        self.single = single
        self.plans = {}
        self._cache = {}                 # ctx -> the Parameters' arrays there

    def _arrays(self, flat, ctx):
        """The graph's input arrays: data inputs and Parameters' data on ctx.

        The Parameters' arrays are cached per context and re-read only when
        a Parameter got new arrays (initialize, load, reset_ctx, cast).
        """
        cache = self._cache.get(ctx)
        if cache is None or not all(p._data is lst for p, lst in cache[0]):
            params = [(s, s._data) for s in self.sources if s.__class__ is not int]
            template = [None if s.__class__ is int else s.data(ctx)
                        for s in self.sources]
            positions = [(k, s) for k, s in enumerate(self.sources)
                         if s.__class__ is int]
            cache = self._cache[ctx] = (params, template, positions)
        arrays = list(cache[1])
        for k, i in cache[2]:
            arrays[k] = flat[i]
        return arrays

    def __call__(self, flat, ctx):
        arrays = self._arrays(flat, ctx)
        training = _ag._STATE[1]
        if len(flat) == 1:
            a = flat[0]
            key = (ctx, training, a._shape, a._dtype)
        else:
            key = (ctx, training) + tuple((a._shape, a._dtype) for a in flat)
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = lower(
                self.nodes, self.inputs, self.symbol._outputs,
                [a._shape for a in arrays], [a._dtype for a in arrays], ctx,
                training)
        outs = plan.launch(arrays)
        cls = flat[0].__class__ if flat else NDArray
        if cls is not NDArray:       # mx.np inputs give mx.np outputs, as invoke
            for o in outs:
                o.__class__ = cls
        if self.single:
            return outs[0]
        return regroup(outs, self.out_fmt)


def build(block, args):
    """Trace ``block`` with Symbol inputs shaped like ``args``: a CachedGraph."""
    flat, fmt = flatten(args)
    names = ['data'] if len(flat) == 1 else [f'data{i}' for i in range(len(flat))]
    syms = regroup([_sym.Variable(n) for n in names], fmt)
    out = block._symbolic_forward(*syms)
    if isinstance(out, _sym.Symbol):
        single = len(out) == 1
        outs, out_fmt = list(out), None
    else:
        outs, out_fmt = flatten(out)
        single = False
        if not all(isinstance(o, _sym.Symbol) and len(o) == 1 for o in outs):
            raise TypeError(f'{type(block).__name__}.hybrid_forward must return '
                            f'Symbols (or nested lists of them) when F is mx.sym')
    params = {p.name: p for p in block.collect_params().values()}
    return CachedGraph(_sym.Group(outs), names, params, out_fmt, single)


def is_symbol(x):
    return isinstance(x, _sym.Symbol)


def holds(args, cls):
    """Whether nested lists ``args`` hold an instance of ``cls``."""
    for a in args:
        if isinstance(a, cls):
            return True
        if isinstance(a, (list, tuple)) and holds(a, cls):
            return True
    return False


def has_symbol(args):
    """Whether nested lists ``args`` hold a Symbol (a symbolic call)."""
    return holds(args, _sym.Symbol)


__all__ = ['CachedGraph', 'build', 'flatten', 'regroup', 'NDArray']
