"""mx.viz: print_summary's table against the real shapes and parameter
counts, plot_network's drawing (matplotlib, and Graphviz through a stand-in)."""
import math
import re
import sys
import types
import warnings

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt          # noqa: E402
import numpy as np                        # noqa: E402
import pytest                             # noqa: E402

import d2lmini as mx                      # noqa: E402
from d2lmini import nd                    # noqa: E402
from d2lmini import visualization as viz  # noqa: E402
from d2lmini.gluon import nn              # noqa: E402

SHAPE = {'data': (2, 1, 28, 28)}


def lenet_sym():
    """The symbolic LeNet of chapter 14, with a BatchNorm and a branch."""
    data = mx.sym.var('data')
    c1 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=20, name='conv1')
    a1 = mx.sym.Activation(c1, act_type='relu', name='relu1')
    p1 = mx.sym.Pooling(a1, kernel=(2, 2), stride=(2, 2), pool_type='avg',
                        name='pool1')
    bn = mx.sym.BatchNorm(p1, name='bn1')
    c2 = mx.sym.Convolution(bn, kernel=(5, 5), num_filter=50, name='conv2')
    f = mx.sym.Flatten(c2, name='flat')
    fc1 = mx.sym.FullyConnected(f, num_hidden=128, name='fc1')
    fc2 = mx.sym.FullyConnected(mx.sym.relu(fc1, name='relu2'), num_hidden=10,
                                name='fc2')
    return mx.sym.SoftmaxOutput(fc2, name='softmax')


def summary_rows(capsys, sym, shape):
    viz.print_summary(sym, shape=shape)
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        m = re.match(r'^(\S+)\((\S+)\)\s+(\S*)\s+(\d+)', line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3), int(m.group(4)))
    total = int(re.search(r'Total params: (\d+)', out).group(1))
    return rows, total, out


def test_summary_shapes_and_counts_are_the_real_ones(capsys):
    sym = lenet_sym()
    rows, total, _ = summary_rows(capsys, sym, SHAPE)
    internals = sym.get_internals()
    _, out_shapes, _ = internals.infer_shape(**SHAPE)
    real = dict(zip(internals.list_outputs(), out_shapes))
    arg_shapes, _, _ = sym.infer_shape(**SHAPE)
    args = dict(zip(sym.list_arguments(), arg_shapes))
    layers = [n for n in sym.get_internals().list_outputs() if n.endswith('_output')]
    assert sorted(rows) == sorted(['data'] + [n[:-len('_output')] for n in layers])
    for name, (op, shape, count) in rows.items():
        key = name if op == 'null' else name + '_output'
        assert shape == 'x'.join(str(d) for d in real[key][1:]), name
        owned = [a for a in args if a.startswith(name + '_')
                 and not a.endswith('_label')]
        assert count == sum(math.prod(args[a]) for a in owned), name
    assert rows['conv1'] == ('Convolution', '20x26x26', 20 * 9 + 20)
    assert rows['bn1'][2] == 2 * 20             # gamma, beta; not the moving stats
    assert rows['fc1'] == ('FullyConnected', '128', 50 * 9 * 9 * 128 + 128)
    # every trainable argument but data and label, once
    assert total == sum(math.prod(s) for n, s in args.items()
                        if n not in ('data', 'softmax_label'))


def test_summary_of_a_hybridized_gluon_net_matches_its_parameters(capsys):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(6, 5, activation='relu'), nn.MaxPool2D(2, 2),
            nn.BatchNorm(), nn.Dense(32, activation='relu'), nn.Dense(10))
    net.initialize()
    net(nd.zeros((1, 1, 28, 28)))
    sym = net(mx.sym.var('data'))
    rows, total, out = summary_rows(capsys, sym, {'data': (1, 1, 28, 28)})
    trainable = sum(p.data().size for p in net.collect_params().values()
                    if p.grad_req != 'null')
    assert total == trainable
    assert 'running_mean' not in out           # auxiliary states are not layers
    assert rows['data'][1] == '1x28x28'
    assert sum(1 for r in rows.values() if r[0] == 'FullyConnected') == 2


def test_summary_lists_every_input_of_a_merge(capsys):
    a, b = mx.sym.var('a'), mx.sym.var('b')
    s = mx.sym.elemwise_add(mx.sym.FullyConnected(a, num_hidden=4, name='fa'),
                            mx.sym.FullyConnected(b, num_hidden=4, name='fb'),
                            name='sum')
    viz.print_summary(s, shape={'a': (3, 5), 'b': (3, 7)})
    lines = capsys.readouterr().out.splitlines()
    k = next(i for i, l in enumerate(lines) if l.startswith('sum(elemwise_add)'))
    assert lines[k].split()[-1] == 'fa' and lines[k + 1].strip() == 'fb'
    assert 'Total params: 56' in '\n'.join(lines)      # 4*5+4 + 4*7+4


def test_summary_without_shapes_and_a_multi_output_head(capsys):
    # after MXNet's test_viz (which starts with an Embedding, absent here)
    data = mx.sym.Variable('data')
    conv = mx.sym.Convolution(data, name='conv1', num_filter=32, kernel=(3, 3),
                              stride=(2, 2))
    fc = mx.sym.FullyConnected(conv, name='fc1', num_hidden=10)
    sc = mx.sym.SliceChannel(fc, num_outputs=10, name='slice_1', squeeze_axis=0)
    viz.print_summary(sc)
    out = capsys.readouterr().out
    assert 'slice_1(SliceChannel)' in out and 'Total params: 0' in out
    rows, total, _ = summary_rows(capsys, sc, {'data': (1, 3, 28, 28)})
    assert rows['conv1'] == ('Convolution', '32x13x13', 3 * 9 * 32 + 32)
    assert rows['slice_1'][1] == '1'             # shape of the last output
    assert total == 896 + 10 * 32 * 13 * 13 + 10


def test_bad_input_is_explained():
    with pytest.raises(TypeError, match='Symbol'):
        viz.print_summary(nn.Dense(3))
    with pytest.raises(TypeError, match='Symbol'):
        viz.plot_network('data')
    two = mx.sym.broadcast_add(mx.sym.var('x'), mx.sym.var('y'))
    with pytest.raises(ValueError, match=r"incomplete.*\['y'"):
        viz.print_summary(mx.sym.FullyConnected(two, num_hidden=3),
                          shape={'x': (2, 3)})
    with pytest.raises(ValueError, match='incomplete'):
        viz.plot_network(two, shape={'x': (2, 3)})


def test_plot_draws_one_box_per_non_weight_node():
    sym = lenet_sym()
    open_before = plt.get_fignums()
    fig = viz.plot_network(sym, shape=SHAPE, title='lenet')
    # not left open in pyplot (nor shown twice); a notebook shows it as SVG
    assert plt.get_fignums() == open_before
    assert fig._repr_svg_().lstrip().startswith('<?xml')
    try:
        boxes = [p.get_gid() for p in fig.axes[0].patches if p.get_gid()]
        ops = [n.name for n in sym._nodes() if not n.is_variable]
        assert sorted(boxes) == sorted(ops + ['data', 'softmax_label'])
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert 'Convolution\n3x3/1, 20' in texts
        assert 'Pooling\navg, 2x2/2x2' in texts
        assert '20x26x26' in texts and '128' in texts        # shapes on arrows
        assert fig.axes[0].get_title() == 'lenet'
        # data below the first convolution, the loss on top
        y = {p.get_gid(): p.get_y() for p in fig.axes[0].patches if p.get_gid()}
        assert y['data'] < y['conv1'] < y['fc1'] < y['softmax']
        assert y['softmax_label'] < y['softmax']
    finally:
        plt.close(fig)
    fig = viz.plot_network(sym, hide_weights=False)
    try:
        boxes = [p.get_gid() for p in fig.axes[0].patches if p.get_gid()]
        assert sorted(boxes) == sorted(n.name for n in sym._nodes())
    finally:
        plt.close(fig)


def test_plot_warns_on_repeated_names():
    net = mx.sym.FullyConnected(mx.sym.var('data'), name='fc', num_hidden=8)
    net = mx.sym.FullyConnected(mx.sym.relu(net), name='fc', num_hidden=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        fig = viz.plot_network(net)
    plt.close(fig)
    msgs = [str(x.message) for x in w if x.category is RuntimeWarning]
    assert len(msgs) == 1 and 'same name' in msgs[0] and 'fc' in msgs[0]


def test_graphviz_is_used_when_package_and_dot_exist(monkeypatch):
    calls = {'nodes': [], 'edges': []}

    class Digraph:
        def __init__(self, name, format):
            calls['name'], calls['format'] = name, format

        def node(self, name, label, **attrs):
            calls['nodes'].append((name, label, attrs))

        def edge(self, tail_name, head_name, **attrs):
            calls['edges'].append((tail_name, head_name, attrs['label']))
    monkeypatch.setitem(sys.modules, 'graphviz',
                        types.SimpleNamespace(Digraph=Digraph))
    monkeypatch.setattr(viz.shutil, 'which', lambda prog: '/usr/bin/' + prog)
    net = mx.sym.FullyConnected(mx.sym.var('data'), name='fc1', num_hidden=8)
    net = mx.sym.SoftmaxOutput(mx.sym.relu(net, name='r'), name='out')
    dot = viz.plot_network(net, title='mlp', shape={'data': (4, 3)},
                           node_attrs={'fixedsize': 'false'})
    assert isinstance(dot, Digraph) and calls['name'] == 'mlp'
    names = [n for n, _, _ in calls['nodes']]
    assert names == ['data', 'fc1', 'r', 'out_label', 'out']
    fc = next(a for n, _, a in calls['nodes'] if n == 'fc1')
    assert fc['fixedsize'] == 'false' and fc['shape'] == 'box'
    assert ('fc1', 'data', '3') in calls['edges']
    assert ('r', 'fc1', '8') in calls['edges']
    # without the dot program, matplotlib draws
    monkeypatch.setattr(viz.shutil, 'which', lambda prog: None)
    fig = viz.plot_network(net)
    assert isinstance(fig, matplotlib.figure.Figure)
    plt.close(fig)
