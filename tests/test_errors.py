"""Bad input fails at once with a clear Python exception, never a hang or a
wrong result.  Messages name the operator, the shapes and the contexts.

Shape errors are found by the front end's shape inference, so they raise at
the offending line in both engine modes (``engine_kind``).
"""
import numpy as np
import pytest

import d2lmini as mx
from d2lmini import autograd, nd


@pytest.mark.parametrize('bad,kind,words', [
    (lambda: nd.ones((2, 3)) + nd.ones((4, 5)), ValueError,
     ['add', '(2, 3)', '(4, 5)']),
    (lambda: nd.ones((2, 3)) * nd.ones((3, 2)), ValueError,
     ['multiply', '(2, 3)', '(3, 2)']),
    (lambda: nd.maximum(nd.ones((2,)), nd.ones((3,))), ValueError,
     ['maximum', '(2,)', '(3,)']),
    (lambda: nd.ones((2, 3)) > nd.ones((4,)), ValueError, ['greater', '(2, 3)', '(4,)']),
    (lambda: nd.dot(nd.ones((2, 3)), nd.ones((4, 5))), ValueError,
     ['dot', '(2, 3)', '(4, 5)']),
    (lambda: nd.dot(nd.ones((2, 3)), nd.ones((2, 3)), transpose_b=False), ValueError,
     ['dot', '(2, 3)']),
    (lambda: nd.batch_dot(nd.ones((2, 3, 4)), nd.ones((2, 5, 6))), ValueError,
     ['batch_dot', '(2, 3, 4)', '(2, 5, 6)']),
    (lambda: nd.ones((2, 3)).reshape((4,)), ValueError, ['reshape', '(2, 3)', '(4,)']),
    (lambda: nd.ones((2, 3)).reshape((4, -1)), ValueError, ['reshape', '(2, 3)']),
    (lambda: nd.ones((2, 3)).reshape((-1, -1)), ValueError, ['reshape', '-1']),
    (lambda: nd.concat(nd.ones((2, 3)), nd.ones((3, 4)), dim=1), ValueError,
     ['concat', '(2, 3)', '(3, 4)']),
    (lambda: nd.concat(nd.ones((2, 3)), nd.ones((2, 3)), dim=2), ValueError,
     ['concat', 'dim 2']),
    (lambda: nd.stack(nd.ones((2, 3)), nd.ones((3, 2))), ValueError,
     ['stack', '(2, 3)', '(3, 2)']),
    (lambda: nd.split(nd.ones((2, 3)), 2, axis=1), ValueError, ['split', '(2, 3)']),
    (lambda: nd.sum(nd.ones((2, 3)), axis=2), ValueError, ['sum', 'axis 2']),
    (lambda: nd.ones((2, 3)).transpose((0, 0)), ValueError, ['transpose', '(2, 3)']),
    (lambda: nd.expand_dims(nd.ones((2, 3)), 4), ValueError, ['expand_dims', '(2, 3)']),
    (lambda: nd.broadcast_to(nd.ones((2, 3)), (4, 3)), ValueError,
     ['broadcast_to', '(2, 3)', '(4, 3)']),
    (lambda: nd.pick(nd.ones((2, 3)), nd.ones((3,))), ValueError, ['pick', '(2, 3)']),
    (lambda: nd.where(nd.ones((2,)), nd.ones((2, 3)), nd.ones((2, 4))), ValueError,
     ['where', '(2, 3)', '(2, 4)']),
])
def test_shape_errors(engine_kind, bad, kind, words):
    with pytest.raises(kind) as e:
        bad()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert isinstance(e.value, mx.base.MXNetError)    # both, as in MXNet 1.6+
    mx.nd.waitall()             # nothing was left failing inside the engine


X = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize('bad,words', [
    (lambda x: nd.take(x, nd.array([0]), axis=5), ['take', 'axis 5', '(2, 3)']),
    (lambda x: nd.pick(x, nd.array([0, 1]), axis=3), ['pick', 'axis 3', '(2, 3)']),
    (lambda x: nd.swapaxes(x, 0, 5), ['swapaxes', 'axis 5']),
    (lambda x: nd.repeat(x, 2, axis=5), ['repeat', 'axis 5']),
    (lambda x: nd.tile(x, (-1,)), ['tile', 'negative']),
    (lambda x: nd.slice_axis(x, 5, 0, 1), ['slice_axis', 'axis 5']),
    (lambda x: nd.flip(x, 5), ['flip', 'axis 5']),
    (lambda x: nd.one_hot(nd.array([1]), -1), ['one_hot', 'depth']),
    (lambda x: nd.split(x, 0), ['split', 'num_outputs']),
    (lambda x: nd.split(x, 2, axis=3), ['split', 'axis 3']),
    (lambda x: x.reshape((0, 0, 0)), ['reshape', '(0, 0, 0)', '(2, 3)']),
    (lambda x: x.reshape((0, -3)), ['reshape', '(2, 3)']),
    (lambda x: x.reshape((-4, -1, -1, 0)), ['reshape', '-1']),
    (lambda x: nd.mean(x, axis=(0, 0)), ['mean', 'repeated axis']),
    (lambda x: nd.argmax(x, axis=(0, 1)), ['argmax', 'axis']),
    (lambda x: nd.concat(), ['concat']),
    (lambda x: nd.stack(), ['stack']),
    (lambda x: nd.arange(0, 5, 0), ['arange', 'step']),
    (lambda x: nd.zeros((2.5, 3)), ['shape', '2.5']),
    (lambda x: nd.random.randint(5, 5, shape=(2,)), ['randint', 'low']),
], ids=['take', 'pick', 'swapaxes', 'repeat', 'tile', 'slice_axis', 'flip', 'one_hot',
        'split-0', 'split-axis', 'reshape-0', 'reshape-3', 'reshape-4', 'mean-dup',
        'argmax-tuple', 'concat-empty', 'stack-empty', 'arange', 'float-shape',
        'randint'])
def test_bad_attributes_fail_at_the_call(engine_kind, bad, words):
    """Not later inside the engine, and never a silently wrong result."""
    with pytest.raises((ValueError, TypeError)) as e:
        bad(nd.array(X))
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    mx.nd.waitall()


def test_slice_assignment_shape_mismatch():
    x = nd.zeros((4, 5))
    with pytest.raises(ValueError, match=r'\(3,\).*\(2, 5\)'):
        x[1:3] = nd.ones((3,))
    with pytest.raises(ValueError, match='shape'):
        x += nd.ones((2, 4, 5))         # result would not fit x
    np.testing.assert_array_equal(x.asnumpy(), np.zeros((4, 5)))


def test_copyto_shape_mismatch():
    with pytest.raises(ValueError, match=r'\(2,\).*\(3,\)'):
        nd.ones((2,)).copyto(nd.zeros((3,)))
    with pytest.raises(TypeError, match='Context'):
        nd.ones((2,)).copyto('cpu(1)')


def test_mixed_contexts(engine_kind):
    x, y = nd.ones((2, 3)), nd.ones((2, 3), ctx=mx.cpu(1))
    home = str(x.context)                    # cpu(0), or the run's default
    for f, op in [(lambda: x + y, 'add'), (lambda: x * y, 'multiply'),
                  (lambda: nd.dot(x, y.T), 'dot'), (lambda: nd.concat(x, y), 'concat'),
                  (lambda: nd.maximum(x, y), 'maximum')]:
        with pytest.raises(ValueError) as e:
            f()
        msg = str(e.value)
        assert isinstance(e.value, mx.MXNetError)
        assert op in msg and home in msg and 'cpu(1)' in msg, msg
        assert '(2, 3)' in msg


def test_mixed_context_error_is_printed_once():
    # It used to chain a ValueError with the same text ("The above exception
    # was the direct cause..."), so the traceback showed the message twice.
    import traceback
    x, y = nd.ones((2,), ctx=mx.cpu(0)), nd.ones((2,), ctx=mx.cpu(1))
    for f in [lambda: x + y, lambda: nd.concat(x, y, x), lambda: x.__iadd__(y)]:
        with pytest.raises(ValueError) as e:
            f()
        text = ''.join(traceback.format_exception(e.type, e.value, e.tb))
        assert text.count('all inputs must be on the same context') == 1, text
        assert 'direct cause' not in text and 'During handling' not in text


@pytest.mark.parametrize('bad', [
    lambda x: nd.sum(x, axes=1),
    lambda x: nd.mean(x, dims=0),
    lambda x: nd.max(x, keepdim=True),
    lambda x: nd.exp(x, inplace=True),
    lambda x: nd.dot(x, x, transpose=True),
    lambda x: nd.concat(x, x, axis=0),
    lambda x: nd.zeros((2,), shap=(3,)),
    lambda x: nd.ones((2,), dtyp='int32'),
    lambda x: nd.random.normal(0, 1, size=(3,)),
    lambda x: nd.random.uniform(0, 1, sahpe=(3,)),
    lambda x: x.sum(axes=1),
], ids=['sum-axes', 'mean-dims', 'max-keepdim', 'exp', 'dot', 'concat-axis', 'zeros',
        'ones', 'normal-size', 'uniform', 'method-sum'])
def test_unknown_keywords(bad):
    with pytest.raises(TypeError, match='unexpected keyword'):
        bad(nd.ones((2, 2)))


@pytest.mark.parametrize('bad,message', [
    (lambda x: nd.ones(shape=(2, 2), ctxx=mx.cpu()),
     "ones() got an unexpected keyword argument 'ctxx'; did you mean 'ctx'?"),
    (lambda x: nd.Convolution(x.reshape((1, 1, 2, 2)), nd.ones((1, 1, 1, 1)),
                              kernel=(1, 1), num_filters=1, no_bias=True),
     "Convolution() got an unexpected keyword argument 'num_filters'; "
     "did you mean 'num_filter'?"),
    (lambda x: nd.exp(x, outt=x),
     "exp() got an unexpected keyword argument 'outt'; did you mean 'out'?"),
], ids=['ones', 'Convolution', 'exp'])
def test_a_typo_in_a_keyword_gets_a_guess(bad, message):
    # One check serves every front end (d2lmini.base._check_kwargs): the
    # creation functions, the layer ops and the elementwise ones alike.
    with pytest.raises(TypeError) as e:
        bad(nd.ones((2, 2)))
    assert str(e.value) == message


def test_keywords_without_a_guess_are_listed_with_the_accepted_ones():
    with pytest.raises(TypeError) as e:
        nd.zeros((2,), shap=(3,), colour='red')
    assert str(e.value) == ("zeros() got unexpected keyword arguments 'shap' (did "
                            "you mean 'shape'?), 'colour'; its keywords are shape, "
                            "ctx, dtype, out")
    with pytest.raises(TypeError, match="its keywords are data, out, name$"):
        nd.exp(nd.ones(2), inplace=True)
    nd.ones((2,), stype='default', name='x', out=None)    # MXNet's, ignored


def test_backward_outside_record():
    x = nd.ones((2,))
    x.attach_grad()
    y = x * 2
    with pytest.raises(ValueError, match='autograd.record'):
        y.backward()
    with pytest.raises(ValueError, match='autograd.record'):
        autograd.grad(y, [x])


def test_grad_of_a_variable_outside_the_graph():
    x, w = nd.ones((2,)), nd.ones((2,))
    w.attach_grad()
    with autograd.record():
        y = (x * w).sum()
    with pytest.raises(ValueError, match=r'variable 0 \(shape \(2,\)\).*attach_grad'):
        autograd.grad(y, [x])


def test_second_backward():
    x = nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match='retain_graph=True'):
        y.backward()


@pytest.mark.parametrize('src', [['a', 'b'], 'abc', [object()], None, {'a': 1},
                                 [1, 'x'], np.array(['1.0'])],
                         ids=['strs', 'str', 'objects', 'None', 'dict', 'mixed',
                              'np-str'])
def test_array_rejects_non_numbers(src):
    with pytest.raises(TypeError, match='nd.array'):
        nd.array(src)


def test_bad_dtypes_and_shapes():
    with pytest.raises(TypeError, match='dtype'):
        nd.zeros((2,), dtype='floot32')
    with pytest.raises(TypeError):
        nd.array([1, 2], dtype=object)
    with pytest.raises(ValueError, match='negative'):
        nd.zeros((2, -1))
    with pytest.raises(TypeError, match='shape'):
        nd.ones('abc')
    with pytest.raises(TypeError, match='Context'):
        nd.zeros((2,), ctx='gpu')


def test_bad_grad_req():
    x = nd.ones((2,))
    with pytest.raises(ValueError, match="grad_req.*'wirte'"):
        x.attach_grad(grad_req='wirte')
    with pytest.raises(ValueError, match='shape'):
        autograd.mark_variables([x], [nd.zeros((3,))])


def test_asscalar_on_non_scalar():
    with pytest.raises(ValueError, match=r'asscalar.*\(2, 2\)'):
        nd.ones((2, 2)).asscalar()
    with pytest.raises(ValueError, match='ambiguous'):
        bool(nd.ones((2,)))


def test_head_grad_shape_mismatch():
    x = nd.ones((3,))
    x.attach_grad()
    with autograd.record():
        y = x * 2
    with pytest.raises(ValueError, match=r'\(2,\).*\(3,\)'):
        y.backward(nd.ones((2,)))


def test_indexing_out_of_range():
    x = nd.ones((2, 3))
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(IndexError):
        x[:, 7] = 1
    with pytest.raises(IndexError):
        x[nd.array([0, 4])] = 1
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 3)))


# --- the error hierarchy (mx.base, as MXNet 1.6+) ----------------------------------
def test_mxnet_error_is_the_base():
    assert mx.MXNetError is mx.base.MXNetError
    assert issubclass(mx.MXNetError, RuntimeError)          # as in MXNet
    assert issubclass(mx.engine.EngineError, mx.MXNetError)
    from d2lmini.gluon.parameter import DeferredInitializationError
    assert issubclass(DeferredInitializationError, mx.MXNetError)
    assert issubclass(mx.base.InternalError, mx.MXNetError)


@pytest.mark.parametrize('builtin', [ValueError, TypeError, IndexError, KeyError,
                                     AttributeError, NotImplementedError,
                                     ZeroDivisionError])
def test_as_mxnet_error_mixes_in_the_builtin_type(builtin):
    err = mx.base.as_mxnet_error(builtin('what went wrong'))
    assert isinstance(err, mx.MXNetError) and isinstance(err, builtin)
    assert 'what went wrong' in str(err)
    assert err.__cause__ is None        # a message only: nothing to chain
    try:
        raise builtin('raised')
    except builtin as e:
        err = mx.base.as_mxnet_error(e)
    assert isinstance(err.__cause__, builtin)   # a raised one: its traceback
    assert type(err) is type(mx.base.as_mxnet_error(builtin('again')))   # cached
    plain = mx.base.as_mxnet_error(OSError('disk'))       # cannot mix: plain base
    assert type(plain) is mx.MXNetError and 'disk' in str(plain)
    same = mx.MXNetError('x')
    assert mx.base.as_mxnet_error(same) is same


def test_register_error():
    @mx.base.register_error
    class MyError(mx.MXNetError):
        pass
    assert mx.base.error_types['MyError'] is MyError
    mx.base.register_error('Other', MyError)
    assert mx.base.error_types['Other'] is MyError
    vt = mx.base.error_types['ValueError']
    assert issubclass(vt, ValueError) and issubclass(vt, mx.MXNetError)
    del mx.base.error_types['MyError'], mx.base.error_types['Other']


def test_internal_error_says_so():
    assert 'internal error' in str(mx.base.InternalError('bad state'))


@pytest.mark.skipif(mx.num_gpus() > 0, reason='needs a machine without a GPU')
@pytest.mark.parametrize('make', [lambda: nd.zeros((1,), ctx=mx.gpu()),
                                  lambda: nd.array([1.0], ctx=mx.gpu(0)),
                                  lambda: nd.ones((1,)).as_in_context(mx.gpu(1))],
                         ids=['zeros', 'array', 'as_in_context'])
def test_no_gpu_is_an_mxnet_error(make):
    """The classic try_gpu() catches exactly mx.base.MXNetError."""
    with pytest.raises(mx.base.MXNetError, match='no GPU'):
        make()

    def try_gpu():
        try:
            ctx = mx.gpu()
            _ = nd.zeros((1,), ctx=ctx)
        except mx.base.MXNetError:
            ctx = mx.cpu()
        return ctx
    assert try_gpu() == mx.cpu()


def test_second_backward_is_an_mxnet_error():
    x = nd.ones((2,))
    x.attach_grad()
    with autograd.record():
        y = (x * x).sum()
    y.backward()
    with pytest.raises(mx.MXNetError, match='retain_graph=True'):
        y.backward()


def test_missing_modules_are_attribute_errors(monkeypatch):
    """A lazy submodule not written yet is an AttributeError, so hasattr()
    on it is False instead of raising ModuleNotFoundError."""
    monkeypatch.setattr(mx, '_LAZY', mx._LAZY + ('not_written_yet',))
    assert hasattr(mx, 'not_written_yet') is False
    with pytest.raises(AttributeError, match='not_written_yet'):
        mx.not_written_yet
    assert hasattr(mx, 'kv') and mx.kv is mx.kvstore        # written: loads
    assert not hasattr(mx, 'no_such_module')
    import types
    assert isinstance(mx.gluon, types.ModuleType)          # lazy ones still load
    assert mx.base.MXNetError is mx.MXNetError


def test_a_broken_import_inside_a_lazy_module_is_not_masked(monkeypatch):
    import importlib

    def broken(name, package=None):
        raise ModuleNotFoundError("No module named 'some_dependency'",
                                  name='some_dependency')
    monkeypatch.setattr(importlib, 'import_module', broken)
    with pytest.raises(ModuleNotFoundError, match='some_dependency'):
        mx.__getattr__('gluon')


def test_gluon_shape_mismatch_is_an_mxnet_error():
    layer = mx.gluon.nn.Dense(10, in_units=10)
    layer.initialize()
    with pytest.raises(mx.MXNetError, match=r'\(2, 11\)'):
        layer(nd.ones((2, 11)))



def test_base_helpers_as_mxnet():
    import numpy as np
    from d2lmini.base import (_Null, integer_types, mx_real_t, numeric_types, py_str,
                              string_types)
    assert isinstance(3, integer_types) and isinstance(np.int64(3), integer_types)
    assert not isinstance(3.0, integer_types)
    assert isinstance(np.float16(1), numeric_types) and isinstance(2.5, numeric_types)
    assert isinstance('a', string_types) and py_str(b'fc1_weight') == 'fc1_weight'
    assert mx_real_t is np.float32 and repr(_Null) == '_Null'


def test_util_answers_what_d2lmini_is():
    import d2lmini as mx
    assert mx.util.is_np_array() is False          # no mx.np front end
    assert mx.util.is_np_shape() is True           # 0-d arrays exist
    assert mx.nd.array([[1, 2], [3, 4]])[1, 1].shape == ()


def test_runtime_features_say_what_this_d2lmini_has():
    import d2lmini as mx
    f = mx.runtime.Features()
    assert f.is_enabled('INT64_TENSOR_SIZE') and f.is_enabled('int64_tensor_size')
    assert f.is_enabled('CUDA') == (mx.num_gpus() > 0)
    assert not f.is_enabled('DIST_KVSTORE')
    with pytest.raises(RuntimeError, match='unknown'):
        f.is_enabled('WARP_DRIVE')
    assert '✔ INT64_TENSOR_SIZE' in repr(f)


def test_binary_functions_on_two_numbers_and_ignored_keywords():
    from d2lmini import nd
    assert nd.power(0.9, 3) == pytest.approx(0.729)      # a number, as MXNet
    assert nd.maximum(2, 5) == 5 and nd.equal(1, 1) == 1
    with pytest.warns(UserWarning, match='ignores'):
        r = nd.broadcast_maximum(nd.array([0.]), nd.array([[-1.], [2.]]), axis=1)
    assert r.asnumpy().ravel().tolist() == [0., 2.]
    with pytest.raises(TypeError):
        nd.add(nd.ones(2), nd.ones(2), axis=1)            # only broadcast_* ignore


def test_broadcast_like_with_empty_axes_is_an_mxnet_value_error():
    from d2lmini import nd
    import d2lmini as mx
    with pytest.raises(mx.MXNetError) as info:
        nd.broadcast_like(nd.ones((1,)), nd.ones((3,)), lhs_axes=(), rhs_axes=())
    assert isinstance(info.value, ValueError)
