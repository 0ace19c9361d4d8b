"""``mx.viz``: look at a Symbol graph, as a table or as a drawing.

``print_summary(net, shape={'data': (1, 1, 28, 28)})`` prints one row per
layer: its output shape, how many parameters it owns and what feeds it.
``plot_network(net)`` draws the graph, layer boxes joined by arrows from
input to output.  It uses Graphviz when both the ``graphviz`` Python package
and its ``dot`` program are installed (and then returns a
``graphviz.Digraph``, as MXNet does); otherwise it lays the graph out in
layers itself and draws it with matplotlib (and returns the figure).

Both work from one description of the graph (:func:`_describe`): which nodes
are shown, what each box says, its colour, and the shape on each arrow.
"""
import io
import math
import shutil
import warnings

import numpy as np

from .symbol import Symbol
from .symbol.symbol import AUTO_INPUTS, AUX_INPUTS

__all__ = ['print_summary', 'plot_network']

# MXNet's palette: inputs, weight layers, activations, normalization,
# pooling, reshaping, softmax, anything else.
_COLORS = ('#8dd3c7', '#fb8072', '#ffffb3', '#bebada', '#80b1d3',
           '#fdb462', '#b3de69', '#fccde5')
_WEIGHT_LIKE = ('_weight', '_bias', '_beta', '_gamma', '_moving_var',
                '_moving_mean', '_running_var', '_running_mean')


def _check(symbol):
    if not isinstance(symbol, Symbol):
        raise TypeError(f'expected a Symbol (mx.sym...), got '
                        f'{type(symbol).__name__}; for a Gluon block, '
                        f'hybridize it, call it once and pass '
                        f'block(mx.sym.var("data")) instead')


def _roles(symbol):
    """Variables that are parameters (id -> node), auxiliary states and labels.

    A variable's role is the input slot it feeds: ``weight``/``bias`` of a
    FullyConnected, ``gamma``/``beta`` of a BatchNorm are parameters,
    ``moving_mean``/``moving_var`` auxiliary states, ``label`` of a loss
    head a label.  Everything else (``data``) is an input of the network.
    """
    params, aux, labels = {}, set(), set()
    for node in symbol._nodes():
        if node.is_variable:
            continue
        owned = AUTO_INPUTS.get(node.op, ())
        for (src, _), slot in zip(node.inputs, node.input_names):
            if not src.is_variable or slot not in owned:
                continue
            if slot == 'label':
                labels.add(id(src))
            elif slot in AUX_INPUTS.get(node.op, ()):
                aux.add(id(src))
            else:
                params.setdefault(id(src), node)
    return params, aux, labels


def _shapes(symbol, shape):
    """Shape of every internal output (``'fc1_output'``, ``'data'``...)
    from the input shapes ``shape`` ({} without them).  Shapes that stay
    unknown are an error naming them, as drawing half a graph would mislead."""
    if not shape:
        return {}
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape_partial(**shape)
    names = internals.list_outputs()
    unknown = [n for n, s in zip(names, out_shapes)
               if not s or any(d <= 0 for d in s)]
    if unknown:
        raise ValueError(f'input shape is incomplete: given {shape}, the shapes '
                         f'of {unknown[:5]} cannot be inferred; give the shape '
                         f'of every data input')
    return {n: tuple(s) for n, s in zip(names, out_shapes)}


def _out_key(node, index=0):
    if node.is_variable:
        return node.name
    return f'{node.name}_output' if node.nout == 1 else f'{node.name}_output{index}'


def _label(node):
    """The text of a node's box (MXNet's wording: op, then its key attribute)."""
    a = node.attrs

    def xs(v):
        return 'x'.join(str(int(k)) for k in (v if isinstance(v, (tuple, list))
                                               else (v,)))
    if node.is_variable:
        return node.name
    if node.op in ('Convolution', '_conv_act'):     # _conv_act: conv + relu fused
        act = f"+{a.get('act_type', 'relu')}" if node.op == '_conv_act' else ''
        return (f"Convolution{act}\n{xs(a['kernel'])}/{xs(a.get('stride') or 1)}, "
                f"{a['num_filter']}")
    if node.op == 'FullyConnected':
        return f"FullyConnected\n{a['num_hidden']}"
    if node.op in ('Activation', 'LeakyReLU'):
        return f"{node.op}\n{a.get('act_type', 'leaky')}"
    if node.op == 'Pooling':
        kernel = xs(a['kernel']) if 'kernel' in a else '[]'
        return (f"Pooling\n{a.get('pool_type', 'max')}, {kernel}/"
                f"{xs(a.get('stride') or 1)}")
    if node.op == 'BatchNorm':
        return node.name
    return f'{node.op}\n{node.name}'


_COLOR_OF = {'Convolution': 1, '_conv_act': 1, 'FullyConnected': 1, 'Activation': 2,
             'LeakyReLU': 2, 'BatchNorm': 3, 'Pooling': 4, 'Concat': 5,
             'Flatten': 5, 'Reshape': 5, 'Softmax': 6, 'SoftmaxOutput': 6,
             'softmax': 6}


def _color(node):
    return _COLORS[0] if node.is_variable else _COLORS[_COLOR_OF.get(node.op, 7)]


def _describe(symbol, shape=None, dtype=None, hide_weights=True):
    """What a drawing shows: ``(boxes, edges)``.

    ``boxes``: ``(node, label, color, depth)`` for each node shown (every
    operator and every variable that is not a parameter or an auxiliary
    state; with ``hide_weights=False`` those are shown too);
    ``edges``: ``(src_node, dst_node, label)``, the label being the shape
    (without the batch axis) and dtype flowing along it when known.
    """
    params, aux, _ = _roles(symbol)
    hidden = set(params) | aux
    shapes = _shapes(symbol, shape)
    types = {}
    if dtype:
        internals = symbol.get_internals()
        _, out_types, _ = internals.infer_type(**dtype)
        if out_types is not None:
            types = dict(zip(internals.list_outputs(), out_types))
    layers = symbol._layers()
    # A variable sits one row below its first user, not down with the data
    # (a label drawn at the bottom would cross the whole graph to the loss).
    first_use = {}
    for node, d in layers:
        for src, _ in node.inputs:
            first_use[id(src)] = min(first_use.get(id(src), d), d)
    depth_of = {id(n): first_use[id(n)] - 1 if n.is_variable and id(n) in first_use
                else d for n, d in layers}

    def hidden_node(n):
        return hide_weights and n.is_variable and (
            id(n) in hidden or n.name.endswith(_WEIGHT_LIKE))
    boxes, edges = [], []
    for node, _ in layers:
        if hidden_node(node):
            continue
        boxes.append((node, _label(node), _color(node), depth_of[id(node)]))
        for src, index in node.inputs:
            if hidden_node(src):
                continue
            key = _out_key(src, index)
            text = 'x'.join(str(d) for d in shapes[key][1:]) if key in shapes else ''
            if key in types:
                text += f'({np.dtype(types[key]).name})'
            edges.append((src, node, text))
    return boxes, edges


def _warn_duplicates(symbol):
    seen, repeated = set(), []
    for node in symbol._nodes():
        if node.name in seen and node.name not in repeated:
            repeated.append(node.name)
        seen.add(node.name)
    if repeated:
        warnings.warn('There are multiple variables with the same name in your '
                      'graph, this may result in cyclic graph. Repeated names: '
                      + ','.join(repeated), RuntimeWarning, stacklevel=3)


# --- the table -------------------------------------------------------------------
def _param_counts(symbol, shapes):
    """Parameters owned by each operator node (name -> count), from the
    shapes of its weight inputs (0 where they are not known)."""
    params, _, _ = _roles(symbol)
    counts = {}
    for node in symbol._nodes():
        if not node.is_variable:
            counts[node.name] = sum(
                math.prod(shapes[src.name]) for src, _ in node.inputs
                if params.get(id(src)) is node and src.name in shapes)
    return counts


def print_summary(symbol, shape=None, line_length=120, positions=(.44, .64, .74, 1.)):
    """Print one row per layer: ``name(op)``, output shape, parameters, inputs.

    Parameters
    ----------
    symbol : Symbol
    shape : dict, optional
        Input shapes (``{'data': (1, 1, 28, 28)}``); without them the
        output shapes and the parameter counts are left out (0).
    line_length : int
        Width of the table.
    positions : sequence of float
        Where each column ends, as fractions of ``line_length`` (or
        absolute positions when the last one is > 1).

    Examples
    --------
    >>> net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=10, name='fc')
    >>> mx.viz.print_summary(net, shape={'data': (1, 20)})   # fc: 210 params
    """
    _check(symbol)
    shapes = _shapes(symbol, shape)
    counts = _param_counts(symbol, shapes)
    params, aux, labels = _roles(symbol)
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def row(fields):
        line = ''
        for field, end in zip(fields, positions):
            line += str(field)
            line = line[:end - 1] + ' '       # a full column still ends in a space
            line += ' ' * (end - len(line))
        print(line.rstrip())

    def shown(node):
        return not node.is_variable or not (id(node) in params or id(node) in aux
                                            or id(node) in labels)
    nodes = [n for n in symbol._nodes() if shown(n)]
    print('_' * line_length)
    row(['Layer (type)', 'Output Shape', 'Param #', 'Previous Layer'])
    print('=' * line_length)
    total = 0
    for k, node in enumerate(nodes):
        out = shapes.get(_out_key(node, node.nout - 1), ())
        prev = [src.name for src, _ in node.inputs if shown(src)]
        n = counts.get(node.name, 0)
        total += n
        op = 'null' if node.is_variable else node.op
        row([f'{node.name}({op})', 'x'.join(str(d) for d in out[1:]), n,
             prev[0] if prev else ''])
        for p in prev[1:]:
            row(['', '', '', p])
        print(('=' if k == len(nodes) - 1 else '_') * line_length)
    print(f'Total params: {total}')
    print('_' * line_length)


# --- the drawing -------------------------------------------------------------------
def _graphviz():
    """graphviz.Digraph if the package and its ``dot`` program are both there."""
    try:
        from graphviz import Digraph
    except ImportError:
        return None
    return Digraph if shutil.which('dot') else None


def plot_network(symbol, title='plot', save_format='pdf', shape=None, dtype=None,
                 node_attrs=None, hide_weights=True):
    """Draw ``symbol``'s graph: a box per layer, arrows from input to output.

    Parameters
    ----------
    symbol : Symbol
    title : str
        The drawing's name (and the matplotlib figure's title).
    save_format : str
        Graphviz's output format (Graphviz only).
    shape : dict, optional
        Input shapes; each arrow is then labelled with the shape (without
        the batch axis) flowing along it.
    dtype : dict, optional
        Input dtypes; arrows also say the dtype.
    node_attrs : dict, optional
        Graphviz node attributes (``{'shape': 'oval'}``); with matplotlib,
        ``'width'`` and ``'height'`` (inches) of a box are honoured.
    hide_weights : bool
        Leave out parameters (``*_weight``, ``*_bias``...) and auxiliary
        states (default), drawing only the data and the layers.

    Returns
    -------
    graphviz.Digraph, or a matplotlib Figure when Graphviz is absent (a
    notebook shows either when it is a cell's value; ``fig.savefig(...)``
    writes the figure).  In the figure every box is a patch whose gid is
    its node's name.

    Examples
    --------
    >>> fig = mx.viz.plot_network(net, shape={'data': (1, 784)})
    """
    _check(symbol)
    _warn_duplicates(symbol)
    boxes, edges = _describe(symbol, shape, dtype, hide_weights)
    attrs = {'shape': 'box', 'fixedsize': 'true', 'width': '1.3',
             'height': '0.8034', 'style': 'filled'}
    attrs.update(node_attrs or {})
    Digraph = _graphviz()
    if Digraph is not None:
        dot = Digraph(name=title, format=save_format)
        for node, label, color, _ in boxes:
            a = dict(attrs, fillcolor=color)
            if node.is_variable:
                a['shape'] = 'oval'
            dot.node(name=node.name, label=label, **a)
        for src, dst, text in edges:
            # drawn from the layer back to its input, so inputs end at the bottom
            dot.edge(tail_name=dst.name, head_name=src.name, dir='back',
                     arrowtail='open', label=text)
        return dot
    return _draw(boxes, edges, title, float(attrs['width']), float(attrs['height']))


_FIGURE = []


def _network_figure():
    """A matplotlib Figure class that a notebook shows when it is a cell's
    value, as it shows Graphviz's Digraph.  It is not one of pyplot's
    figures, so nothing stays open in a script and a notebook does not
    show it a second time at the end of the cell."""
    if not _FIGURE:
        from matplotlib.figure import Figure

        class NetworkFigure(Figure):
            def _repr_svg_(self):
                buf = io.StringIO()
                self.savefig(buf, format='svg', bbox_inches='tight')
                return buf.getvalue()
        _FIGURE.append(NetworkFigure)
    return _FIGURE[0]


def _draw(boxes, edges, title, width, height):
    """A layered drawing with matplotlib: depth upwards, layers side by side."""
    from matplotlib.patches import FancyBboxPatch

    layers = {}
    for b in boxes:
        layers.setdefault(b[3], []).append(b)
    depths = sorted(layers)
    row_of = {d: k for k, d in enumerate(depths)}     # no empty rows
    widest = max(len(v) for v in layers.values())
    gap_x, gap_y = width * 0.35, height * 0.9
    fig_w = max(3.0, widest * (width + gap_x) + gap_x)
    fig_h = max(2.0, len(depths) * (height + gap_y) + gap_y)
    fig = _network_figure()(figsize=(fig_w, fig_h))
    ax = fig.add_subplot()
    pos = {}
    for d, row in layers.items():
        n = len(row)
        for k, (node, label, color, _) in enumerate(row):
            x = fig_w / 2 + (k - (n - 1) / 2) * (width + gap_x)
            y = gap_y + row_of[d] * (height + gap_y) + height / 2
            pos[id(node)] = (x, y)
            style = 'round,pad=0.02,rounding_size=0.3' if node.is_variable \
                else 'square,pad=0.02'
            patch = FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                   boxstyle=style, facecolor=color,
                                   edgecolor='#555555', linewidth=0.8)
            patch.set_gid(node.name)
            ax.add_patch(patch)
            ax.text(x, y, label, ha='center', va='center', fontsize=8)
    for src, dst, text in edges:
        (x0, y0), (x1, y1) = pos[id(src)], pos[id(dst)]
        ax.annotate('', xy=(x1, y1 - height / 2 - 0.02), xytext=(x0, y0 + height / 2),
                    arrowprops=dict(arrowstyle='->', color='#555555', lw=0.8))
        if text:
            ax.text((x0 + x1) / 2 + 0.05, (y0 + y1) / 2, text, fontsize=7,
                    ha='left', va='center', color='#333333')
    ax.set_xlim(0, fig_w)
    ax.set_ylim(0, fig_h)
    ax.set_aspect('equal')
    ax.axis('off')
    ax.set_title(title)
    fig.tight_layout()
    return fig
