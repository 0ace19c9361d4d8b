"""The chapters' coding exercises: ``d2l.check`` against solutions/.

For each exercise: the reference solution in solutions/ passes, a typical
wrong answer fails with a message that shows the input, what was
expected and what came back, and (for every check at once) the notebook's
stub is "not attempted yet" and an exception in the learner's code is
reported, not raised.
"""
import importlib.util
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from conftest import child_pythonpath

from d2lmini import autograd, d2l, nd

check = d2l.check
ROOT = pathlib.Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / 'solutions'


def solutions(chapter):
    """The module solutions/<chapter>.py (solutions/ is not a package)."""
    path = SOLUTIONS / f'{chapter}.py'
    spec = importlib.util.spec_from_file_location(f'solutions_{chapter}', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_correct(result):
    assert result, result.message
    assert result.message.startswith('✓ correct on ')


def assert_wrong(result, *parts):
    """``result`` is a failure whose message contains each of ``parts``."""
    assert not result and result.attempted
    assert result.message.startswith('✗ on input '), result.message
    for part in parts:
        assert part in result.message, (part, result.message)


# === what every check shares =================================================
def stub(*args):
    raise NotImplementedError  # your code here


def broken(*args):
    raise KeyError('oops')


CHECKS = {}                     # 'chapter.name': the check, by @exercise


def exercise(check_fn):
    """Register a check for the shared tests at the end of this file."""
    chapter = check_fn.__module__.rsplit('.', 1)[1]
    CHECKS[f'{chapter}.{check_fn.__name__}'] = check_fn
    return lambda test: test


def test_result_shows_its_message():
    result = check.Result(True, '✓ correct on 3 inputs')
    assert bool(result) and str(result) == result.message
    assert repr(result) == 'Result(ok=True, attempted=True)'


def test_a_check_prints_its_verdict_in_a_script_too():
    """Run as a script would run it: the verdict is on stdout."""
    code = textwrap.dedent("""
        from d2lmini import d2l
        def sum_to(x, shape):
            raise NotImplementedError
        result = d2l.check.ndarray.sum_to(sum_to)
        assert not result and not result.attempted
    """)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True,
                         text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=child_pythonpath(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout == ('not attempted yet: sum_to(x, shape) returns x summed '
                          'over the axes that broadcasting shape to x.shape '
                          'adds or stretches, with shape `shape`\n')


def test_a_notebook_shows_the_verdict_once(capsys):
    """Printed by the check; IPython's display of the returned Result, as
    for a cell that ends with the call, adds nothing."""
    formatters = pytest.importorskip('IPython.core.formatters')
    result = check.ndarray.sum_to(stub)
    assert capsys.readouterr().out == result.message + '\n'
    assert formatters.DisplayFormatter().format(result) == ({}, {})


def test_show_is_compact():
    text = check.show(nd.arange(100).reshape((10, 10)))
    assert text.startswith('NDArray(10, 10) float32 on ')
    assert len(text) < 100


# === chapter 1: NDArray ======================================================
@exercise(check.ndarray.sum_to)
def test_ndarray_sum_to():
    assert_correct(check.ndarray.sum_to(solutions('01_ndarray').sum_to))
    # summing only the leading axes forgets the stretched ones
    def leading_only(x, shape):
        lead = x.ndim - len(shape)
        return x.sum(axis=tuple(range(lead))) if lead else x
    assert_wrong(check.ndarray.sum_to(leading_only),
                 'shape=(1, 3)', 'expected shape (1, 3), got shape (2, 3)')
    # keepdims forgotten: the right numbers in the wrong shape
    assert_wrong(check.ndarray.sum_to(lambda x, shape: x.sum(axis=0)),
                 'x=NDArray(2, 3)', 'shape=(2, 3)',
                 'expected shape (2, 3), got shape (3,)')


# === chapter 2: autograd =====================================================
@exercise(check.autograd.straight_through_round)
def test_autograd_straight_through_round():
    assert_correct(check.autograd.straight_through_round(
        solutions('02_autograd').RoundSTE))

    class TrueDerivative(autograd.Function):       # d round / dx = 0
        def forward(self, x):
            return nd.round(x)

        def backward(self, dy):
            return dy * 0
    assert_wrong(check.autograd.straight_through_round(TrueDerivative),
                 'x=NDArray(1,) float32', '[0.4]', 'x.grad',
                 'expected [4.], got [0.]')

    class NoRounding(autograd.Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            return dy
    assert_wrong(check.autograd.straight_through_round(NoRounding),
                 'forward (rounded x): expected [0.], got [0.4]')


# === chapter 3: asynchronous computation ====================================
@exercise(check.engine.loop_time)
def test_engine_loop_time():
    assert_correct(check.engine.loop_time(solutions('03_async').loop_time))
    # the steady state only: forgets filling the pipeline and the waits
    assert_wrong(check.engine.loop_time(
        lambda n, t_front, t_back, sync_every: n * max(t_front, t_back)),
        'n=1, t_front=2, t_back=3, sync_every=None', 'expected 5, got 3')

    reference = solutions('03_async').loop_time

    def never_waits(n, t_front, t_back, sync_every):
        return reference(n, t_front, t_back, None)
    assert_wrong(check.engine.loop_time(never_waits),
                 'n=5, t_front=2, t_back=3, sync_every=1',
                 'expected 25, got 17')


# === chapter 4: layers =======================================================
@exercise(check.layers.num_parameters)
def test_layers_num_parameters():
    assert_correct(check.layers.num_parameters(
        solutions('04_layers').num_parameters))
    # counts the parameter arrays, not the numbers in them
    assert_wrong(check.layers.num_parameters(
        lambda net, X: len(net.collect_params())),
        'net=Dense(4), X of shape (2, 3)', 'expected 16, got 2')

    def per_layer(net, X):            # a shared layer is counted twice
        net(X)
        layers = net._children.values() if len(net._children) else [net]
        return sum(p.data().size for layer in layers
                   for p in layer.collect_params().values())
    assert_wrong(check.layers.num_parameters(per_layer),
                 'Sequential of 4 Dense, the 2nd and 3rd sharing',
                 'expected 330, got 402')
    # shapes read before the first forward pass are not known yet
    assert_wrong(check.layers.num_parameters(
        lambda net, X: sum(p.data().size
                           for p in net.collect_params().values())),
        'your code raised DeferredInitializationError')


# === chapter 5: LeNet ========================================================
@exercise(check.lenet.conv2d_output_shape)
def test_lenet_conv2d_output_shape():
    assert_correct(check.lenet.conv2d_output_shape(
        solutions('05_lenet').conv2d_output_shape))

    def no_padding(data_shape, num_filter, kernel, stride, pad):
        n, _, h, w = data_shape
        return (n, num_filter, (h - kernel[0]) // stride[0] + 1,
                (w - kernel[1]) // stride[1] + 1)
    assert_wrong(check.lenet.conv2d_output_shape(no_padding),
                 'data_shape=(1, 1, 28, 28), num_filter=6, kernel=(5, 5), '
                 'stride=(1, 1), pad=(2, 2)',
                 'expected (1, 6, 28, 28), got (1, 6, 24, 24)')


# === chapter 6: automatic parallelism ========================================
@exercise(check.auto_parallelism.finish_times)
def test_auto_parallelism_finish_times():
    assert_correct(check.auto_parallelism.finish_times(
        solutions('06_auto_parallelism').finish_times))

    def dependencies_only(ops):       # as if every operation had a device
        finish = {}
        for name, device, duration, inputs in ops:
            finish[name] = max([0] + [finish[i] for i in inputs]) + duration
        return finish
    assert_wrong(check.auto_parallelism.finish_times(dependencies_only),
                 "ops=[('a', 'cpu(0)', 2, []), ('b', 'cpu(0)', 3, [])]",
                 "operation 'b': expected it to finish at 5, got 3")


# === chapter 7: multiple devices from scratch ================================
@exercise(check.multi_device.allreduce)
def test_multi_device_allreduce():
    assert_correct(check.multi_device.allreduce(
        solutions('07_multi_device_scratch').allreduce))

    def chapters_allreduce(data, root):   # always sums on data[0]'s device
        for i in range(1, len(data)):
            data[0][:] += data[i].copyto(data[0].context)
        for i in range(1, len(data)):
            data[0].copyto(data[i])
    assert_wrong(check.multi_device.allreduce(chapters_allreduce),
                 'root=1', "must run on data[root]'s device cpu(1)",
                 'add on cpu(0)')

    def new_arrays(data, root):           # the caller's arrays unchanged
        ctx = data[root].context
        total = sum(x.copyto(ctx) for x in data)
        for i in range(len(data)):
            data[i] = total.copyto(data[i].context)
    assert_wrong(check.multi_device.allreduce(new_arrays),
                 'data=[NDArray(3,) float32 on cpu(0)',
                 'data[0] was replaced by a new array')

    def forgets_root(data, root):         # the sum stays on the root
        for i, x in enumerate(data):
            if i != root:
                data[root][:] += x.copyto(data[root].context)
    assert_wrong(check.multi_device.allreduce(forgets_root),
                 'root=0', 'data[1] on cpu(1): expected [[ 0., 11.]], got '
                 '[[ 0., 10.]]')


# === chapter 8: concise multi-device training ================================
@exercise(check.data_parallel.split_and_load)
def test_data_parallel_split_and_load():
    assert_correct(check.data_parallel.split_and_load(
        solutions('08_multi_device_concise').split_and_load))

    def chapters_split(data, devices):    # assumes the batch divides
        m = data.shape[0] // len(devices)
        return [data[i * m:(i + 1) * m].as_in_context(devices[i])
                for i in range(len(devices))]
    assert_wrong(check.data_parallel.split_and_load(chapters_split),
                 'data=NDArray(7, 4)', 'ctx_list=[cpu(0), cpu(1), cpu(2)]',
                 'slice 0: expected shape (3, 4), got shape (2, 4)')
    # the slices stay where the batch is (on the default context)
    assert_wrong(check.data_parallel.split_and_load(
        lambda data, devices: [data[:3], data[3:]]),
        'ctx_list=[cpu(0), cpu(1)]', ': expected an array on cpu(',
        ', got one on ')


# === chapter 9: the KVStore ==================================================
@exercise(check.kvstore.reduce_devices)
def test_kvstore_reduce_devices():
    assert_correct(check.kvstore.reduce_devices(
        solutions('09_kvstore').reduce_devices))

    def in_key_order(sizes, num_devices):  # forgets "largest first"
        work, where = [0] * num_devices, []
        for n in sizes:
            where.append(work.index(min(work)))
            work[where[-1]] += n
        return where
    assert_wrong(check.kvstore.reduce_devices(in_key_order),
                 'sizes=[100, 400, 600, 700, 800, 1000], num_devices=3',
                 'expected [0, 1, 2, 2, 1, 0], got [0, 1, 2, 0, 1, 2]')


# === chapter 10: model parallelism ===========================================
@exercise(check.model_parallelism.gpipe_schedule)
def test_model_parallelism_gpipe_schedule():
    reference = solutions('10_model_parallelism').gpipe_schedule
    assert_correct(check.model_parallelism.gpipe_schedule(reference))
    assert reference(2, 3) == [['F0', None], ['F1', 'F0'], ['F2', 'F1'],
                               [None, 'F2'], [None, 'B2'], ['B2', 'B1'],
                               ['B1', 'B0'], ['B0', None]]

    def backward_in_forward_order(S, m):
        return [[p if p is None or p[0] == 'F' else f'B{m - 1 - int(p[1:])}'
                 for p in tick] for tick in reference(S, m)]
    assert_wrong(check.model_parallelism.gpipe_schedule(
        backward_in_forward_order),
        'num_stages=1, num_micro=3', "tick 3: expected ['B2']",
        "got ['B0']")
    # no bubble: the stages start together
    assert_wrong(check.model_parallelism.gpipe_schedule(
        lambda S, m: [[f'F{i}'] * S for i in range(m)]
        + [[f'B{i}'] * S for i in reversed(range(m))]),
        'num_stages=2, num_micro=1', 'expected 4 ticks, got 2')


# === chapter 11: parameter servers ==========================================
@exercise(check.parameter_server.server_value)
def test_parameter_server_server_value():
    assert_correct(check.parameter_server.server_value(
        solutions('11_parameter_servers').server_value))

    def always_async(w, lr, pushes, num_workers, sync):
        return w - lr * sum(grad for _, grad in pushes)
    assert_wrong(check.parameter_server.server_value(always_async),
                 'pushes=[(0, 1.0), (1, 3.0), (0, 2.0)], num_workers=2, '
                 'sync=True', 'expected 8.0, got 7.0')


# === chapter 12: the distributed KVStore =====================================
@exercise(check.dist_kvstore.staleness)
def test_dist_kvstore_staleness():
    assert_correct(check.dist_kvstore.staleness(
        solutions('12_distributed_kvstore').staleness))

    def others_only(events):          # forgets the worker's own pushes
        pulled, version, stale = {}, 0, []
        for what, worker in events:
            if what == 'pull':
                pulled[worker] = version
            else:
                stale.append(version - pulled[worker])
                version += 1
                pulled[worker] += 1
        return stale
    assert_wrong(check.dist_kvstore.staleness(others_only),
                 "events=[('pull', 0), ('push', 0), ('push', 0)]",
                 'expected [0, 1], got [0, 0]')


# === chapter 13: Horovod =====================================================
@exercise(check.horovod.reduce_scatter_schedule)
def test_horovod_reduce_scatter_schedule():
    assert_correct(check.horovod.reduce_scatter_schedule(
        solutions('13_horovod').reduce_scatter_schedule))

    def chapters_schedule(n):         # rank r ends with chunk (r + 1) % n
        return [[(r, (r + 1) % n, (r - s) % n) for r in range(n)]
                for s in range(n - 1)]
    assert_wrong(check.horovod.reduce_scatter_schedule(chapters_schedule),
                 'n=2', "rank 0's chunk 0 holds the contributions of ranks "
                 '[0], expected those of all ranks [0, 1]')

    def to_the_left(n):
        return [[(r, (r - 1) % n, (r + s + 1) % n) for r in range(n)]
                for s in range(n - 1)]
    assert_wrong(check.horovod.reduce_scatter_schedule(to_the_left),
                 'n=3', 'step 0: rank 0 sends to rank 2, but in a ring it '
                 'sends only to its right neighbour, rank 1')


# === chapter 14: symbolic programming ========================================
@exercise(check.symbolic.mlp_arg_shapes)
def test_symbolic_mlp_arg_shapes():
    assert_correct(check.symbolic.mlp_arg_shapes(
        solutions('14_symbolic').mlp_arg_shapes))

    def no_flatten(data_shape, num_hiddens):   # uses the last axis only
        shapes, in_units = {'data': data_shape}, data_shape[-1]
        for i, h in enumerate(num_hiddens, 1):
            shapes[f'fc{i}_weight'] = (h, in_units)
            shapes[f'fc{i}_bias'] = (h,)
            in_units = h
        return shapes
    assert_wrong(check.symbolic.mlp_arg_shapes(no_flatten),
                 'data_shape=(4, 1, 28, 28), num_hiddens=[256, 10]',
                 'fc1_weight: expected (256, 784), got (256, 28)')


# === chapter 15: deploying a model ===========================================
@exercise(check.serving.form_batches)
def test_serving_form_batches():
    assert_correct(check.serving.form_batches(
        solutions('15_deploying').form_batches))

    def mistaken(timer_from_free=False, strict=False):
        """form_batches with the timer started when the worker is free (a
        request that waited already waits again), or with only requests
        that arrived strictly before the batch leaves (the request that
        fills it is left out)."""
        def form_batches(arrivals, max_batch_size, max_delay, service_time):
            batches, free, i, n = [], 0, 0, len(arrivals)
            while i < n:
                start = arrivals[i]
                if timer_from_free:
                    start = max(free, start)
                leave = start + max_delay
                if i + max_batch_size - 1 < n:
                    leave = min(leave, arrivals[i + max_batch_size - 1])
                leave = max(free, leave)
                last = min(i + max_batch_size, n)
                members = [i] + [j for j in range(i + 1, last)
                                 if arrivals[j] < leave or (
                                     not strict and arrivals[j] == leave)]
                batches.append((leave, members))
                free, i = leave + service_time, i + len(members)
            return batches
        return form_batches
    assert_wrong(check.serving.form_batches(mistaken(timer_from_free=True)),
                 'arrivals=[0, 1, 2, 3, 4], max_batch_size=4, max_delay=10',
                 'batch 1: expected it to leave at 14 ms with requests [4], '
                 'got 18 ms with [4]')
    assert_wrong(check.serving.form_batches(mistaken(strict=True)),
                 'arrivals=[0, 1, 2, 3, 4], max_batch_size=4',
                 'batch 0: expected it to leave at 3 ms with requests '
                 '[0, 1, 2, 3], got 3 ms with [0, 1, 2]')
    assert_correct(check.serving.form_batches(mistaken()))   # (the helper)

    def worker_ignored(arrivals, max_batch_size, max_delay, service_time):
        """Batches as if the worker were always free: they overlap."""
        return solutions('15_deploying').form_batches(
            arrivals, max_batch_size, max_delay, 0)
    assert_wrong(check.serving.form_batches(worker_ignored),
                 'arrivals=[0, 1, 2, 3, 10], max_batch_size=8, max_delay=0',
                 'batch 1: expected it to leave at 5 ms with requests '
                 '[1, 2, 3], got 1 ms with [1]')


# === every check: the stub, and an exception in the learner's code ===========
def test_every_chapter_has_an_exercise():
    chapters = {name.split('.')[0] for name in CHECKS}
    assert sorted(chapters) == sorted(check.CHAPTERS)


@pytest.mark.parametrize('name', sorted(CHECKS))
def test_stub_is_not_attempted_yet(name):
    result = CHECKS[name](stub)
    assert not result and not result.attempted
    assert result.message.startswith('not attempted yet: ')


@pytest.mark.parametrize('name', sorted(CHECKS))
def test_exception_is_reported_not_raised(name):
    result = CHECKS[name](broken)
    assert_wrong(result, "your code raised KeyError: 'oops'")
