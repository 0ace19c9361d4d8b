"""The helpers of chapters 9-14 in d2lmini.d2l (run headless), and the
engine trace's record of which operations autograd's backward pass pushed,
which chapter 10's timeline colours by."""
import os

import matplotlib
import numpy as np
import pytest

matplotlib.use('Agg')

import d2lmini as mx                                   # noqa: E402
from d2lmini import autograd, d2l, engine, nd          # noqa: E402
from d2lmini.gluon import nn                           # noqa: E402
from matplotlib.colors import to_rgba                  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    d2l.plt.close('all')


# --- which pass pushed an operation ------------------------------------------
def _traced_step(devices):
    """A fused Dense+relu layer on devices[0], a copy, a Dense on
    devices[-1]: forward and backward, traced."""
    mx.random.seed(0)
    first, last = nn.Dense(8, activation='relu'), nn.Dense(3)
    first.initialize(ctx=devices[0])
    last.initialize(ctx=devices[-1])
    x = nd.random.normal(shape=(4, 5), ctx=devices[0])
    last(first(x).as_in_context(devices[-1]))            # deferred init
    with engine.Trace() as tr:
        with autograd.record():
            out = last(first(x).as_in_context(devices[-1]))
        out.backward()
    return tr


@pytest.mark.parametrize('mode', ['threaded', 'naive'])
def test_a_fused_forward_op_is_forward_and_its_gradient_backward(mode):
    with engine.engine_mode(mode):
        tr = _traced_step([mx.cpu(0)])
    spans = tr.spans(backward=True)
    assert [s[:4] for s in spans] == tr.spans()          # the same spans
    forward = [n for _, n, _, _, bw in spans if not bw]
    backward = [n for _, n, _, _, bw in spans if bw]
    assert '_fc_act' in forward and '_fc_act' not in backward
    assert forward.index('_fc_act') < forward.index('FullyConnected')
    assert backward and not set(backward) & {'_fc_act', 'FullyConnected'}
    # every backward op ran after every forward op (one device, in order)
    assert max(e for _, _, _, e, bw in spans if not bw) <= \
        min(s for _, _, s, _, bw in spans if bw)


def test_no_trace_no_marks_and_old_event_tuples_still_work():
    assert engine.backward_pass() is engine.backward_pass()   # a no-op
    tr = engine.Trace()                      # events set by hand, as tests do
    tr.events = [(mx.cpu(0), 'a', 0.0, 1.0, 1), (mx.cpu(0), 'b', 1.0, 2.0, 2)]
    assert tr.spans(backward=True) == [(mx.cpu(0), 'a', 0.0 - tr.t0,
                                        1.0 - tr.t0, False),
                                       (mx.cpu(0), 'b', 1.0 - tr.t0,
                                        2.0 - tr.t0, False)]
