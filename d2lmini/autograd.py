"""Automatic differentiation: a tape of the operators run under ``record()``.

Like micrograd, but every node is an operator of the op table: recording an
op stores ``(op, inputs, outputs, attrs)``; :func:`backward` visits the nodes
in reverse topological order and calls each op's ``backward``, which is
written with NDArray operators, so gradients run on the engine too and can
themselves be recorded (``create_graph=True``: higher-order gradients).

>>> x = nd.array([1., 2.]); x.attach_grad()
>>> with autograd.record():
...     y = (x * x).sum()
>>> y.backward(); x.grad            # 2x
[2. 4.]
"""
__all__ = ['record', 'pause', 'train_mode', 'predict_mode', 'is_recording',
           'is_training', 'set_recording', 'set_training', 'backward', 'grad',
           'mark_variables', 'Function', 'NDArray']

from . import engine as _engine
from .base import MXNetError

_STATE = [False, False]          # [recording, training]; a list: hot paths read it


class Leaf:
    """Marks an NDArray as a variable: gradients are written to its ``grad``.

    ``fresh`` is MXNet's ``_fresh_grad``: set when a backward pass writes the
    gradient, cleared by whoever consumes it (``x._fresh_grad = False``).
    """
    __slots__ = ('grad_req', 'fresh')

    def __init__(self, grad_req):
        self.grad_req = grad_req
        self.fresh = False


def fresh_grad(arr):
    """``arr._fresh_grad``: has a backward written ``arr.grad`` since cleared?"""
    leaf = arr._node
    return isinstance(leaf, Leaf) and leaf.fresh


def set_fresh_grad(arr, value):
    leaf = arr._node
    if isinstance(leaf, Leaf):
        leaf.fresh = bool(value)
    elif value:
        raise ValueError('_fresh_grad can only be set on an array with attach_grad()')


def __getattr__(name):
    # MXNet's autograd module has NDArray in its namespace, and code does
    # `from mxnet.autograd import *` then uses it; loaded late (a cycle).
    if name == 'NDArray':
        from .ndarray.ndarray import NDArray
        return NDArray
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Node:
    """One recorded operator application."""
    __slots__ = ('op', 'inputs', 'outputs', 'attrs')

    def __init__(self, op, inputs, outputs, attrs):
        self.op, self.inputs, self.outputs, self.attrs = op, inputs, outputs, attrs


def _record(op, inputs, outputs, attrs):
    # tuples: the caller gets the output list itself and may extend it
    # (ConvolutionOp.backward appends the bias gradient to _conv_backward's)
    node = Node(op, tuple(inputs), tuple(outputs), attrs)
    for o in outputs:
        o._node = node


# --- scopes ------------------------------------------------------------------
class _Scope:
    def __init__(self, recording, training):
        self.new = (recording, training)

    def __enter__(self):
        self.old = list(_STATE)
        if self.new[0] is not None:
            _STATE[0] = self.new[0]
        if self.new[1] is not None:
            _STATE[1] = self.new[1]

    def __exit__(self, *a):
        _STATE[:] = self.old
        return False


def record(train_mode=True):
    """Record operators for differentiation (and set training mode)."""
    return _Scope(True, train_mode)


def pause(train_mode=False):
    """Stop recording inside a ``record()`` block."""
    return _Scope(False, train_mode)


def train_mode():
    """Training behaviour (dropout on, batch statistics) without recording."""
    return _Scope(None, True)


def predict_mode():
    """Prediction behaviour (dropout off, running statistics), recording
    or not as before: ``with autograd.predict_mode(): ...``."""
    return _Scope(None, False)


def is_recording():
    """Whether operators are being recorded (inside :func:`record`).

    >>> with autograd.record():
    ...     print(autograd.is_recording())
    True
    """
    return _STATE[0]


def is_training():
    """Whether layers behave as in training (dropout on, batch statistics)."""
    return _STATE[1]


def set_recording(is_recording):
    """Turn recording on or off; returns the previous state (prefer
    :func:`record` and :func:`pause`, which restore it)."""
    old, _STATE[0] = _STATE[0], bool(is_recording)
    return old


def set_training(train_mode):
    """Turn training behaviour on or off; returns the previous state
    (prefer :func:`train_mode` and :func:`predict_mode`)."""
    old, _STATE[1] = _STATE[1], bool(train_mode)
    return old


# --- variables -----------------------------------------------------------------
_REQS = ('write', 'add', 'null')


def mark_variables(variables, gradients, grad_reqs='write'):
    """Make ``variables`` leaves whose gradients go into ``gradients``."""
    from .ndarray.ndarray import NDArray
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    for v, g, req in zip(variables, gradients, grad_reqs):
        if req not in _REQS:
            raise ValueError(f'grad_req must be one of {_REQS}, got {req!r}')
        if g.shape != v.shape:
            raise ValueError(f'gradient buffer shape {g.shape} != variable shape {v.shape}')
        v._grad = g
        v._node = Leaf(req) if req != 'null' else None


# --- the backward pass -------------------------------------------------------------
def _topo(heads):
    """Op nodes reachable from ``heads``, inputs before outputs."""
    order, seen = [], set()
    for h in heads:
        if h._node is None:
            raise ValueError('cannot differentiate: the head is not the result of '
                             'recorded operations. Did you compute it inside '
                             'autograd.record() from an array with attach_grad()?')
        stack = [(h._node, False)]
        while stack:
            node, done = stack.pop()
            if not isinstance(node, Node):
                continue
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.op is None:
                raise MXNetError(
                    'the graph has already been freed by a previous backward. '
                    'Pass retain_graph=True to the first backward to call it again.')
            stack.append((node, True))
            for a in node.inputs:
                if a._node is not None:
                    stack.append((a._node, False))
    return order


def _run_backward(heads, head_grads, retain_graph, create_graph, wanted=None):
    """Propagate gradients; returns {id(array): (array, grad)} for leaves/wanted."""
    from .ndarray import ndarray as _nd
    if head_grads is None:
        head_grads = [None] * len(heads)
    order = _topo(heads)
    grads = {}
    for h, g in zip(heads, head_grads):
        if g is None:                        # ones, stored like the head
            g = _nd.invoke(_nd.OPS['ones_like_op'], (h,))
        elif g.shape != h.shape:
            raise ValueError(f'head gradient shape {g.shape} != head shape {h.shape}')
        _accumulate(grads, h, g)
    result = {}
    old = list(_STATE)
    _STATE[0] = bool(create_graph)
    try:
        for node in reversed(order):
            ograds = []
            for o in node.outputs:
                entry = grads.pop(id(o), None)
                if wanted is not None and id(o) in wanted and entry is not None:
                    result[id(o)] = entry
                ograds.append(None if entry is None else entry[1])
            if all(g is None for g in ograds):
                continue
            if not getattr(node.op, 'none_ograds', False):
                # (an op with none_ograds takes None for an unused output)
                ograds = [_nd.zeros_like(o) if g is None else g
                          for o, g in zip(node.outputs, ograds)]
            inputs, outputs = node.inputs, node.outputs
            if any(a.__class__ is not _nd.NDArray for a in inputs):
                # mx.np arrays: backward formulas are written with nd's
                # semantics (x == y gives 0/1 floats), so give them nd views
                inputs, outputs, ograds = (_nd_views(v, _nd)
                                           for v in (inputs, outputs, ograds))
            if getattr(node.op, 'nout', 1) == 1:    # split etc. take a list
                igrads = node.op.backward(ograds[0], inputs, outputs[0],
                                          **node.attrs)
            else:
                igrads = node.op.backward(ograds, inputs, outputs, **node.attrs)
            for a, g in zip(node.inputs, igrads):
                if g is not None and a._node is not None:
                    if g.shape != a.shape:
                        raise MXNetError(f"operator '{node.op.name}' produced a "
                                         f'gradient of shape {g.shape} for an input '
                                         f'of shape {a.shape}')
                    _accumulate(grads, a, g)
    finally:
        _STATE[:] = old
    result.update(grads)          # what is left: leaves (and unreached heads)
    if not retain_graph:
        for node in order:
            node.op = None
            node.inputs = ()
            node.attrs = None
            # out._node -> node -> outputs -> out is a reference cycle: left
            # alone, every recorded output lives until the cyclic GC runs
            # (fresh memory each step, page faults: ~20% of a conv step).
            node.outputs = ()
    return result


def _nd_views(arrays, _nd):
    """``nd.NDArray`` views of ``mx.np`` arrays (the same buffers), which
    stand for them in the graph: a formula asks ``_node`` whether an input
    needs a gradient."""
    views = []
    for a in arrays:
        if a is None or a.__class__ is _nd.NDArray or not isinstance(a, _nd.NDArray):
            views.append(a)
        else:
            v = _nd._share(a, _nd.NDArray)
            v._node = a._node
            views.append(v)
    return views


def _accumulate(grads, a, g):
    entry = grads.get(id(a))
    grads[id(a)] = (a, g) if entry is None else (a, entry[1] + g)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Compute gradients of ``heads`` and write them into the variables' ``grad``."""
    from .ndarray.ndarray import NDArray
    if isinstance(heads, NDArray):
        heads = [heads]
        head_grads = None if head_grads is None else [head_grads]
    with _Scope(None, train_mode), _engine.backward_pass():   # (for a Trace)
        result = _run_backward(heads, head_grads, retain_graph, False)
        for a, g in result.values():
            leaf = a._node
            if isinstance(leaf, Leaf) and a._grad is not None:
                if leaf.grad_req == 'write':
                    a._grad[:] = g
                elif leaf.grad_req == 'add':
                    a._grad += g
                leaf.fresh = True


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):
    """Gradients of ``heads`` with respect to ``variables``, returned (not stored).

    With ``create_graph=True`` the returned gradients are themselves recorded,
    so they can be differentiated again.
    """
    from .ndarray.ndarray import NDArray, zeros_like
    single = isinstance(variables, NDArray)
    if single:
        variables = [variables]
    if isinstance(heads, NDArray):
        heads = [heads]
        head_grads = None if head_grads is None else [head_grads]
    if retain_graph is None:
        retain_graph = create_graph
    for i, v in enumerate(variables):
        if v._node is None:            # zeros would be a silently wrong answer
            raise ValueError(f'autograd.grad: variable {i} (shape {v.shape}) is not '
                             f'in the recorded graph. Call attach_grad() on it '
                             f'before autograd.record().')
    wanted = {id(v) for v in variables}
    with _Scope(None, train_mode), _engine.backward_pass():
        result = _run_backward(heads, head_grads, retain_graph, create_graph, wanted)
        out = [result[id(v)][1] if id(v) in result else zeros_like(v)
               for v in variables]
    return out[0] if single else out


# --- custom functions ----------------------------------------------------------------
class Function:
    """A differentiable function with a hand-written backward.

    >>> class Sigmoid(autograd.Function):
    ...     def forward(self, x):
    ...         y = 1 / (1 + nd.exp(-x)); self.save_for_backward(y); return y
    ...     def backward(self, dy):
    ...         y, = self.saved_tensors; return dy * y * (1 - y)
    """

    def save_for_backward(self, *args):
        """Keep ``args`` for :meth:`backward`, as ``self.saved_tensors``."""
        self.saved_tensors = args

    def forward(self, *inputs):            # pragma: no cover - abstract
        """Override: the outputs from the inputs (NDArrays), not recorded."""
        raise NotImplementedError

    def backward(self, *output_grads):     # pragma: no cover - abstract
        """Override: the inputs' gradients from the outputs' gradients."""
        raise NotImplementedError

    def __call__(self, *inputs):
        with pause(train_mode=_STATE[1]):
            outputs = self.forward(*inputs)
        single = not isinstance(outputs, (list, tuple))
        outs = [outputs] if single else list(outputs)
        if _STATE[0] and any(a._node is not None for a in inputs):
            _record(_FunctionOp(self, single), inputs, outs, {})
        return outputs


class _FunctionOp:
    differentiable = True

    def __init__(self, fn, single):
        self.fn, self.single = fn, single
        self.nout = 1 if single else None
        self.name = type(fn).__name__

    def backward(self, ograds, inputs, outputs):
        with pause():
            g = self.fn.backward(ograds) if self.single else self.fn.backward(*ograds)
        return list(g) if isinstance(g, (list, tuple)) else [g]
