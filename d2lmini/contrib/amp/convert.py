"""Mixed precision by rewriting a graph: ``convert_symbol``,
``convert_model`` and ``convert_hybrid_block`` (MXNet's ``contrib/amp/amp.py``
and its ReducePrecision pass, ``src/nnvm/low_precision_pass.cc``).

The pass copies the graph inputs-first and puts casts where the operator
lists (:mod:`.lists.symbol_fp16`) ask for them.  It knows, of each value,
whether it is float16, float32 or not known (a value can be both: a float16
output and its cast to float32), so a cast is made once and shared:

* a float32 operator (``softmax``, or one of ``excluded_sym_names``) gets
  its inputs as float32: ``amp_cast`` before each one not known to be
  float32 (variables are taken to be float32 already);
* a float16 operator (``FullyConnected``) gets ``amp_cast(float16)`` before
  each input not known to be float16, parameters included, unless
  ``cast_optional_params``, where the parameters themselves become float16;
* a widest-type operator (``elemwise_add``) gets float32 inputs if one is
  float32, float16 ones if all are, and an ``amp_multicast`` if some input's
  type is not known;
* any other operator runs in the type of its first input, which it passes on;
* an output of the graph is cast to float32.

Then types are inferred on the new graph (data float32) and each parameter
gets its type as ``__dtype__``: a network converted for inference keeps
float32 weights unless ``cast_optional_params`` makes the ones only float16
operators read float16 (half the memory).
"""
import numpy as np

from ...base import MXNetError
from ...symbol import Symbol
from ...symbol.infer import _dtype_attr, var_dtype
from ...symbol.symbol import AUX_INPUTS, _Node, _attr_str
from .lists import symbol_fp16

__all__ = ['convert_symbol', 'convert_model', 'convert_hybrid_block']

_F32 = np.dtype(np.float32)


class AMPError(MXNetError, AssertionError):
    """AMP used out of order or with bad arguments.  MXNet asserts there, so
    ``except AssertionError`` catches it as well as ``except MXNetError``."""


def target_dtype_of(target_dtype):
    """``target_dtype`` as a NumPy dtype: float16 is the one d2lmini has."""
    if isinstance(target_dtype, str) and target_dtype == 'bfloat16':
        raise AMPError("AMP's target_dtype 'bfloat16' is not available in d2lmini "
                       "(NumPy has no bfloat16); use 'float16'")
    try:
        d = np.dtype(target_dtype)
    except TypeError:
        d = None
    if d != np.float16:
        raise AMPError(f"AMP supports target_dtype='float16' (MXNet also "
                       f"'bfloat16'), got {target_dtype!r}")
    return d


def _names(value, what):
    if value is not None and not (isinstance(value, list) and
                                  all(isinstance(v, str) for v in value)):
        raise AMPError(f'{what} should be a list of strs, got {value!r}')
    return value


def op_lists(target_dtype_ops=None, fp32_ops=None, conditional_fp32_ops=None):
    """The three lists, MXNet's defaults where None, checked as MXNet does:
    each a list of the right kind, no operator in two of them, and every
    operator one that AMP's lists know."""
    lp16 = _names(target_dtype_ops, 'target_dtype_ops')
    lp16 = symbol_fp16.FP16_FUNCS if lp16 is None else lp16
    fp32 = _names(fp32_ops, 'fp32_ops')
    fp32 = symbol_fp16.FP32_FUNCS if fp32 is None else fp32
    cond = symbol_fp16.CONDITIONAL_FP32_FUNCS if conditional_fp32_ops is None \
        else conditional_fp32_ops
    if not isinstance(cond, list) or not all(
            isinstance(c, (list, tuple)) and len(c) == 3 and isinstance(c[0], str)
            and isinstance(c[1], str) and isinstance(c[2], list) for c in cond):
        raise AMPError('conditional_fp32_ops should be a list of (str, str, list '
                       f'of str): (operator, attribute, values), got {cond!r}')
    named = {'target_dtype_ops': set(lp16), 'fp32_ops': set(fp32),
             'conditional_fp32_ops': {c[0] for c in cond}}
    pairs = [('target_dtype_ops', 'fp32_ops'),
             ('target_dtype_ops', 'conditional_fp32_ops'),
             ('fp32_ops', 'conditional_fp32_ops')]
    for a, b in pairs:
        common = named[a] & named[b]
        if common:
            raise AMPError(f'Ops cannot be in two or more lists. Common ops in {a} '
                           f'and {b}: {sorted(common)}')
    known = set(symbol_fp16.FP16_FUNCS + symbol_fp16.FP32_FUNCS +
                symbol_fp16.FP16_FP32_FUNCS) | {
        c[0] for c in symbol_fp16.CONDITIONAL_FP32_FUNCS}
    illegal = set().union(*named.values()) - known
    if illegal:
        raise AMPError(f'operators {sorted(illegal)} are in none of AMP\'s lists '
                       f'(amp.list_lp16_ops, list_fp32_ops, list_lp16_fp32_ops, '
                       f'list_conditional_fp32_ops): they cannot be moved')
    return list(lp16), list(fp32), [tuple(c) for c in cond]


# --- the pass ------------------------------------------------------------------------
# The names MXNet's operators give their outputs (FListOutputNames), which
# name the casts (``fc1_output_amp_cast_float32``); an operator without them
# numbers its outputs (``relu0_0_amp_cast_float16``).
_OUTPUT_NAMES = dict.fromkeys(
    ['FullyConnected', 'Convolution', 'Deconvolution', '_conv_act', 'Activation',
     'Pooling', 'Concat', 'concat', 'softmax', 'softmin', 'SoftmaxActivation',
     'SoftmaxOutput', 'Softmax', 'elemwise_add', 'Pad', 'SwapAxis'], ('output',))
_OUTPUT_NAMES.update({
    'BatchNorm': ('output', 'mean', 'var'), 'InstanceNorm': ('output', 'mean', 'var'),
    'GroupNorm': ('output', 'mean', 'std'), 'Dropout': ('output', 'mask'),
    'LeakyReLU': ('output', 'mask'), 'MakeLoss': ('output',),
    'make_loss': ('loss',), 'RNN': ('output', 'state_output', 'statecell_output')})

# "Other" operators whose output type is not their first input's
_OWN_TYPE = frozenset({'argmax', 'argmin', 'argmax_channel', 'one_hot', 'shape_array',
                       'size_array', 'all_finite', 'multi_all_finite'})


# Inputs a float16 operator keeps in float32 (MXNet's BatchNorm)
_FLOAT32_INPUTS = {'BatchNorm': ('gamma', 'beta', 'moving_mean', 'moving_var')}


def _suffix(node, i):
    if node.is_variable:
        return ''
    if node.op in ('split', 'SliceChannel'):
        return f'_output{i}'
    names = _OUTPUT_NAMES.get(node.op)
    return '_' + (names[i] if names and i < len(names) else str(i))


def _out_types(node, t):
    """The output types of an "other" node whose first input has type ``t``
    (None: not known)."""
    if node.op == 'amp_multicast':
        return [t] + [None] * (node.nout - 1)
    d = _dtype_attr(node)
    if d is not None:
        return [d] * node.nout
    if node.op in _OWN_TYPE:
        return [None] * node.nout
    if node.op == 'BatchNorm':
        return [t] + [_F32] * (node.nout - 1)
    return [t] * node.nout


def _conditional(node, conditional):
    return any(node.op == op and attr in node.attrs and
               _attr_str(node.attrs[attr]) in values
               for op, attr, values in conditional)


class _Pass:
    """The state of one conversion: the copies, and what is known of types."""

    def __init__(self, target, cast_optional_params, data_names):
        self.t = target.name
        self.optional, self.data = cast_optional_params, set(data_names)
        self.mirror = {}              # id(old node) -> its copy
        self.fp32, self.lp16 = {}, {}  # (id(old node), i) -> (new node, j)

    def entry(self, e):
        return (self.mirror[id(e[0])], e[1])

    def cast(self, e, dtype, known):
        """An ``amp_cast`` of the copy of entry ``e``, remembered in ``known``."""
        src, i = e
        node = _Node('amp_cast', f'{src.name}{_suffix(src, i)}_amp_cast_{dtype}',
                     [self.entry(e)], ['data'], {'dtype': dtype}, {}, 1)
        known[(id(src), i)] = (node, 0)
        return (node, 0)

    def outputs_are(self, node, new, known):
        for i in range(node.nout):
            known[(id(node), i)] = (new, i)

    def fp32_node(self, node, new, cast_variables=False):
        """A float32 operator; variables are taken to be float32 already,
        except by a conditional one (MXNet's two rules)."""
        self.outputs_are(node, new, self.fp32)
        for e, nm in zip(node.inputs, node.input_names):
            k = (id(e[0]), e[1])
            if k in self.fp32:
                new.inputs.append(self.fp32[k])
            elif (e[0].is_variable and not cast_variables) or \
                    nm in AUX_INPUTS.get(node.op, ()):
                new.inputs.append(self.entry(e))
            else:
                new.inputs.append(self.cast(e, 'float32', self.fp32))

    def lp16_node(self, node, new):
        self.outputs_are(node, new, self.lp16)
        keep = _FLOAT32_INPUTS.get(node.op, ())
        for e, nm in zip(node.inputs, node.input_names):
            k = (id(e[0]), e[1])
            param = e[0].is_variable and e[0].name not in self.data
            if k in self.lp16:
                new.inputs.append(self.lp16[k])
            elif (self.optional and param) or nm in keep:
                new.inputs.append(self.entry(e))
                if self.optional and e[0].is_variable:
                    self.lp16[k] = self.entry(e)
            else:
                new.inputs.append(self.cast(e, self.t, self.lp16))

    def widest_node(self, node, new):
        if not node.inputs:
            raise AMPError(f"node '{node.name}' ({node.op}) has no inputs; check "
                           f"how the symbol was built")
        keys = [(id(s), i) for s, i in node.inputs]
        if any(k not in self.lp16 and k not in self.fp32 for k in keys):
            src, i = node.inputs[0]
            n = len(keys)
            mc = _Node('amp_multicast', f'{src.name}{_suffix(src, i)}_amp_multicast',
                       [self.entry(e) for e in node.inputs], [None] * n,
                       {'num_outputs': n}, {}, n)
            new.inputs = [(mc, i) for i in range(n)]
            return
        wide = any(k in self.fp32 for k in keys)
        known, dtype = (self.fp32, 'float32') if wide else (self.lp16, self.t)
        self.outputs_are(node, new, known)
        new.inputs = [known[k] if k in known else self.cast(e, dtype, known)
                      for e, k in zip(node.inputs, keys)]

    def other_node(self, node, new):
        if node.inputs:
            k = (id(node.inputs[0][0]), node.inputs[0][1])
            t = np.dtype(self.t) if k in self.lp16 else _F32 if k in self.fp32 \
                else None
            if t is not None:
                for i, d in enumerate(_out_types(node, t)):
                    if d == np.dtype(self.t):
                        self.lp16[(id(node), i)] = (new, i)
                    elif d == _F32:
                        self.fp32[(id(node), i)] = (new, i)
        new.inputs = [self.entry(e) for e in node.inputs]


def _reduce_precision(sym, target, lp16_ops, fp32_ops, widest_ops, conditional,
                      excluded, data_names, cast_optional_params):
    p = _Pass(target, cast_optional_params, data_names)
    lp16_ops, fp32_ops, widest_ops = set(lp16_ops), set(fp32_ops), set(widest_ops)
    for node in sym._nodes():
        new = _Node(node.op, node.name, [], list(node.input_names), dict(node.attrs),
                    dict(node.user), node.nout)
        if node.name in excluded or (not node.is_variable and node.op in fp32_ops):
            p.fp32_node(node, new)
        elif node.is_variable:
            pass                  # a variable: copied, of no known type
        elif node.op in lp16_ops:
            p.lp16_node(node, new)
        elif node.op in widest_ops:
            p.widest_node(node, new)
        elif _conditional(node, conditional):
            p.fp32_node(node, new, cast_variables=True)
        else:
            p.other_node(node, new)
        p.mirror[id(node)] = new
    heads = [p.fp32.get((id(n), i)) or p.cast((n, i), 'float32', p.fp32)
             for n, i in sym._outputs]
    return Symbol(heads)


def _infer_unknown(sym, types, target):
    """MXNet's AMPInferUnknown (``cast_optional_params``): a variable of no
    known type read by ``amp_cast`` takes the cast's type, and one read by an
    ``amp_multicast`` of variables only takes the target type; a variable
    asked for two different types stays as it was."""
    seen = {}

    def offer(var, d):
        if var.name not in seen:
            if types.get(var.name) is None:
                seen[var.name] = d
                types[var.name] = d
        elif seen[var.name] != d:
            types[var.name] = None

    for n in sym._nodes():
        if n.op == 'amp_cast':
            for src, _ in n.inputs:
                if src.is_variable:
                    offer(src, np.dtype(n.attrs['dtype']))
        elif n.op == 'amp_multicast' and all(s.is_variable for s, _ in n.inputs):
            for src, _ in n.inputs:
                offer(src, target)


def convert_symbol(sym, target_dtype='float16', target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """A copy of the float32 network ``sym`` with casts: float16 where the
    lists say it is safe, float32 where not (see the module's docstring).

    Parameters
    ----------
    sym : Symbol
    target_dtype : 'float16'
    target_dtype_ops, fp32_ops : list of str, optional
        The operators to run in float16 / float32 (default: AMP's lists).
    conditional_fp32_ops : list of (str, str, list of str), optional
        (operator, attribute, values): float32 when the attribute has one of
        the values (default: ``Activation`` with ``softrelu``, ...).
    excluded_sym_names : list of str, optional
        Nodes to leave in float32 whatever their operator.
    data_names : list of str, optional
        The inputs that are data (float32); the others are parameters.
        Default: the inputs without a ``__dtype__`` attribute.
    cast_optional_params : bool
        Make the parameters that only float16 operators read float16 (no
        cast at run time, half the memory) instead of keeping them float32.

    Examples
    --------
    >>> x = mx.sym.var('x')
    >>> fc = mx.sym.FullyConnected(x, num_hidden=10, name='fc')
    >>> amp.convert_symbol(mx.sym.softmax(fc)).list_inputs()
    ['x', 'fc_weight', 'fc_bias']
    """
    if not isinstance(sym, Symbol):
        raise AMPError(f'First argument to convert_symbol should be a Symbol, got '
                       f'{type(sym).__name__}')
    target = target_dtype_of(target_dtype)
    lp16, fp32, cond = op_lists(target_dtype_ops, fp32_ops, conditional_fp32_ops)
    excluded = _names(excluded_sym_names, 'excluded_sym_names') or []
    inputs = sym.list_inputs()
    if data_names is None:
        data_names = [v.name for v in sym._variables() if '__dtype__' not in v.user]
    model_params = set(inputs) - set(data_names)
    out = _reduce_precision(sym, target, lp16, fp32, symbol_fp16.WIDEST_TYPE_CASTS,
                            cond, set(excluded), data_names, cast_optional_params)
    # Types on the new graph, from the data alone (as MXNet infers them: a
    # __dtype__ the float32 network had is no evidence of the new one).
    declared = {}
    for v in out._variables():
        declared[v.name] = v.user.pop('__dtype__', None)
    args, _, auxs = out.infer_type_partial(
        **{n: 'float32' for n in data_names if n in declared})
    types = dict(zip(out.list_arguments() + out.list_auxiliary_states(),
                     [None if d is None else np.dtype(d) for d in args + auxs]))
    if cast_optional_params:
        _infer_unknown(out, types, target)
    # MXNet's rule: the parameters get their types; without parameters, the
    # inputs that declared a type get the one inferred (float32 if none).
    for v in out._variables():
        update = v.name in model_params if model_params else \
            declared[v.name] is not None
        if update:
            v.user['__dtype__'] = (types.get(v.name) or _F32).name
        elif declared[v.name] is not None:
            v.user['__dtype__'] = declared[v.name]
    return out


def _cast_params(sym, params):
    """``params`` (name -> NDArray) cast to the ``__dtype__`` each has in ``sym``."""
    dtypes = {v.name: var_dtype(v) for v in sym._variables()}
    return {k: v if dtypes.get(k) in (None, v.dtype) else v.astype(dtypes[k])
            for k, v in params.items()}


def convert_model(sym, arg_params, aux_params, target_dtype='float16',
                  target_dtype_ops=None, fp32_ops=None, conditional_fp32_ops=None,
                  excluded_sym_names=None, cast_optional_params=False):
    """:func:`convert_symbol` for a model (symbol and parameters, as
    ``mx.model.load_checkpoint`` returns them): ``(sym, arg_params,
    aux_params)`` with each parameter in its new type.  The dicts given are
    left as they are (MXNet changes them in place)."""
    if not isinstance(sym, Symbol):
        raise AMPError('First argument to convert_model should be a Symbol')
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise AMPError('arg_params and aux_params should be dicts of name to NDArray')
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    out = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                         conditional_fp32_ops, excluded_sym_names, data_names,
                         cast_optional_params)
    return out, _cast_params(out, arg_params), _cast_params(out, aux_params)


def convert_hybrid_block(block, target_dtype='float16', target_dtype_ops=None,
                         fp32_ops=None, conditional_fp32_ops=None,
                         excluded_sym_names=None, ctx=None, cast_optional_params=False):
    """A :class:`~d2lmini.gluon.SymbolBlock` running the hybridized ``block``
    in mixed precision, for inference: its traced graph through
    :func:`convert_symbol`, its parameters in their new types on ``ctx``
    (default: where ``block``'s are; MXNet's default is ``gpu(0)``).

    >>> net.hybridize(); net(x)                          # doctest: +SKIP
    >>> net16 = amp.convert_hybrid_block(net)            # doctest: +SKIP
    """
    from ...gluon import HybridBlock, SymbolBlock
    from ...symbol import var
    if not isinstance(block, HybridBlock):
        raise AMPError(f'block input should be a HybridBlock, got '
                       f'{type(block).__name__}')
    graph = block.__dict__.get('_cached_graph')
    if not graph:
        raise RuntimeError('Please first call block.hybridize() and then run forward '
                           'with this block at least once before calling '
                           'convert_hybrid_block.')
    sym = convert_symbol(graph.symbol, target_dtype, target_dtype_ops, fp32_ops,
                         conditional_fp32_ops, excluded_sym_names,
                         graph.input_names, cast_optional_params)
    params = {name: p for name, p in block.collect_params().items()}
    ret = SymbolBlock(sym, [var(n) for n in graph.input_names])
    arrays = _cast_params(sym, {n: params[n]._reduce(None) for n in
                                ret.collect_params().keys()})
    for name, p in ret.collect_params().items():
        p.cast(arrays[name].dtype)
    if ctx is None:
        ctx = next(iter(params.values())).list_ctx() if params else None
    ret.collect_params().load_dict(arrays, ctx=ctx)
    return ret
