"""Shared fixtures.

``ctx`` runs a test on ``cpu(0)`` and, when CuPy sees a GPU, again on
``gpu(0)`` (made the default context for that run), as MXNet's test suite
re-runs its CPU tests with a GPU default context.

``make test-gpu-standin`` runs the whole suite with ``gpu(0)`` as the default
context and ``D2LMINI_CUPY=cupy_standin``: GPU contexts backed by the strict
CuPy stand-in of ``cupy_standin.py``, so every GPU code path runs in CI.
"""
import os
import pathlib
import threading
import uuid

import numpy as np
import pytest

import d2lmini as mx
from d2lmini import context, nd
from d2lmini.ndarray.registry import OPS, Op

HAS_GPU = mx.num_gpus() > 0
STANDIN = mx.backend._CUPY_MODULE == 'cupy_standin'   # GPUs on the stand-in
DEVICES = [mx.cpu(0), pytest.param(mx.gpu(0), marks=pytest.mark.skipif(
    not HAS_GPU, reason='no GPU (install the [gpu] extra on a CUDA machine)'))]


def needs_devices(n):
    """Skip unless ``n`` devices of the default context's kind are visible
    (``cpu(i)`` are logical, any number; a one-GPU machine has one
    ``gpu(i)``).  For tests that use ``gpu(0)``..``gpu(n-1)`` when the
    default context is a GPU."""
    kind = mx.current_context().device_type
    have = mx.num_gpus() if kind == 'gpu' else n
    return pytest.mark.skipif(
        have < n, reason=f'needs {n} {kind} devices, {have} visible')


def child_pythonpath(root):
    """``PYTHONPATH`` for a child process (a dist job's roles, MPI ranks, the
    launcher): ``root`` (this checkout) first, then this process's own
    entries made absolute (a child may start in another directory), so the
    child imports what this process imports: in the GPU run, the stand-in
    that ``D2LMINI_CUPY`` names, which lives in ``tests/``."""
    inherited = os.environ.get('PYTHONPATH', '').split(os.pathsep)
    parts = [str(root)] + [os.path.abspath(p) for p in inherited if p]
    return os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture(params=DEVICES, ids=lambda c: str(c))
def ctx(request):
    old = context._DEFAULT[0]
    context.set_default_context(request.param)
    try:
        yield request.param
    finally:
        mx.nd.waitall()
        context._DEFAULT[0] = old


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'cpu_context: the test is about CPU-only machinery (NumPy '
        'kernels, threads, host files); it runs with cpu(0) as the default '
        'context even in the GPU runs')


@pytest.fixture(autouse=True)
def _cpu_context(request):
    """``@pytest.mark.cpu_context``: cpu(0) is the default context here."""
    if request.node.get_closest_marker('cpu_context') is None:
        yield
        return
    old = context._DEFAULT[0]
    context.set_default_context(mx.cpu(0))
    try:
        yield
    finally:
        mx.nd.waitall()
        context._DEFAULT[0] = old


@pytest.fixture(params=['threaded', 'naive'])
def engine_kind(request):
    """Run a test under both the asynchronous and the synchronous engine."""
    old = mx.engine.set_engine(request.param)
    try:
        yield request.param
    finally:
        mx.engine.set_engine(old)


@pytest.fixture(autouse=True)
def _seed():
    mx.random.seed(42)
    np.random.seed(42)
    yield


def _fashion_mnist_dir():
    here = pathlib.Path(__file__).resolve().parent.parent
    for d in [os.environ.get('D2LMINI_TEST_FASHION_MNIST'),
              os.environ.get('D2LMINI_DATA'),          # as the Makefile sets it
              here.parent / 'shared' / 'data' / 'fashion-mnist',
              here / 'shared' / 'data' / 'fashion-mnist',
              '/usr/share/datasets/fashion-mnist']:
        if d and (pathlib.Path(d) / 't10k-labels-idx1-ubyte.gz').exists():
            return pathlib.Path(d)
    return None


FASHION_MNIST = _fashion_mnist_dir()


@pytest.fixture
def fashion_mnist_dir():
    if FASHION_MNIST is None:
        pytest.skip('the Fashion-MNIST files are not available')
    return FASHION_MNIST


def alive(pid):
    """``pid`` is running (a zombie not yet reaped counts as gone)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except (OSError, IndexError):
        return False


# --- a gate: an op that holds its device's worker ---------------------------------
class _Gate(Op):
    """Copies its input once ``gate`` (a threading.Event) is set."""
    differentiable = False

    def infer(self, shapes, dtypes, **attrs):
        return shapes[0], dtypes[0]

    def forward(self, a, gate):
        if not gate.wait(timeout=60):        # a broken test fails, not hangs
            raise TimeoutError('gate never opened')
        return a.copy()


@pytest.fixture
def gate_op():
    """``(gated, gate)``: ``gated(x)`` pushes a copy of ``x`` that holds
    its device's worker until ``gate.set()`` (``gated.op_name``: the op's
    registered name).  Opened, waited for and unregistered at the end."""
    op = _Gate()
    op.name = f'_test_gate_{uuid.uuid4().hex[:8]}'
    OPS[op.name] = op
    gate = threading.Event()

    def gated(x):
        return nd.invoke(op, (x,), {'gate': gate})
    gated.op_name = op.name
    try:
        yield gated, gate
    finally:
        gate.set()
        nd.waitall()
        del OPS[op.name]
