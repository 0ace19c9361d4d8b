"""Symbol: a computation declared as a graph, run later by an executor.

Why one long file: the Symbol class is one concept, and its operator
front ends, composition, shape/type inference and JSON form all act on the
same graph of nodes.  Reading a symbol file back, every node checked, is
:mod:`.loading`; running a graph, :mod:`.graph` and the executor.

Imperative code (``nd``) computes as it goes.  Symbolic code first *declares*
the computation::

    data = mx.sym.var('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=128, name='fc1')
    net = mx.sym.SoftmaxOutput(mx.sym.relu(fc1), name='softmax')

``net`` holds no numbers: it is a graph of nodes.  A node is a variable
(``op == 'null'``) or an operator applied to other nodes' outputs; every
``nd`` operator is also a symbol function, which creates a node instead of
running.  Layers create their parameter variables (``fc1_weight``,
``fc1_bias``); ``net.list_arguments()`` names them all.  Binding the graph
to a device and to arrays (``net.simple_bind(mx.cpu(), data=(32, 784))``)
gives an :class:`~d2lmini.executor.Executor`, which lowers the graph once to
a plan of operator calls (:mod:`.graph`) and runs it.

A node's computation *is* its ``nd`` function, called with the node's
inputs and attributes: there is one definition of every operator, shared by
the two programming models.
"""
import copy
import json
import math

import numpy as np

from .. import name as _name
from ..base import MXNetError
from ..context import current_context
from ..util import is_np_array

__all__ = ['Symbol', 'Variable', 'var', 'Group']

# --- what each operator needs beyond its nd function ------------------------------
# Array inputs a layer creates as variables when they are not given
# (``{name}_{input}``), as MXNet's operators declare them.
AUTO_INPUTS = {
    'FullyConnected': ('weight', 'bias'),
    'Convolution': ('weight', 'bias'),
    '_conv_act': ('weight', 'bias'),
    'Deconvolution': ('weight', 'bias'),
    'BatchNorm': ('gamma', 'beta', 'moving_mean', 'moving_var'),
    'LayerNorm': ('gamma', 'beta'),
    'InstanceNorm': ('gamma', 'beta'),
    'GroupNorm': ('gamma', 'beta'),
    'Embedding': ('weight',),
    'LeakyReLU': ('gamma',),
    'SoftmaxOutput': ('label',),
    'Softmax': ('label',),
    'LinearRegressionOutput': ('label',),
    'LogisticRegressionOutput': ('label',),
    'MAERegressionOutput': ('label',),
}
# Inputs that are auxiliary states (updated by the op, not by gradients).
AUX_INPUTS = {'BatchNorm': ('moving_mean', 'moving_var')}


def _skip_auto(op, arg, attrs):
    """Whether ``op`` does without its optional input ``arg``."""
    if arg == 'bias':
        return bool(attrs.get('no_bias', op == 'Deconvolution'))
    if arg == 'gamma' and op == 'LeakyReLU':
        return attrs.get('act_type', 'leaky') != 'prelu'
    return False


def _param_shapes(op, attrs, shapes):
    """Shapes of a layer's parameters (and a loss head's label) from its data.

    ``shapes`` maps input names to known shapes (``data`` at least); returns
    the inferred ones.  This is the part of MXNet's shape inference that runs
    *backwards*, from the data to the weights.
    """
    x = shapes.get('data')
    if x is None:
        return {}
    if op == 'FullyConnected':
        nh = attrs.get('num_hidden')
        if nh is None:
            return {}                      # the operator itself says what is missing
        d = math.prod(x[1:]) if attrs.get('flatten', True) else x[-1]
        return {'weight': (nh, d), 'bias': (nh,)}
    if op in ('Convolution', '_conv_act', 'Deconvolution'):
        layout = attrs.get('layout') or 'NCHW'[:len(x)]
        c = x[layout.index('C')] if 'C' in layout else x[1]
        if attrs.get('kernel') is None or attrs.get('num_filter') is None:
            return {}
        k = tuple(attrs['kernel'])
        g = attrs.get('num_group', 1) or 1
        nf = attrs['num_filter']
        a, b = (c, nf // g) if op == 'Deconvolution' else (nf, c // g)
        w = (a, b) + k if layout.index('C') == 1 else (a,) + k + (b,)
        return {'weight': w, 'bias': (nf,)}
    if op == 'BatchNorm':
        c = (x[attrs.get('axis', 1)],)
        return dict.fromkeys(('gamma', 'beta', 'moving_mean', 'moving_var'), c)
    if op == 'LayerNorm':
        c = (x[attrs.get('axis', -1)],)
        return {'gamma': c, 'beta': c}
    if op == 'InstanceNorm':
        return {'gamma': (x[1],), 'beta': (x[1],)}
    if op == 'GroupNorm':
        return {'gamma': (x[1],), 'beta': (x[1],)}
    if op == 'Embedding' and 'input_dim' in attrs and 'output_dim' in attrs:
        return {'weight': (attrs['input_dim'], attrs['output_dim'])}
    if op == 'LeakyReLU':
        return {'gamma': (x[1] if len(x) > 1 else 1,)}
    if op in ('SoftmaxOutput', 'Softmax'):
        if attrs.get('multi_output'):
            return {'label': (x[0],) + tuple(x[2:])}
        if attrs.get('preserve_shape'):
            return {'label': tuple(x[:-1])}
        return {'label': (x[0],)}
    if op in ('LinearRegressionOutput', 'LogisticRegressionOutput',
              'MAERegressionOutput'):
        return {'label': tuple(x)}
    return {}


# --- nodes ---------------------------------------------------------------------------
class _Node:
    """One node: a variable (``op == 'null'``) or an operator call."""
    __slots__ = ('op', 'name', 'inputs', 'input_names', 'attrs', 'user', 'nout')

    def __init__(self, op, name, inputs=(), input_names=(), attrs=None, user=None,
                 nout=1):
        self.op = op
        self.name = name
        self.inputs = list(inputs)              # [(node, output index)]
        self.input_names = list(input_names)    # how each is passed (None: *args)
        self.attrs = attrs or {}                # the operator's attributes
        self.user = user or {}                  # user attributes ('__shape__'...)
        self.nout = nout

    @property
    def is_variable(self):
        return self.op == 'null'

    def __repr__(self):
        return f'<node {self.name} ({self.op})>'


def _topo(outputs):
    """Nodes reachable from ``outputs``, inputs before users (MXNet's DFS order).

    A cycle (possible through composition) is an error naming a node on it.
    """
    order, state = [], {}
    for head, _ in outputs:
        stack = [(head, 0)]
        while stack:
            node, k = stack.pop()
            if k == 0:
                s = state.get(id(node))
                if s == 2:
                    continue
                if s == 1:
                    raise MXNetError(f"the symbol graph has a cycle through node "
                                     f"'{node.name}' ({node.op})")
                state[id(node)] = 1
            if k < len(node.inputs):
                stack.append((node, k + 1))
                child = node.inputs[k][0]
                if state.get(id(child)) == 1:
                    raise MXNetError(f"the symbol graph has a cycle through node "
                                     f"'{child.name}' ({child.op})")
                if state.get(id(child)) != 2:
                    stack.append((child, 0))
            else:
                state[id(node)] = 2
                order.append(node)
    return order


def _output_name(node, i):
    """The name of output ``i`` of ``node`` (``fc1_output``, ``s_output2``)."""
    if node.is_variable:
        return node.name
    if node.nout == 1:
        return f'{node.name}_output'
    return f'{node.name}_output{i}'


def _nout(op, attrs):
    if op in ('split', 'SliceChannel', 'Split', 'amp_multicast'):
        return int(attrs.get('num_outputs', 1))
    if op == 'split_v2':
        ind = attrs.get('indices_or_sections', 1)
        return ind if isinstance(ind, int) else len(ind) + 1
    if op == 'topk' and attrs.get('ret_typ') == 'both':
        return 2
    if op == 'BatchNorm' and attrs.get('output_mean_var'):
        return 3
    if op == 'RNN' and attrs.get('state_outputs'):
        return 3 if attrs.get('mode') == 'lstm' else 2
    return 1


# --- the Symbol ----------------------------------------------------------------------
class Symbol:
    """A list of outputs of a graph of nodes (usually one output)."""

    def __init__(self, outputs):
        self._outputs = list(outputs)           # [(node, index)]

    # -- names and structure -------------------------------------------------
    @property
    def name(self):
        """The name of the (single) output's node; None for a group."""
        if len(self._outputs) != 1:
            return None
        return self._outputs[0][0].name

    def _nodes(self):
        return _topo(self._outputs)

    def _variables(self):
        return [n for n in self._nodes() if n.is_variable]

    def _aux_ids(self):
        aux = set()
        for n in self._nodes():
            names = AUX_INPUTS.get(n.op)
            if names:
                for (src, _), nm in zip(n.inputs, n.input_names):
                    if nm in names and src.is_variable:
                        aux.add(id(src))
        return aux

    def list_arguments(self):
        """Names of the inputs that are not auxiliary states, in graph order."""
        aux = self._aux_ids()
        return [n.name for n in self._variables() if id(n) not in aux]

    def list_auxiliary_states(self):
        """Names of the auxiliary states (BatchNorm's moving statistics)."""
        aux = self._aux_ids()
        return [n.name for n in self._variables() if id(n) in aux]

    def list_inputs(self):
        """Every variable: arguments and auxiliary states, in graph order."""
        return [n.name for n in self._variables()]

    def list_outputs(self):
        return [_output_name(n, i) for n, i in self._outputs]

    def list_attr(self, recursive=False):
        if recursive:
            raise DeprecationWarning('list_attr(recursive=True) is attr_dict()')
        if len(self._outputs) != 1:
            return {}
        node = self._outputs[0][0]
        return {k: _attr_str(v) for k, v in {**node.attrs, **node.user}.items()}

    def attr_dict(self):
        out = {}
        for n in self._nodes():
            d = {k: _attr_str(v) for k, v in {**n.attrs, **n.user}.items()}
            if d:
                out[n.name] = d
        return out

    def attr(self, key):
        """The attribute ``key`` of this (single-output) symbol, as a string."""
        if len(self._outputs) != 1:
            return None
        node = self._outputs[0][0]
        if key in node.user:
            return node.user[key]
        if key in node.attrs:
            return _attr_str(node.attrs[key])
        return None

    def _set_attr(self, **kwargs):
        for node, _ in self._outputs:
            for k, v in kwargs.items():
                if not isinstance(v, str):
                    raise ValueError('attribute values must be strings')
                node.user[k] = v

    def get_internals(self):
        """A group of every node's outputs (variables included): pick one with
        ``internals['fc1_output']`` to build a feature extractor."""
        outs = []
        for n in self._nodes():
            outs += [(n, i) for i in range(n.nout)]
        return Symbol(outs)

    def get_children(self):
        """The inputs of this symbol's node(s), as a group; None if there are
        none (a variable).  For a group, the inputs of each distinct node in
        turn (the three outputs of one ``split`` count once)."""
        children, seen = [], set()
        for node, _ in self._outputs:
            if id(node) not in seen:
                seen.add(id(node))
                children += node.inputs
        return Symbol(children) if children else None

    def __len__(self):
        return len(self._outputs)

    def __iter__(self):
        return (Symbol([o]) for o in self._outputs)

    def __getitem__(self, index):
        if isinstance(index, str):
            names = self.list_outputs()
            matches = [i for i, n in enumerate(names) if n == index]
            if not matches:
                raise ValueError(f"no output named '{index}'; outputs: {names}")
            if len(matches) > 1:
                raise ValueError(f"several outputs are named '{index}'")
            index = matches[0]
        if isinstance(index, slice):
            return Symbol(self._outputs[index])
        if not -len(self._outputs) <= index < len(self._outputs):
            raise IndexError(f'output index {index} out of range: the symbol has '
                             f'{len(self._outputs)} output(s)')
        return Symbol([self._outputs[index]])

    def __repr__(self):
        if len(self._outputs) == 1:
            return f'<Symbol {self.name}>'
        return f'<Symbol group [{", ".join(self.list_outputs())}]>'

    def __copy__(self):
        return Symbol(self._outputs)

    def __deepcopy__(self, memo):
        from .loading import load_json
        return load_json(self.tojson(remove_amp_cast=False))

    def __getstate__(self):
        return {'json': self.tojson(remove_amp_cast=False)}

    def __setstate__(self, state):
        from .loading import load_json
        self._outputs = load_json(state['json'])._outputs

    def __bool__(self):
        from ..base import NotImplementedForSymbol
        raise NotImplementedForSymbol(self.__bool__, 'bool')

    def __getattr__(self, name):
        # Fluent methods: sym.reshape(...), sym.sum(axis=1), sym.relu(), ...
        if name.startswith('_'):
            raise AttributeError(name)
        from . import ops
        if is_np_array():                 # NumPy mode: mx.np.ndarray's methods
            from .numpy import method
            made = method(self, name)
            if made is not None:
                return made
        fn = ops.FLUENT.get(name)
        if fn is None:
            if name in ('shape', 'dtype', 'context', 'ctx', 'size', 'ndim'):
                raise AttributeError(
                    f"a Symbol has no {name}: it is not computed yet; use "
                    f"infer_shape/infer_type, or bind it to arrays")
            raise AttributeError(f"'Symbol' object has no attribute '{name}'")
        return lambda *args, **kwargs: fn(self, *args, **kwargs)

    # -- composition -------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Compose: a copy of this graph with variables replaced by symbols
        (``net(data=other)``; positional arguments follow list_arguments)."""
        name = kwargs.pop('name', None)
        s = self._copy_graph()
        s._compose(*args, name=name, **kwargs)
        return s

    def _copy_graph(self):
        memo = {}

        def cp(node):
            new = memo.get(id(node))
            if new is None:
                new = copy.copy(node)
                new.attrs, new.user = dict(node.attrs), dict(node.user)
                memo[id(node)] = new
                new.inputs = [(cp(n), i) for n, i in node.inputs]
            return new
        for n in self._nodes():        # inputs first: no deep recursion
            cp(n)
        return Symbol([(memo[id(n)], i) for n, i in self._outputs])

    def _compose(self, *args, name=None, **kwargs):
        """Replace this graph's variables by ``args``/``kwargs`` symbols, in place."""
        arg_names = self.list_arguments()
        if args and kwargs:
            raise TypeError('compose: pass symbols by position or by name, not both')
        if args:
            if len(args) > len(arg_names):
                raise TypeError(f'compose: {len(args)} symbols for '
                                f'{len(arg_names)} arguments {arg_names}')
            kwargs = dict(zip(arg_names, args))
        for k, v in kwargs.items():
            if not isinstance(v, Symbol) or len(v) != 1:
                raise TypeError(f"compose: '{k}' must be a single-output Symbol, "
                                f"got {type(v).__name__}")
        unknown = set(kwargs) - set(self.list_inputs())
        if unknown:
            raise ValueError(f'compose: unknown argument(s) {sorted(unknown)}; '
                             f'the arguments are {self.list_inputs()}')
        nodes = self._nodes()
        saved = [(n, n.inputs) for n in nodes], self._outputs
        for n in nodes:
            n.inputs = [kwargs[src.name]._outputs[0]
                        if src.is_variable and src.name in kwargs else (src, i)
                        for src, i in n.inputs]
        self._outputs = [kwargs[n.name]._outputs[0] if n.is_variable and n.name in
                         kwargs else (n, i) for n, i in self._outputs]
        try:
            _topo(self._outputs)          # a cycle fails here, not at bind
        except MXNetError:
            for n, inputs in saved[0]:    # and leaves the symbol as it was
                n.inputs = inputs
            self._outputs = saved[1]
            raise
        if name and len(self._outputs) == 1:
            self._outputs[0][0].name = name

    # -- arithmetic --------------------------------------------------------------------
    def _binary(self, other, op, scalar_op, reverse=False):
        from . import ops
        if isinstance(other, Symbol):
            a, b = (other, self) if reverse else (self, other)
            if is_np_array():             # NumPy mode: operators broadcast
                op = _BROADCAST.get(op, op)
            return ops._make(op, [('lhs', a), ('rhs', b)], {}, hint=_HINT.get(op, op))
        if isinstance(other, (int, float, np.number, bool)):
            return ops._make(scalar_op, [(None, self)], {'scalar': float(other)},
                             hint=scalar_op.replace('_scalar', 'scalar'))
        # MXNet refuses here too; returning NotImplemented would let an
        # NDArray try (and fail obscurely) to turn the Symbol into numbers.
        raise TypeError(f"a Symbol cannot be combined with a {type(other).__name__}: "
                        f"use a Symbol (mx.sym.var) or a number; arrays are given "
                        f"when the symbol is bound")

    def __add__(self, o):
        return self._binary(o, 'elemwise_add', '_plus_scalar')

    __radd__ = __add__

    def __sub__(self, o):
        return self._binary(o, 'elemwise_sub', '_minus_scalar')

    def __rsub__(self, o):
        return self._binary(o, 'elemwise_sub', '_rminus_scalar', reverse=True)

    def __mul__(self, o):
        return self._binary(o, 'elemwise_mul', '_mul_scalar')

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._binary(o, 'elemwise_div', '_div_scalar')

    def __rtruediv__(self, o):
        return self._binary(o, 'elemwise_div', '_rdiv_scalar', reverse=True)

    def __mod__(self, o):
        return self._binary(o, 'broadcast_mod', '_mod_scalar')

    def __rmod__(self, o):
        return self._binary(o, 'broadcast_mod', '_rmod_scalar', reverse=True)

    def __pow__(self, o):
        return self._binary(o, 'power', '_power_scalar')

    def __rpow__(self, o):
        return self._binary(o, 'power', '_rpower_scalar', reverse=True)

    def __neg__(self):
        return self._binary(-1.0, None, '_mul_scalar')

    def __abs__(self):
        from . import ops
        return ops.abs(self)

    def __eq__(self, o):
        return self._binary(o, 'equal', '_equal_scalar')

    def __ne__(self, o):
        return self._binary(o, 'not_equal', '_not_equal_scalar')

    def __gt__(self, o):
        return self._binary(o, 'greater', '_greater_scalar')

    def __ge__(self, o):
        return self._binary(o, 'greater_equal', '_greater_equal_scalar')

    def __lt__(self, o):
        return self._binary(o, 'lesser', '_lesser_scalar')

    def __le__(self, o):
        return self._binary(o, 'lesser_equal', '_lesser_equal_scalar')

    __hash__ = object.__hash__

    # -- shapes and types -----------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        """``(arg_shapes, out_shapes, aux_shapes)`` from some input shapes.

        Shapes flow forward from the data, and backwards to the parameters
        of layers (``fc1_weight`` from ``data`` and ``num_hidden``).  If
        some shape stays unknown the result is ``(None, None, None)``; use
        :meth:`infer_shape_partial` to see what could be inferred.
        """
        from . import infer
        res = infer.infer_shape(self, args, kwargs, partial=False)
        return res

    def infer_shape_partial(self, *args, **kwargs):
        """Like :meth:`infer_shape`, with ``()`` for the shapes not inferred."""
        from . import infer
        return infer.infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        """``(arg_types, out_types, aux_types)``: float32 unless told otherwise."""
        from . import infer
        return infer.infer_type(self, args, kwargs)

    def infer_type_partial(self, *args, **kwargs):
        """Like :meth:`infer_type`, with ``None`` for the types not inferred."""
        from . import infer
        return infer.infer_type(self, args, kwargs, partial=True)

    # -- serialization --------------------------------------------------------------------
    def tojson(self, remove_amp_cast=True):
        """The graph as JSON text, in MXNet's layout (nodes, arg_nodes, heads).

        ``remove_amp_cast`` (MXNet's default): the nodes read past the
        ``amp_cast``/``amp_multicast`` nodes of ``mx.contrib.amp``, which so
        drop out, as MXNet's RemoveAmpCast pass does (casts that are outputs
        of the graph stay).
        """
        if remove_amp_cast:
            return self._without_amp_casts().tojson(remove_amp_cast=False)
        nodes = self._nodes()
        index = {id(n): k for k, n in enumerate(nodes)}
        out, row = [], [0]
        for n in nodes:
            d = {'op': n.op, 'name': n.name}
            attrs = {k: _attr_str(v) for k, v in n.attrs.items()}
            attrs.update(n.user)
            if attrs:
                d['attrs'] = attrs
            d['inputs'] = [[index[id(src)], i, 0] for src, i in n.inputs]
            if not n.is_variable and any(nm is None for nm in n.input_names):
                d['varargs'] = True
            out.append(d)
            row.append(row[-1] + n.nout)
        graph = {'nodes': out,
                 'arg_nodes': [k for k, n in enumerate(nodes) if n.is_variable],
                 'node_row_ptr': row,
                 'heads': [[index[id(n)], i, 0] for n, i in self._outputs],
                 'attrs': {'mxnet_version': ['int', 10901],
                           'd2lmini': ['str', 'd2lmini symbol v1']}}
        return json.dumps(graph, indent=2)

    def save(self, fname, remove_amp_cast=True):
        """Write :meth:`tojson` to ``fname``."""
        if not isinstance(fname, str):
            raise TypeError('fname must be a string')
        with open(fname, 'w') as f:
            f.write(self.tojson(remove_amp_cast))

    def _without_amp_casts(self):
        """A copy whose nodes read the inputs of AMP's casts instead of the
        casts (itself if it has none)."""
        amp = ('amp_cast', 'amp_multicast')
        if not any(n.op in amp for n in self._nodes()):
            return self
        s = self._copy_graph()
        for n in s._nodes():
            n.inputs = [(src.inputs[0] if src.op == 'amp_cast' else src.inputs[i])
                        if src.op in amp else (src, i) for src, i in n.inputs]
        return s

    # -- binding -------------------------------------------------------------------------
    def simple_bind(self, ctx=None, grad_req='write', type_dict=None, stype_dict=None,
                    group2ctx=None, shared_arg_names=None, shared_exec=None,
                    shared_buffer=None, **kwargs):
        """Allocate every argument from the given input shapes and bind."""
        from ..executor import Executor
        return Executor._simple(self, ctx or current_context(), grad_req,
                                type_dict, shared_exec, kwargs)

    def bind(self, ctx, args, args_grad=None, grad_req='write', aux_states=None,
             group2ctx=None, shared_exec=None):
        """Bind to the arrays ``args`` (a list in list_arguments order, or a dict)."""
        from ..executor import Executor
        return Executor(self, ctx, args, args_grad, grad_req, aux_states)

    def eval(self, ctx=None, **kwargs):
        """Bind to ``kwargs`` and run forward: the list of outputs."""
        ex = self.bind(ctx or current_context(), kwargs, grad_req='null')
        return ex.forward()

    # -- a drawing ------------------------------------------------------------------------
    def _layers(self):
        """(node, depth) for a layered drawing: depth = longest path from an input."""
        depth = {}
        for n in self._nodes():
            depth[id(n)] = 1 + max((depth[id(s)] for s, _ in n.inputs), default=-1)
        return [(n, depth[id(n)]) for n in self._nodes()]


_BROADCAST = {'elemwise_add': 'broadcast_add', 'elemwise_sub': 'broadcast_sub',
              'elemwise_mul': 'broadcast_mul', 'elemwise_div': 'broadcast_div',
              'power': 'broadcast_power'}
_HINT = {'elemwise_add': '_plus', 'elemwise_sub': '_minus', 'elemwise_mul': '_mul',
         'elemwise_div': '_div', 'power': '_power', 'broadcast_mod': '_mod',
         'equal': '_equal', 'not_equal': '_not_equal', 'greater': '_greater',
         'greater_equal': '_greater_equal', 'lesser': '_lesser',
         'lesser_equal': '_lesser_equal'}


def _attr_str(v):
    """An attribute as MXNet writes it in JSON: ``(3, 3)``, ``True``, ``relu``."""
    if isinstance(v, str):
        return v
    if isinstance(v, (type, np.dtype)):
        try:
            return np.dtype(v).name
        except TypeError:
            return str(v)
    if isinstance(v, list):
        v = tuple(v)
    return str(v)


# --- constructors -----------------------------------------------------------------------
def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None,
             init=None, stype=None, **kwargs):
    """A named input of a graph (data, label, or a parameter).

    >>> x = mx.sym.var('x', shape=(2, 3))
    >>> x.list_arguments(), x.attr('__shape__')
    (['x'], '(2, 3)')
    """
    if not isinstance(name, str):
        raise TypeError(f'Variable: name must be a string, got {type(name).__name__}')
    user = {}
    if attr:
        user.update({k: str(v) for k, v in attr.items()})
    if shape is not None:
        user['__shape__'] = str(tuple(shape))
    if lr_mult is not None:
        user['__lr_mult__'] = str(lr_mult)
    if wd_mult is not None:
        user['__wd_mult__'] = str(wd_mult)
    if dtype is not None:
        user['__dtype__'] = np.dtype(dtype).name
    if init is not None:
        user['__init__'] = init if isinstance(init, str) else init.dumps()
    if stype is not None and stype != 'default':
        raise NotImplementedError('sparse storage types are not supported by d2lmini')
    for k, v in kwargs.items():
        if k.startswith('__') and k.endswith('__'):
            user[k] = str(v)
        else:
            raise ValueError(f"Variable: unknown attribute '{k}'; user attributes "
                             f"are written '__{k}__'")
    return Symbol([(_Node('null', name, user=user), 0)])


var = Variable


def Group(symbols):
    """One symbol with the outputs of all ``symbols``."""
    symbols = list(symbols)
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError('Group expects a non-empty list of Symbols')
    return Symbol([o for s in symbols for o in s._outputs])


def _fresh_name(name, hint):
    return _name._current().get(name, hint)




def __getattr__(name):
    """MXNet's path ``symbol.symbol.load`` (and ``load_json``): they live in
    loading.py, which imports this module."""
    if name in ('load', 'load_json'):
        from . import loading
        return getattr(loading, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
