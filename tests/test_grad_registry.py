"""Every differentiable operator's gradient, checked against central differences.

The test enumerates the op table (``d2lmini.ndarray.registry.OPS``, filled by
importing d2lmini, the nn families included), so a new op without a gradient
check fails here.  For each ``Case`` of an op:

* inputs come from ``case.make(np.random.default_rng(0))`` in float64;
* the op runs through ``invoke`` under ``autograd.record()`` on ``ctx``;
* the loss is a random weighted sum ``sum_k (w_k * out_k).sum()``; we call
  ``autograd.backward(outs, head_grads=ws)``, which is exactly its gradient
  and keeps the check about this op alone (no multiply/sum in the way);
* the oracle is a central difference of the same loss, computed with the
  op's own ``forward`` on host NumPy arrays.
"""
import numpy as np
import pytest

import d2lmini  # noqa: F401 - registers every operator
import d2lmini.numpy  # noqa: F401 - and mx.np's (_np_sum, _npi_inv, ...)
from d2lmini import autograd, nd
from d2lmini.ndarray.ndarray import invoke
from d2lmini.ndarray.elemwise import ScalarOp, UnaryOp
from d2lmini.ndarray.registry import OPS, Op

EPS = 1e-6
RTOL, ATOL = 1e-5, 1e-6

DIFFERENTIABLE = sorted(n for n, op in OPS.items()
                        if op.differentiable and not op.loss_head)
CASES = [pytest.param(name, i, id=f'{name}-case{i + 1}')
         for name in DIFFERENTIABLE for i in range(len(OPS[name].cases))]
# Elementwise ops have a diagonal Jacobian: cheap to check a second time.
ELEMENTWISE = [n for n in DIFFERENTIABLE
               if isinstance(OPS[n], (UnaryOp, ScalarOp)) and OPS[n].cases]


def test_the_table_is_filled():
    for name in ['add', 'dot', 'sum', 'reshape', 'concat', 'pick', 'exp']:
        assert name in OPS, name


def test_operator_classes_end_in_op():
    # The class is named after the op and ends in Op (ConvolutionOp), so
    # it never shares a name with the front end (nd.Convolution).
    bad = sorted({c.__name__ for op in OPS.values() for c in type(op).__mro__
                  if issubclass(c, Op) and c is not Op
                  and not c.__name__.endswith('Op')})
    assert not bad, bad


def test_every_differentiable_op_has_a_case():
    missing = [n for n in DIFFERENTIABLE if not OPS[n].cases]
    assert not missing, (f'differentiable ops without a gradient Case: {missing}; '
                         f'add cases=(Case(...),) next to their backward')


def _inputs(case):
    """The case's inputs: floats as float64, index arrays keep their int dtype."""
    out = []
    for a in case.make(np.random.default_rng(0)):
        a = np.asarray(a)
        out.append(a.astype(np.float64) if a.dtype.kind == 'f' else a.copy())
    return out


def _checked(case, arrays):
    """Inputs whose gradient is checked: ``case.grad``, else every float input."""
    if case.grad is not None:
        return list(case.grad)
    return [i for i, a in enumerate(arrays) if a.dtype.kind == 'f']


def _outs(op, res):
    """The forward result as a list of float64 host arrays (less the op's
    ``internal_outputs``, e.g. RNN's reserve: what its backward reads, no
    result with a gradient)."""
    res = [res] if op.nout == 1 else list(res)[:len(res) - _internal(op)]
    return [np.asarray(r, dtype=np.float64) for r in res]


def _internal(op):
    return getattr(op, 'internal_outputs', 0)


def _numeric_grad(op, arrays, attrs, ws, i):
    """d(sum_k w_k * out_k)/d arrays[i] by central differences."""
    def loss():
        return sum(float((w * o).sum())
                   for w, o in zip(ws, _outs(op, op.forward(*arrays, **attrs))))
    x = arrays[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        orig = x[idx]
        x[idx] = orig + EPS
        fp = loss()
        x[idx] = orig - EPS
        fm = loss()
        x[idx] = orig
        g[idx] = (fp - fm) / (2 * EPS)
    return g


@pytest.mark.parametrize('name,k', CASES)
def test_gradient(name, k, ctx):
    op, case = OPS[name], OPS[name].cases[k]
    arrays = _inputs(case)
    attrs = case.attrs
    checked = _checked(case, arrays)

    xs = [nd.array(a, ctx=ctx, dtype=a.dtype) for a in arrays]
    for i in checked:
        xs[i].attach_grad()
    with autograd.record():
        res = invoke(op, xs, attrs)
    outs = [res] if op.nout == 1 else list(res)[:len(res) - _internal(op)]

    # forward values agree with the op's forward on host arrays
    expect = _outs(op, op.forward(*[a.copy() for a in arrays], **attrs))
    assert len(outs) == len(expect)
    for o, e in zip(outs, expect):
        assert o.shape == e.shape, f'{name}: inferred {o.shape}, computed {e.shape}'
        np.testing.assert_allclose(o.asnumpy(), e, rtol=1e-10, atol=1e-12)

    wrng = np.random.default_rng(1)
    ws = [np.asarray(wrng.standard_normal(o.shape)) for o in outs]
    autograd.backward(outs, [nd.array(w, ctx=ctx, dtype=np.float64) for w in ws])
    for i in checked:
        num = _numeric_grad(op, arrays, attrs, ws, i)
        got = xs[i].grad.asnumpy()
        np.testing.assert_allclose(got, num, rtol=RTOL, atol=ATOL,
                                   err_msg=f'{name} {case}: gradient of input {i}')


@pytest.mark.parametrize('name', ELEMENTWISE)
def test_second_order_elementwise(name, ctx):
    """d/dx of the recorded first derivative matches its central difference."""
    op = OPS[name]
    case = op.cases[0]
    x0 = _inputs(case)[0]
    w = np.random.default_rng(1).standard_normal(x0.shape)
    v = np.random.default_rng(2).standard_normal(x0.shape)

    def first(xv, create_graph=False):
        x = nd.array(xv, ctx=ctx, dtype=np.float64)
        x.attach_grad()
        with autograd.record():
            y = invoke(op, (x,), case.attrs)
            g = autograd.grad(y, x, nd.array(w, ctx=ctx, dtype=np.float64),
                              create_graph=create_graph)
        return x, g

    eps = 1e-5
    num = v * (first(x0 + eps)[1].asnumpy() - first(x0 - eps)[1].asnumpy()) / (2 * eps)
    x, g = first(x0, create_graph=True)
    if g._node is None:     # a gradient not depending on x (identity, x + c)
        np.testing.assert_allclose(num, 0, atol=1e-6)
        return
    h = autograd.grad(g, x, nd.array(v, ctx=ctx, dtype=np.float64))
    np.testing.assert_allclose(h.asnumpy(), num, rtol=1e-5, atol=1e-6,
                               err_msg=f'{name}: second derivative')


# --- dtypes: what infer announces is what the kernel produces ------------------------
DTYPE_OPS = sorted(n for n, op in OPS.items() if op.cases)


@pytest.mark.filterwarnings('ignore::RuntimeWarning')    # int inputs: 1/0 and such
@pytest.mark.parametrize('name', DTYPE_OPS)
def test_declared_dtype_matches_data(name):
    """For int32, float16 and mixed float32/float64 inputs, ``x.dtype`` (from
    ``infer``, known before the kernel runs) equals the computed data's dtype.
    An op may instead refuse a dtype up front (TypeError/ValueError at the call),
    but it must not fail later inside the engine."""
    op, case = OPS[name], OPS[name].cases[0]
    arrays = _inputs(case)
    checked = _checked(case, arrays)
    combos = [('int32',), ('float16',)]
    if len(arrays) > 1:
        combos += [('float32', 'float64'), ('float64', 'float32'), ('int32', 'float32')]
    try:
        _check_dtypes(name, op, case, arrays, checked, combos)
    finally:
        try:
            nd.waitall()            # leave no failure behind for the next test
        except Exception:           # noqa: BLE001 - already reported above
            pass


def _check_dtypes(name, op, case, arrays, checked, combos):
    for combo in combos:
        xs = [nd.array(a, dtype=combo[min(i, len(combo) - 1)] if i in checked
                       else a.dtype if a.dtype.kind != 'f' else 'float32')
              for i, a in enumerate(arrays)]
        try:
            res = invoke(op, xs, case.attrs)
        except (TypeError, ValueError) as e:      # refused at the front end: fine
            assert name in str(e) or op.name in str(e), (name, combo, e)
            continue
        for o in ([res] if op.nout == 1 else res):
            assert o.asnumpy().dtype == np.dtype(o.dtype), (name, combo)
