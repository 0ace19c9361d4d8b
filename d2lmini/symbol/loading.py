"""Reading a symbol file (``*-symbol.json``, MXNet's layout) into a
:class:`~.symbol.Symbol`.

A symbol file may come from anywhere (a download, a peer), so every node is
checked before it becomes part of a graph: its fields and their types, that
its inputs name earlier nodes and outputs they have, that its operator
exists, that its attributes parse, and that the graph stays under
:data:`MAX_OUTPUTS` outputs.  A bad file is refused with an
:class:`MXNetError` that names the node and what is wrong with it.

>>> net = mx.sym.load_json(mx.sym.var('x').tojson())
>>> net.list_arguments()
['x']
"""
import ast
import json

from ..base import MXNetError
from .symbol import Symbol, _Node, _nout

__all__ = ['load', 'load_json']


def _parse_attr(s, where='attribute'):
    """An attribute's value from its string (``'(3, 3)'`` -> ``(3, 3)``);
    a string that is no Python literal (``'relu'``) stays a string."""
    if not isinstance(s, str):
        return s
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return s
    except (MemoryError, RecursionError):
        # Python's parser gives up on deep nesting ('------1') with a bare
        # MemoryError or a RecursionError; no operator has such a value.
        raise MXNetError(f'{where}: the value {s[:40]!r}... (length {len(s):,}) '
                         f'is nested too deeply to be a value') from None


def _node_problem(d):
    """What is wrong with node ``d`` of a symbol file, or None."""
    if not isinstance(d, dict):
        return f'a {type(d).__name__}, not an object'
    for field in ('op', 'name'):
        if field not in d:
            return f"missing '{field}'"
        if not isinstance(d[field], str):
            return f"'{field}' is not a string"
    if not isinstance(d.get('inputs', []), list):
        return "'inputs' is not a list"
    return None


# A graph whose nodes together have more outputs than this is refused by
# load_json: a crafted file could otherwise declare a split into 10**10
# outputs in a few bytes, and listing or inferring them would exhaust
# memory.  The largest real models have some thousands of nodes.
MAX_OUTPUTS = 1 << 20


def load_json(json_str):
    """The Symbol of :meth:`Symbol.tojson` text (MXNet's layout).

    A document that is not such a graph raises an :class:`MXNetError`
    naming the node and what is wrong with it: a missing or mistyped field,
    an input that names no earlier node, an unknown operator, an attribute
    nested too deeply to parse, or more than :data:`MAX_OUTPUTS` outputs.
    """
    from . import ops
    try:
        graph = json.loads(json_str)
    except (TypeError, ValueError) as e:
        raise MXNetError(f'load_json: not a JSON document ({e})') from None
    except RecursionError:
        raise MXNetError('load_json: not a symbol file (its JSON is nested too '
                         'deeply)') from None
    if not isinstance(graph, dict) or not isinstance(graph.get('nodes'), list) \
            or 'heads' not in graph:
        raise MXNetError("load_json: not a symbol file (it needs 'nodes' and "
                         "'heads', and 'nodes' is a list)")
    nodes = []
    total = 0

    def entry(e, what):
        """The (node, output index) an input or head ``[node, index, version]``
        names; a clear error if there is no such node or output."""
        if not (isinstance(e, list) and 2 <= len(e) <= 3 and
                all(type(v) is int for v in e) and 0 <= e[0] < len(nodes)):
            raise MXNetError(f'load_json: {what} refers to {e!r}: no such node '
                             f'(entries are [node index, output index, 0], and '
                             f'a node reads only earlier nodes)')
        src, i = nodes[e[0]], e[1]
        if not 0 <= i < src.nout:
            raise MXNetError(f"load_json: {what} reads output {i} of node "
                             f"'{src.name}', which has {src.nout} output(s)")
        return src, i

    for k, d in enumerate(graph['nodes']):
        problem = _node_problem(d)
        if problem:
            raise MXNetError(f"load_json: node {k} is malformed ({problem}); a "
                             f"node needs 'op' and 'name' (strings) and 'inputs' "
                             f"(a list)")
        op, name = d['op'], d['name']
        inputs = [entry(e, f"input {j} of node '{name}'")
                  for j, e in enumerate(d.get('inputs', []))]
        raw = d.get('attrs', d.get('param', d.get('attr', {}))) or {}
        if not isinstance(raw, dict) or not all(isinstance(a, str) for a in raw):
            raise MXNetError(f"load_json: the attributes of node '{name}' are not "
                             f"an object of name: value")
        user = {a: v for a, v in raw.items() if a.startswith('__')}
        attrs = {a: _parse_attr(v, f"load_json: attribute '{a}' of node '{name}'")
                 for a, v in raw.items() if not a.startswith('__')}
        if op == 'null':
            node = _Node('null', name, user=user)
        else:
            if not ops.has_op(op):
                raise MXNetError(f"load_json: node '{name}' uses operator '{op}', "
                                 f"which d2lmini does not have")
            try:
                nout = _nout(op, attrs)
            except (TypeError, ValueError):
                nout = None
            if type(nout) is not int or nout < 1:
                raise MXNetError(f"load_json: node '{name}' ({op}): its attributes "
                                 f"give no valid number of outputs "
                                 f"({str(raw)[:200]})")
            names = ops.input_names(op, attrs, len(inputs), d.get('varargs', False))
            node = _Node(op, name, inputs, names, attrs, user, nout)
        total += node.nout
        if total > MAX_OUTPUTS:
            raise MXNetError(f"load_json: the graph has more than {MAX_OUTPUTS:,} "
                             f"outputs (node '{name}' ({op}) has {node.nout:,}); "
                             f"d2lmini refuses such a graph "
                             f"(d2lmini.symbol.loading.MAX_OUTPUTS)")
        nodes.append(node)
    if not isinstance(graph['heads'], list) or not graph['heads']:
        raise MXNetError("load_json: 'heads' must be a non-empty list of outputs")
    heads = [entry(h, f'head {j}') for j, h in enumerate(graph['heads'])]
    return Symbol(heads)


def load(fname):
    """Load a symbol saved by :meth:`Symbol.save` (``*-symbol.json``)."""
    if not isinstance(fname, str):
        raise TypeError('fname must be a string')
    with open(fname) as f:
        text = f.read()
    try:
        return load_json(text)
    except MXNetError as e:
        raise MXNetError(f'{fname}: {e}') from None
