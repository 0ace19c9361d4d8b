"""Symbols: names, structure, composition, shape and type inference,
serialization, and the errors for bad graphs and bad input."""
import copy
import json
import pickle

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import nd
from d2lmini.base import MXNetError


def mlp(num_classes=3):
    data = mx.sym.var('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name='fc1')
    act = mx.sym.Activation(fc1, act_type='relu', name='relu1')
    fc2 = mx.sym.FullyConnected(act, num_hidden=num_classes, name='fc2')
    return mx.sym.SoftmaxOutput(fc2, name='softmax')


def lenet():
    data = mx.sym.var('data')
    c = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name='conv1')
    b = mx.sym.BatchNorm(c, name='bn1')
    p = mx.sym.Pooling(mx.sym.relu(b), kernel=(2, 2), stride=(2, 2), pool_type='max')
    f = mx.sym.FullyConnected(mx.sym.Flatten(p), num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(f, name='softmax')


def _run(sym, **inputs):
    """Outputs of ``sym`` bound to ``inputs`` (and fixed parameters)."""
    ex = sym.simple_bind(mx.current_context(), grad_req='null',
                         **{k: v.shape for k, v in inputs.items()})
    rng = np.random.RandomState(1)
    for name, arr in ex.arg_dict.items():
        arr[:] = nd.array(inputs[name] if name in inputs
                          else rng.uniform(-1, 1, arr.shape))
    for arr in ex.aux_arrays:
        arr[:] = nd.array(rng.uniform(0.5, 1, arr.shape))
    return [o.asnumpy() for o in ex.forward()]


# --- names and structure ------------------------------------------------------
def test_lists_of_arguments_outputs_and_auxiliary_states():
    net = lenet()
    assert net.list_arguments() == [
        'data', 'conv1_weight', 'conv1_bias', 'bn1_gamma', 'bn1_beta',
        'fc_weight', 'fc_bias', 'softmax_label']
    assert net.list_auxiliary_states() == ['bn1_moving_mean', 'bn1_moving_var']
    assert net.list_outputs() == ['softmax_output']
    assert net.list_inputs() == net.list_arguments()[:5] + \
        net.list_auxiliary_states() + net.list_arguments()[5:]
    assert net.name == 'softmax'


def test_automatic_names_count_per_operator_and_follow_prefix():
    data = mx.sym.var('data')
    with mx.name.NameManager():
        a = mx.sym.FullyConnected(data, num_hidden=3)
        b = mx.sym.FullyConnected(a, num_hidden=3)
        c = mx.sym.Activation(b, act_type='relu')
        d = c + 1
        e = d * c
        assert (a.name, b.name, c.name, d.name, e.name) == (
            'fullyconnected0', 'fullyconnected1', 'activation0', '_plusscalar0',
            '_mul0')
        assert b.list_arguments() == ['data', 'fullyconnected0_weight',
                                      'fullyconnected0_bias', 'fullyconnected1_weight',
                                      'fullyconnected1_bias']
    with mx.name.Prefix('net_'):
        f = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
        g = mx.sym.FullyConnected(data, num_hidden=3)
    assert f.list_arguments() == ['data', 'net_fc_weight', 'net_fc_bias']
    assert f.name == 'net_fc'
    assert g.name == 'net_fullyconnected0'


def test_layers_without_bias_and_loss_heads_with_their_label():
    s = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, no_bias=True, name='f')
    assert s.list_arguments() == ['x', 'f_weight']
    s = mx.sym.LinearRegressionOutput(mx.sym.var('x'), name='lro')
    assert s.list_arguments() == ['x', 'lro_label']
    label = mx.sym.var('y')
    s = mx.sym.SoftmaxOutput(mx.sym.var('x'), label, name='sm')
    assert s.list_arguments() == ['x', 'y']


def test_get_internals_gives_a_feature_extractor():
    net = mlp()
    internals = net.get_internals()
    assert internals.list_outputs() == [
        'data', 'fc1_weight', 'fc1_bias', 'fc1_output', 'relu1_output', 'fc2_weight',
        'fc2_bias', 'fc2_output', 'softmax_label', 'softmax_output']
    feat = internals['relu1_output']
    assert feat.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']
    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    ex = net.simple_bind(mx.current_context(), data=x.shape, grad_req='null')
    for n, a in ex.arg_dict.items():
        a[:] = nd.array(np.random.RandomState(2).randn(*a.shape))
    ex.forward(data=nd.array(x))
    fex = feat.bind(mx.current_context(), {n: ex.arg_dict[n] for n in feat.list_arguments()})
    w, b = ex.arg_dict['fc1_weight'].asnumpy(), ex.arg_dict['fc1_bias'].asnumpy()
    np.testing.assert_allclose(fex.forward()[0].asnumpy(),
                               np.maximum(ex.arg_dict['data'].asnumpy() @ w.T + b, 0),
                               rtol=1e-5, atol=1e-6)


def test_get_children_and_group():
    data = mx.sym.var('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=4, name='fc1')
    fc2 = mx.sym.FullyConnected(fc1, num_hidden=2, name='fc2')
    kids = fc2.get_children()
    assert kids.list_outputs() == ['fc1_output', 'fc2_weight', 'fc2_bias']
    assert kids.get_children().list_outputs() == ['data', 'fc1_weight', 'fc1_bias']
    assert data.get_children() is None
    parts = mx.sym.split(data, num_outputs=3, name='sp')
    assert parts.list_outputs() == ['sp_output0', 'sp_output1', 'sp_output2']
    assert parts.get_children().list_outputs() == ['data']
    g = mx.sym.Group([fc1, fc2])
    assert len(g) == 2 and g.list_outputs() == ['fc1_output', 'fc2_output']
    assert g.list_arguments() == fc2.list_arguments()
    assert g[1].name == 'fc2' and g['fc1_output'].name == 'fc1'
    assert [s.name for s in g] == ['fc1', 'fc2']
    with pytest.raises(TypeError, match='Symbols'):
        mx.sym.Group([fc1, 3])


def test_compose_replaces_variables_by_symbols():
    data = mx.sym.var('data')
    net1 = mx.sym.FullyConnected(data, num_hidden=6, name='fc1')
    net2 = mx.sym.FullyConnected(name='fc2', num_hidden=3)
    assert net2.list_arguments() == ['fc2_data', 'fc2_weight', 'fc2_bias']
    net2 = mx.sym.relu(net2)
    composed = net2(fc2_data=net1, name='composed')
    assert composed.list_arguments() == ['data', 'fc1_weight', 'fc1_bias',
                                         'fc2_weight', 'fc2_bias']
    assert composed.name == 'composed'
    assert net2.list_arguments()[0] == 'fc2_data'       # the original is unchanged
    assert composed.infer_shape(data=(2, 5))[1] == [(2, 3)]
    x = mx.sym.var('x')
    square = x * x
    assert square(x=mx.sym.var('y') + 1).list_arguments() == ['y']
    assert square(mx.sym.var('z')).list_arguments() == ['z']      # by position


def test_attributes_and_variable_options():
    x = mx.sym.var('x', shape=(2, 3), dtype='float16', lr_mult=2.0, wd_mult=0.5,
                   init=mx.init.Uniform(0.1), attr={'mood': 'calm'})
    assert x.attr('__shape__') == '(2, 3)'
    assert x.attr('__dtype__') == 'float16'
    assert x.attr('__lr_mult__') == '2.0' and x.attr('__wd_mult__') == '0.5'
    assert json.loads(x.attr('__init__')) == ['uniform', {'scale': 0.1}]
    assert x.attr('mood') == 'calm' and x.attr('nothing') is None
    assert x.infer_shape() == ([(2, 3)], [(2, 3)], [])
    assert x.infer_type()[0] == [np.float16]
    fc = mx.sym.FullyConnected(x, num_hidden=7, name='fc', attr={'ctx_group': 'dev1'})
    assert fc.attr('num_hidden') == '7' and fc.attr('ctx_group') == 'dev1'
    assert fc.attr_dict()['fc']['num_hidden'] == '7'


# --- shape and type inference ------------------------------------------------------
def test_infer_shape_forward_and_backwards_into_weights():
    arg, out, aux = lenet().infer_shape(data=(2, 3, 8, 8))
    assert dict(zip(lenet().list_arguments(), arg)) == {
        'data': (2, 3, 8, 8), 'conv1_weight': (4, 3, 3, 3), 'conv1_bias': (4,),
        'bn1_gamma': (4,), 'bn1_beta': (4,), 'fc_weight': (5, 36), 'fc_bias': (5,),
        'softmax_label': (2,)}
    assert out == [(2, 5)] and aux == [(4,), (4,)]
    # positional shapes follow list_arguments
    assert mlp().infer_shape((4, 5))[1] == [(4, 3)]


def test_infer_shape_partial():
    data, prev = mx.sym.var('data'), mx.sym.var('prev')
    x2h = mx.sym.FullyConnected(data, num_hidden=6, name='x2h')
    h2h = mx.sym.FullyConnected(prev, num_hidden=6, name='h2h')
    out = mx.sym.relu(x2h + h2h)
    assert out.infer_shape(data=(4, 5)) == (None, None, None)
    arg, outs, _ = out.infer_shape_partial(data=(4, 5))
    shapes = dict(zip(out.list_arguments(), arg))
    assert shapes['x2h_weight'] == (6, 5) and shapes['h2h_weight'] == ()
    assert shapes['prev'] == ()
    assert outs == [(4, 6)]              # the sum has x2h's shape already
    arg, _, _ = out.infer_shape(data=(4, 5), prev=(4, 3))
    assert dict(zip(out.list_arguments(), arg))['h2h_weight'] == (6, 3)
    # 0 is an unknown dimension
    conv = mx.sym.Convolution(mx.sym.var('d', shape=(1, 0, 0, 0)), kernel=(3, 3),
                              num_filter=8, no_bias=True, name='c')
    assert conv.infer_shape_partial()[0] == [(1, 0, 0, 0), (8, 0, 3, 3)]
    assert conv.infer_shape() == (None, None, None)


def test_infer_shape_of_loss_labels():
    x = mx.sym.var('x')
    assert mx.sym.SoftmaxOutput(x, name='s').infer_shape(x=(4, 3))[0][1] == (4,)
    assert mx.sym.SoftmaxOutput(x, name='s', multi_output=True).infer_shape(
        x=(4, 3, 5))[0][1] == (4, 5)
    assert mx.sym.SoftmaxOutput(x, name='s', preserve_shape=True).infer_shape(
        x=(4, 2, 3))[0][1] == (4, 2)
    assert mx.sym.LinearRegressionOutput(x, name='r').infer_shape(
        x=(4, 2))[0][1] == (4, 2)


def test_infer_shape_needs_several_passes():
    # the weight's shape comes from the FullyConnected, later in graph order
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=2, no_bias=True, name='fc')
    net = mx.sym.sum(mx.sym.abs(fc.get_internals()['fc_weight'])) + mx.sym.sum(fc)
    arg, out, _ = net.infer_shape(data=(5, 13))
    assert arg == [(2, 13), (5, 13)] and out == [(1,)]
    assert net.simple_bind(mx.current_context(), data=(5, 13)).outputs[0].shape == (1,)


def test_infer_type():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(mx.sym.Cast(data, dtype='float32'), num_hidden=4,
                               name='fc')
    arg, out, aux = fc.infer_type(data='float16')
    assert arg == [np.float16, np.float32, np.float32] and out == [np.float32]
    assert fc.infer_type_partial()[0] == [None, np.float32, np.float32]
    arg, out, _ = mlp().infer_type(data='float64')
    assert set(arg) == {np.float64} and out == [np.float64]
    ex = mlp().simple_bind(mx.current_context(), data=(2, 5), type_dict={'data': 'float64'})
    assert ex.arg_dict['fc1_weight'].dtype == np.float64
    assert ex.forward()[0].dtype == np.float64


# --- serialization ---------------------------------------------------------------
@pytest.mark.parametrize('build', [mlp, lenet])
def test_tojson_round_trip_gives_the_same_graph_and_outputs(build):
    net = build()
    text = net.tojson()
    graph = json.loads(text)
    assert {'nodes', 'arg_nodes', 'heads'} <= set(graph)
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    assert again.list_arguments() == net.list_arguments()
    assert again.list_auxiliary_states() == net.list_auxiliary_states()
    shape = (2, 5) if build is mlp else (2, 3, 8, 8)
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    for a, b in zip(_run(net, data=x), _run(again, data=x)):
        np.testing.assert_array_equal(a, b)


def test_save_load_pickle_and_deepcopy(tmp_path):
    net = lenet()
    fname = str(tmp_path / 'net-symbol.json')
    net.save(fname)
    assert mx.sym.load(fname).tojson() == net.tojson()
    assert pickle.loads(pickle.dumps(net)).tojson() == net.tojson()
    dup = copy.deepcopy(net)
    assert dup.tojson() == net.tojson()
    assert dup._outputs[0][0] is not net._outputs[0][0]
    assert copy.copy(net).tojson() == net.tojson()


def test_multi_output_and_attributes_survive_json():
    x = mx.sym.var('x', shape=(2, 6), lr_mult=3)
    parts = mx.sym.split(x, num_outputs=3, axis=1, name='sp')
    net = mx.sym.Group([parts[2] * 2, mx.sym.relu(parts[0])])
    again = mx.sym.load_json(net.tojson())
    assert again.list_outputs() == net.list_outputs()
    assert again.get_internals()['x'].attr('__lr_mult__') == '3'
    v = np.arange(12, dtype=np.float32).reshape(2, 6) - 6
    got = again.eval(x=nd.array(v))
    np.testing.assert_array_equal(got[0].asnumpy(), v[:, 4:] * 2)
    np.testing.assert_array_equal(got[1].asnumpy(), np.maximum(v[:, :2], 0))


def test_symbols_have_no_value():
    x = mx.sym.var('x')
    with pytest.raises(Exception, match='truth value|not implemented'):
        bool(x)
    with pytest.raises(AttributeError, match='infer_shape'):
        x.shape
    with pytest.raises(AttributeError, match='no attribute'):
        x.not_an_operator


# --- bad input --------------------------------------------------------------------
def test_unknown_argument_names_are_named():
    net = mlp()
    with pytest.raises(ValueError, match=r"\['dat'\].*'data'"):
        net.infer_shape(dat=(2, 5))
    with pytest.raises(ValueError, match=r"\['dat'\]"):
        net.infer_type(dat='float32')
    with pytest.raises(ValueError, match=r"\['dat'\]"):
        net.simple_bind(mx.current_context(), dat=(2, 5))
    ex = net.simple_bind(mx.current_context(), data=(2, 5))
    with pytest.raises(ValueError, match="'dat'.*fc1_weight"):
        ex.forward(dat=nd.ones((2, 5)))
    with pytest.raises(ValueError, match="'data' has shape"):
        ex.forward(data=nd.ones((3, 5)))
    with pytest.raises(ValueError, match=r"unknown argument\(s\) \['nope'\]"):
        net(nope=mx.sym.var('z'))
    with pytest.raises(ValueError, match="grad_req for 'data'"):
        net.simple_bind(mx.current_context(), grad_req='sometimes', data=(2, 5))
    with pytest.raises(ValueError, match=r"grad_req: unknown argument\(s\) \['w'\]"):
        net.simple_bind(mx.current_context(), grad_req={'w': 'write'}, data=(2, 5))


def test_missing_and_wrong_shapes_at_bind_name_node_and_argument():
    net = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    with pytest.raises(MXNetError, match=r"\['data', 'fc_weight', 'fc_bias'\]"):
        net.simple_bind(mx.current_context())
    ok = {'data': nd.ones((2, 4)), 'fc_weight': nd.ones((3, 4)), 'fc_bias': nd.ones(3)}
    with pytest.raises(ValueError, match=r"no array for \['fc_bias'\]"):
        net.bind(mx.current_context(), {k: v for k, v in ok.items() if k != 'fc_bias'})
    with pytest.raises(ValueError, match=r"unknown name\(s\) \['zzz'\]"):
        net.bind(mx.current_context(), dict(ok, zzz=nd.ones(1)))
    with pytest.raises(ValueError, match='1 arrays given for 3 names'):
        net.bind(mx.current_context(), [nd.ones((2, 4))])
    with pytest.raises(MXNetError, match=r"node 'fc'.*weight=\(3, 5\)"):
        net.bind(mx.current_context(), dict(ok, fc_weight=nd.ones((3, 5))))
    conv = mx.sym.Convolution(mx.sym.var('d'), kernel=(3, 3), num_filter=2, name='c')
    with pytest.raises(MXNetError, match=r"node 'c'.*data=\(1, 2, 2, 2\)"):
        conv.simple_bind(mx.current_context(), d=(1, 2, 2, 2))
    add = mx.sym.elemwise_add(mx.sym.var('a'), mx.sym.var('b'), name='add')
    with pytest.raises(MXNetError, match=r"node 'add'.*\(2, 3\).*\(3, 2\)"):
        add.infer_shape(a=(2, 3), b=(3, 2))


def test_a_cycle_made_by_composition_is_refused_and_nothing_changes():
    a = mx.sym.var('a')
    c = a * 2 + 1
    before = c.tojson()
    with pytest.raises(MXNetError, match='cycle'):
        c._compose(a=c)
    assert c.tojson() == before
    assert c.eval(a=nd.ones(2))[0].asnumpy().tolist() == [3, 3]
    # composing with a copy is fine: it is a new graph
    assert c(a=c).eval(a=nd.ones(2))[0].asnumpy().tolist() == [7, 7]


def test_duplicate_variable_names_are_refused_where_they_matter():
    s = mx.sym.var('a') + mx.sym.var('a')
    assert s.list_arguments() == ['a', 'a']
    with pytest.raises(MXNetError, match=r"several different variables named \['a'\]"):
        s.infer_shape(a=(2,))
    with pytest.raises(MXNetError, match=r"named \['a'\]"):
        s.simple_bind(mx.current_context(), a=(2,))
    a = mx.sym.var('a')
    assert (a + a).eval(a=nd.ones(2))[0].asnumpy().tolist() == [2, 2]   # one variable


def _graph(nodes, heads):
    return json.dumps({'nodes': nodes, 'arg_nodes': [0], 'heads': heads})


X = {'op': 'null', 'name': 'x', 'inputs': []}


@pytest.mark.parametrize('text, message', [
    ('not json', 'not a JSON document'),
    ('{"nodes": []}', "needs 'nodes' and 'heads'"),
    ('[1, 2]', "needs 'nodes' and 'heads'"),
    (_graph([X, {'op': 'NoSuchOp', 'name': 'y', 'inputs': [[0, 0, 0]]}], [[1, 0, 0]]),
     "node 'y' uses operator 'NoSuchOp'"),
    (_graph([X, {'op': 'relu', 'name': 'y', 'inputs': [[5, 0, 0]]}], [[1, 0, 0]]),
     r"input 0 of node 'y' refers to \[5, 0, 0\]"),
    (_graph([{'op': 'null', 'inputs': []}], [[0, 0, 0]]), "missing 'name'"),
    (_graph([X], [[3, 0, 0]]), r"head 0 refers to \[3, 0, 0\]"),
    (_graph([X], []), 'non-empty'),
    (_graph([X, {'op': 'split', 'name': 'y', 'attrs': {'num_outputs': '2'},
                 'inputs': [[0, 0, 0]]}], [[1, 5, 0]]),
     "head 0 reads output 5 of node 'y', which has 2"),
])
def test_corrupt_json_errors_name_what_is_wrong(text, message):
    with pytest.raises(MXNetError, match=message):
        mx.sym.load_json(text)


def _split(name, n, src=0):
    return {'op': 'split', 'name': name, 'attrs': {'num_outputs': str(n)},
            'inputs': [[src, 0, 0]]}


def _relu_with(attr):
    return _graph([X, {'op': 'FullyConnected', 'name': 'fc',
                       'attrs': {'num_hidden': attr}, 'inputs': [[0, 0, 0]]}],
                  [[1, 0, 0]])


@pytest.mark.parametrize('text, message', [
    # Python's parser ran out of stack on these: a bare MemoryError, or a
    # RecursionError, with no word about the file (issue 25)
    (_relu_with('-' * 100000 + '1'), "attribute 'num_hidden' of node 'fc'.*nested"),
    (_relu_with('1+' * 100000 + '1'), "attribute 'num_hidden' of node 'fc'.*nested"),
    ('{"nodes": ' + '[' * 100000 + ']' * 100000 + ', "heads": []}', 'nested too deeply'),
    # a split into 10**10 outputs in a few bytes; list_outputs, get_internals
    # and infer_shape then allocated per output
    (_graph([X, _split('s', 10 ** 10)], [[1, 0, 0]]),
     r"more than 1,048,576 outputs \(node 's' \(split\) has 10,000,000,000\)"),
    (_graph([X] + [_split(f's{i}', 600000) for i in range(2)], [[1, 0, 0]]),
     "more than 1,048,576 outputs"),
    (_graph([X, _split('s', 'abc')], [[1, 0, 0]]), "node 's' .*no valid number"),
    (_graph([X, _split('s', 0)], [[1, 0, 0]]), "node 's' .*no valid number"),
    # negative indices used to wrap around to the last node
    (_graph([X, {'op': 'relu', 'name': 'y', 'inputs': [[-1, 0, 0]]}], [[1, 0, 0]]),
     r"input 0 of node 'y' refers to \[-1, 0, 0\]"),
    (_graph([X], [[-1, 0, 0]]), r"head 0 refers to \[-1, 0, 0\]"),
    (_graph([X], [[0.5, 0, 0]]), r"head 0 refers to \[0.5, 0, 0\]"),
    (_graph([X, {'op': 'relu', 'name': 'y', 'attrs': 5, 'inputs': [[0, 0, 0]]}],
            [[1, 0, 0]]), "attributes of node 'y'"),
    (_graph([X, {'op': ['relu'], 'name': 'y', 'inputs': [[0, 0, 0]]}], [[1, 0, 0]]),
     "node 1 is malformed \\('op' is not a string"),
    ('{"nodes": {"a": 1}, "heads": []}', "'nodes' is a list"),
], ids=['deep-unary-attr', 'deep-sum-attr', 'deep-json', 'split-1e10',
        'splits-over-the-total', 'num_outputs-abc', 'num_outputs-0',
        'negative-input', 'negative-head', 'float-head', 'attrs-not-object',
        'op-not-string', 'nodes-not-list'])
def test_crafted_json_is_refused_clearly(text, message):
    with pytest.raises(MXNetError, match=message):
        mx.sym.load_json(text)


def test_a_large_but_sane_split_still_loads():
    text = _graph([X, _split('s', 1000)], [[1, 999, 0]])
    s = mx.sym.load_json(text)
    assert s.list_outputs() == ['s_output999']


def test_corrupt_file_error_names_the_file(tmp_path):
    bad = tmp_path / 'bad-symbol.json'
    bad.write_text('{"nodes": [')
    with pytest.raises(MXNetError, match='bad-symbol.json.*not a JSON'):
        mx.sym.load(str(bad))


def test_missing_layer_attributes_and_mixing_with_arrays_are_refused_early():
    x = mx.sym.var('x')
    with pytest.raises(TypeError, match=r"FullyConnected.*\['num_hidden'\]"):
        mx.sym.FullyConnected(x, name='fc')
    with pytest.raises(TypeError, match=r"Convolution.*\['kernel'\]"):
        mx.sym.Convolution(x, num_filter=2)
    with pytest.raises(TypeError, match='cannot be combined with a NDArray'):
        x + nd.ones(2)
    with pytest.raises(TypeError, match='cannot be combined with a str'):
        x * 'two'
    with pytest.raises(TypeError, match='must be a tuple of ints'):
        x.infer_shape(x=3)
