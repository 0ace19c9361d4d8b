"""From a Symbol to a plan of operator calls, and running the plan.

A Symbol says *what* to compute; a :class:`Plan` says *how*, for given input
shapes, dtypes, a context and a mode (training or not):

1. **Lowering** (:func:`lower`) calls each node's ``nd`` function once on
   shape-only *placeholders*, while a :class:`Capture` records every operator
   call instead of running it.  The front ends do all their argument checks
   and shape inference here, once; what is left is a flat list of steps
   ``(op.forward, input slots, output slots, attributes)`` over numbered
   *slots* (the graph's inputs, constants, then every intermediate value).
2. **Planning** (:class:`Plan`) looks at the whole list: when each slot is
   last read (so it can be dropped at once), and which elementwise steps may
   write into their input's buffer instead of allocating a new one.
3. **Running** (:meth:`Plan.launch`) pushes *one* engine operation that runs
   all the steps on raw arrays, instead of one push per operator, and,
   under ``autograd.record()``, puts the same nodes on the tape that
   imperative code would have put there, so gradients are the imperative
   ones.

The executor (``sym.bind``) and ``HybridBlock.hybridize`` both run graphs
through this module.
"""
import threading

import numpy as np

from .. import autograd as _ag
from ..base import MXNetError, as_mxnet_error
from ..ndarray import ndarray as _nd
from ..ndarray.cpu_kernels import maximum0
from ..ndarray.nn.fused import fusable_pool
from ..ndarray.op_utils import _xp
from ..ndarray.registry import OPS
from .ops import call_node

__all__ = ['Capture', 'Plan', 'lower']


class _Step:
    __slots__ = ('name', 'fn', 'ins', 'outs', 'attrs', 'op', 'multi', 'node')

    def __init__(self, name, fn, ins, outs, attrs, op, multi, node):
        self.name, self.fn, self.ins, self.outs = name, fn, ins, outs
        self.attrs, self.op, self.multi, self.node = attrs, op, multi, node

    def __repr__(self):
        return f'{self.name}({self.ins} -> {self.outs})'


def placeholder(shape, dtype, ctx):
    """An NDArray with a shape, a dtype and a context, but no values."""
    return _nd._make(tuple(shape), np.dtype(dtype), ctx)


class Capture:
    """Records the operator calls made on this thread instead of running them.

    Used as ``with Capture() as cap:``; arrays become *slots*: ``arg(a)``
    declares a graph input, results of recorded calls get new slots, and an
    array from outside (made before, or by a front end with ``nd.array``)
    becomes a constant slot.
    """

    def __init__(self):
        self.thread = threading.get_ident()
        self.slot_of = {}          # id(NDArray) -> slot
        self.values = []           # slot -> the NDArray standing for it
        self.consts = []           # slots holding real arrays from outside
        self.steps = []
        self.node = None           # the symbol node being lowered (for errors)

    # -- what the ndarray hooks call -----------------------------------------
    def active(self):
        return threading.get_ident() == self.thread

    def invoke(self, op, args, attrs):
        ctx = args[0]._ctx if args else None
        for a in args:
            if a._ctx != ctx:
                raise _nd._context_error(op.name, args)
        try:
            res = op.infer([a._shape for a in args], [a._dtype for a in args],
                           **attrs)
        except (ValueError, TypeError, IndexError) as e:
            raise as_mxnet_error(e).with_traceback(e.__traceback__) from None
        if op.nout == 1:
            outs = [placeholder(res[0], res[1], ctx)]
        else:
            outs = [placeholder(s, d, ctx) for s, d in res]
        self.steps.append(_Step(op.name, op.forward, [self.slot(a) for a in args],
                                [self.new_slot(o) for o in outs], dict(attrs), op,
                                op.nout != 1, self.node))
        return outs[0] if op.nout == 1 else outs

    def run(self, name, fn, args, outs):
        """A kernel pushed directly (an in-place write, a copy): a plain step."""
        ins = [self.slot(a) for a in args]
        out_slots = [self.slot_of[id(o)] if id(o) in self.slot_of else self.new_slot(o)
                     for o in outs]
        self.steps.append(_Step(name, fn, ins, out_slots, {}, None, len(outs) != 1,
                                self.node))

    # -- slots ----------------------------------------------------------------
    def new_slot(self, arr):
        i = len(self.values)
        self.values.append(arr)
        self.slot_of[id(arr)] = i
        return i

    def slot(self, arr):
        i = self.slot_of.get(id(arr))
        if i is None:
            if arr._data is None and arr._stream is _nd._NAIVE:
                raise MXNetError(
                    'a graph read an array that belongs to another graph being '
                    'traced; build one graph at a time')
            i = self.new_slot(arr)
            self.consts.append(i)
        return i

    def arg(self, shape, dtype, ctx):
        return self.values[self.new_slot(placeholder(shape, dtype, ctx))]

    # -- scope ------------------------------------------------------------------
    def __enter__(self):
        self._old = _nd._CAPTURE[0]
        if self._old is not None and self._old.active():
            raise MXNetError('cannot trace a graph while tracing another one')
        _nd._CAPTURE[0] = self
        return self

    def __exit__(self, *exc):
        _nd._CAPTURE[0] = self._old
        return False


# === the plan =======================================================================
def _inplace_kernels():
    """Elementwise ops that may overwrite their input: ``f(x, **attrs) -> x``.

    Only used on a fresh floating-point buffer that nothing else reads (see
    ``Plan._plan_memory``).
    """
    def ufunc(name):
        def k(x, **attrs):
            return getattr(_xp(x), name)(x, out=x)
        return k

    def scalar(name):
        def k(x, scalar):
            return getattr(_xp(x), name)(x, x.dtype.type(scalar), out=x)
        return k

    def relu(x, **attrs):
        return maximum0(x, out=x)

    def activation(x, act_type):
        if act_type == 'relu':
            return relu(x)
        return _xp(x).tanh(x, out=x)         # only 'tanh' is allowed below

    return {'relu': relu, 'tanh': ufunc('tanh'), 'exp': ufunc('exp'),
            'negative': ufunc('negative'), 'square': ufunc('square'),
            'sqrt': ufunc('sqrt'), 'abs': ufunc('abs'),
            '_plus_scalar': scalar('add'), '_minus_scalar': scalar('subtract'),
            '_mul_scalar': scalar('multiply'), '_div_scalar': scalar('true_divide'),
            'Activation': activation}


_INPLACE = _inplace_kernels()
# Producers whose output is always a fresh array (never a view of an input).
_FRESH = frozenset({'FullyConnected', 'Convolution', '_conv_act', 'Deconvolution',
                    'dot', 'batch_dot', 'Pooling', 'elemwise_add', 'elemwise_sub',
                    'elemwise_mul', 'elemwise_div', 'add', 'subtract', 'multiply',
                    'divide', 'broadcast_add', 'broadcast_sub', 'broadcast_mul',
                    'broadcast_div', 'broadcast_plus', 'broadcast_minus'}
                   | set(_INPLACE))


def _step_error(st, e):
    """``e`` raised by a step, with the step's operator and symbol node named."""
    where = f" (symbol node '{st.node}')" if st.node else ''
    err = as_mxnet_error(e)
    err.args = (f"operator '{st.name}'{where}: {e}",)
    return err


def _inplace_ok(step):
    if step.op is None or step.name not in _INPLACE or len(step.ins) != 1:
        return False
    if step.name == 'Activation':
        return step.attrs.get('act_type') in ('relu', 'tanh')
    return True


def _conv_relu(conv, act):
    """Convolution -> relu: the fused ``_conv_act`` (gluon's Conv2D runs it
    when asked for relu; a graph finds the pair by itself)."""
    relu = act.name == 'relu' or (act.name == 'Activation' and
                                  act.attrs.get('act_type') == 'relu')
    if conv.name != 'Convolution' or not relu:
        return None
    op = OPS['_conv_act']
    return _Step(op.name, op.forward, conv.ins, [act.outs[0]],
                 dict(conv.attrs, act_type='relu'), op, False, conv.node)


def _conv_relu_pool(conv, pool):
    """``_conv_act`` -> average or max pooling: ``_conv_act_pool`` or
    ``_conv_act_maxpool`` (ndarray/nn/fused.py); its second output is the
    convolution's, for the backward pass."""
    if conv.name != '_conv_act' or conv.attrs.get('act_type') != 'relu' \
            or pool.name != 'Pooling':
        return None
    found = fusable_pool(pool.attrs)
    if found is None:
        return None
    op = OPS[found[0]]
    return _Step(op.name, op.forward, conv.ins, [pool.outs[0], conv.outs[0]],
                 dict(conv.attrs, pool=found[1]), op, True, conv.node)


FUSIONS = (_conv_relu, _conv_relu_pool)


def fuse(steps, heads):
    """Apply :data:`FUSIONS`: a producer and its only reader become one step.

    Only when the producer's output is read by that one step (and is not an
    output of the graph): imperative code cannot see who reads a result, a
    graph can.  Each rule returns the fused step, or None.
    """
    for rule in FUSIONS:
        readers = {}
        for k, st in enumerate(steps):
            for i in st.ins:
                readers.setdefault(i, []).append(k)
        fused, gone = [], set()
        for k, st in enumerate(steps):
            if k in gone:
                continue
            y = st.outs[0]
            if not st.multi and y not in heads and len(readers.get(y, ())) == 1:
                j = readers[y][0]
                new = rule(st, steps[j]) if len(steps[j].ins) == 1 else None
                if new is not None:
                    fused.append(new)
                    gone.add(j)
                    continue
            fused.append(st)
        steps = fused
    return steps


class Plan:
    """A lowered graph for one set of input shapes: steps over slots.

    Slots ``0 .. n_args-1`` are the graph inputs, in the order given to
    :func:`lower`; then constants and intermediate values.  ``heads`` are the
    slots of the graph's outputs.
    """

    def __init__(self, cap, n_args, heads, ctx):
        self.steps = fuse(cap.steps, set(heads))
        self.heads = heads
        self.ctx = ctx
        self.nslots = len(cap.values)
        self.shapes = [v._shape for v in cap.values]
        self.dtypes = [v._dtype for v in cap.values]
        self.consts = [cap.values[i] for i in cap.consts]
        self.const_slots = list(cap.consts)
        # The inputs of the kernel: graph inputs, then constants, in slot order.
        self.input_slots = list(range(n_args)) + self.const_slots
        produced = []
        for st in self.steps:
            for o in st.outs:
                if o >= n_args and o not in produced and o not in cap.consts:
                    produced.append(o)
        self.produced = produced
        # Graph inputs an in-place step writes (BatchNorm's moving statistics).
        self.written_args = sorted({o for st in self.steps for o in st.outs
                                    if o < n_args})
        self._plan_memory()
        self._run_infer = self._compile(keep=False)
        self._run_keep = self._compile(keep=True)

    # -- planning ---------------------------------------------------------------
    def _plan_memory(self):
        """When each intermediate is last read, and which steps run in place."""
        heads = set(self.heads)
        last, uses = {}, {}
        for k, st in enumerate(self.steps):
            for i in st.ins:
                last[i] = k
                uses[i] = uses.get(i, 0) + 1
        made_at = {}                     # slot -> the step that first writes it
        for k, st in enumerate(self.steps):
            for o in st.outs:
                made_at.setdefault(o, k)
        freeable = set(self.produced) - heads
        self.free = [[] for _ in self.steps]
        for i in freeable:               # after the last read (or at once)
            k = last.get(i, made_at.get(i))
            if k is not None:
                self.free[k].append(i)
        # In place: the input is an intermediate that only this step reads,
        # produced by an op that returns fresh memory, and not an output.
        self.inplace = [False] * len(self.steps)
        for k, st in enumerate(self.steps):
            if not _inplace_ok(st):
                continue
            i = st.ins[0]
            p = self.steps[made_at[i]] if i in made_at else None
            if (i in freeable and uses.get(i) == 1 and p is not None
                    and p.name in _FRESH and not p.multi
                    and self.dtypes[i].kind == 'f'
                    and self.dtypes[i] == self.dtypes[st.outs[0]]):
                self.inplace[k] = True

    def _only_first_read(self, k):
        """Whether step ``k`` has an inference variant (``op.forward_infer``,
        whose outputs after the first are None) and the inference plan
        drops those outputs as soon as they are made: nothing reads them,
        and they are not outputs of the graph."""
        st = self.steps[k]
        return (st.multi and hasattr(st.op, 'forward_infer') and
                all(o in self.free[k] for o in st.outs[1:]))   # (never heads)

    def describe(self):
        """One line per step: what runs, on which slots, and the memory plan."""
        lines = []
        for k, st in enumerate(self.steps):
            tag = ' (in place)' if self.inplace[k] else ''
            free = f'  free {self.free[k]}' if self.free[k] else ''
            lines.append(f'{k:3d} {st.name}{tag}: {st.ins} -> {st.outs}{free}')
        return '\n'.join(lines)

    # -- running on raw arrays ----------------------------------------------------
    def _compile(self, keep):
        """The plan as one straight-line Python function of the input arrays.

        ``keep=False`` (inference): in-place kernels where planned, and each
        intermediate dropped (``del``) right after its last use; it returns
        the outputs.  ``keep=True`` (recording): every intermediate is kept
        and returned, for the backward pass.  Generating the code once
        saves the interpretive loop over steps (~1 us a step).
        """
        env = {'_steps': self.steps, '_step_error': _step_error}
        params = ', '.join(f's{i}' for i in self.input_slots)
        body = []
        for k, st in enumerate(self.steps):
            fn = st.fn
            if not keep and self.inplace[k]:
                fn = _INPLACE[st.name]
            elif not keep and self._only_first_read(k):
                fn = st.op.forward_infer
            env[f'f{k}'] = fn
            args = ', '.join(f's{i}' for i in st.ins)
            if st.attrs:
                env[f'a{k}'] = st.attrs
                args += (', ' if args else '') + f'**a{k}'
            outs = ', '.join(f's{o}' for o in st.outs)
            lhs = (outs + ',') if st.multi else outs
            body.append(f'    k = {k}')
            body.append(f'    {lhs} = f{k}({args})')
            if not keep and self.free[k]:
                body.append('    del ' + ', '.join(f's{i}' for i in self.free[k]))
        ret = self.produced if keep else self.heads
        result = ', '.join(f's{i}' for i in ret)
        if len(ret) != 1:
            result = f'[{result}]'
        src = (f'def plan({params}):\n    k = -1\n    try:\n        pass\n' +
               '\n'.join('    ' + line for line in body) +
               f'\n    except Exception as e:\n'
               f'        raise _step_error(_steps[k], e) from e\n'
               f'    return {result}\n')
        exec(compile(src, f'<plan {"train" if keep else "infer"}>', 'exec'), env)
        fn = env['plan']
        fn.source = src
        return fn

    # -- running through the engine --------------------------------------------------
    def launch(self, args, record=None):
        """Run on NDArrays ``args`` (the graph inputs) as ONE engine operation.

        Returns the output NDArrays.  When recording (``autograd.record()``),
        every intermediate becomes an NDArray and each differentiable step
        goes on the tape, exactly as if the ops had run one by one.
        """
        ctx = self.ctx
        inputs = list(args) + self.consts
        if record is None:
            record = _ag._STATE[0] and any(a._node is not None for a in args)
        if not record:
            outs = [_nd._make(self.shapes[h], self.dtypes[h], ctx) for h in self.heads]
            _nd._run('graph', self._run_infer, inputs, outs, ctx)
            self._mark_written(args, outs[0] if outs else None)
            return outs
        made = {i: _nd._make(self.shapes[i], self.dtypes[i], ctx)
                for i in self.produced}
        outs = [made[i] for i in self.produced]
        _nd._run('graph', self._run_keep, inputs, outs, ctx)
        self._mark_written(args, outs[0] if outs else None)
        arr = dict(zip(self.input_slots, inputs))
        arr.update(made)
        rec = _ag._record
        for st in self.steps:
            op = st.op
            if op is None or not op.differentiable:
                continue
            ins = [arr[i] for i in st.ins]
            for a in ins:
                if a._node is not None:
                    rec(op, ins, [arr[o] for o in st.outs], st.attrs)
                    break
        return [arr[h] for h in self.heads]

    def _mark_written(self, args, out):
        if not self.written_args or out is None:
            return
        for i in self.written_args:
            a = args[i]
            a._stream, a._seq = out._stream, out._seq
        if out._stream is not _nd._NAIVE:
            out._stream.last_write = out._seq


def lower(nodes, inputs, outputs, shapes, dtypes, ctx, training):
    """Trace ``nodes`` (topological order) into a :class:`Plan`.

    ``inputs``: the variable nodes, whose slots come first, with their
    ``shapes``/``dtypes``; ``outputs``: ``(node, index)`` pairs.  Each node
    runs its ``nd`` function (:func:`.ops.call_node`) on placeholders.
    """
    cap = Capture()
    env = {}
    for node, shape, dtype in zip(inputs, shapes, dtypes):
        env[(id(node), 0)] = cap.arg(shape, dtype, ctx)
    old = list(_ag._STATE)
    _ag._STATE[:] = [False, bool(training)]
    try:
        with cap, ctx:
            for node in nodes:
                if node.is_variable:
                    continue
                cap.node = node.name
                ins = [env[(id(n), i)] for n, i in node.inputs]
                for i, r in enumerate(call_node(node, ins)):
                    env[(id(node), i)] = r
            heads = [cap.slot(env[(id(n), i)]) for n, i in outputs]
    finally:
        _ag._STATE[:] = old
    return Plan(cap, len(inputs), heads, ctx)
