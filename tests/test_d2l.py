"""The book's helpers (d2lmini.d2l), run headless (MPLBACKEND=Agg)."""
import contextlib
import re
import sys
import time
import types

import matplotlib
import numpy as np
import pytest

matplotlib.use('Agg')

import d2lmini as mx                                   # noqa: E402
from d2lmini import autograd, d2l, nd                  # noqa: E402
from d2lmini.d2l import classic                        # noqa: E402

try:                        # nn operators not in nd yet: the gluon stand-ins
    from _gluon_standins import standin_ops
except ImportError:         # pragma: no cover
    standin_ops = contextlib.nullcontext


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    d2l.plt.close('all')


def test_timer_and_accumulator():
    timer = d2l.Timer()
    time.sleep(0.01)
    t1 = timer.stop()
    timer.start()
    t2 = timer.stop()
    assert t1 >= 0.009 and t2 < t1
    assert timer.sum() == pytest.approx(t1 + t2)
    assert timer.avg() == pytest.approx((t1 + t2) / 2)
    assert timer.cumsum() == pytest.approx([t1, t1 + t2])
    metric = d2l.Accumulator(3)
    metric.add(1, nd.array([2.0]).sum(), np.float32(3))
    metric.add(1, 2, 3)
    assert metric.data == [2.0, 4.0, 6.0] and metric[1] == 4.0
    metric.reset()
    assert metric.data == [0.0, 0.0, 0.0]


def test_benchmark_prints_its_time(capsys):
    """The classic book's format by position, the second edition's by
    ``description=``."""
    with d2l.Benchmark('Run on CPU.'):
        time.sleep(0.01)
    out = capsys.readouterr().out
    assert re.fullmatch(r'Run on CPU\. time: \d+\.\d{4} sec\n', out), out
    assert float(out.split()[-2]) >= 0.009
    with d2l.Benchmark():
        pass
    assert re.fullmatch(r'time: \d+\.\d{4} sec\n', capsys.readouterr().out)
    with d2l.Benchmark(prefix='p'):
        pass
    assert capsys.readouterr().out.startswith('p time: ')
    with d2l.Benchmark(description='mlp'):
        pass
    out = capsys.readouterr().out
    assert re.fullmatch(r'mlp: \d+\.\d{4} sec\n', out), out


def test_benchmark_quiet_keeps_its_time(capsys):
    with d2l.Benchmark(quiet=True) as t:
        time.sleep(0.01)
    assert capsys.readouterr().out == ''
    assert t.time >= 0.009


def test_table_aligns_numbers_right_and_text_left():
    t = d2l.table(['devices', 'images/s', 'speed-up'],
                  [('cpu(0)', '4,543', 1), ('cpu(0)+cpu(1)', '5,889', '1.30x')])
    assert t.align == 'lrr'
    assert repr(t).splitlines() == ['devices        images/s  speed-up',
                                    'cpu(0)            4,543         1',
                                    'cpu(0)+cpu(1)     5,889     1.30x']
    html = t._repr_html_()
    assert html.count('<tr>') == 3 and html.count('text-align: right') == 6
    assert '<th>devices</th>' in html and '<td>cpu(0)</td>' in html


def test_table_a_mixed_column_stays_left_and_align_overrides():
    t = d2l.table(['', 'time'], [('1 process', '7.3'), ('worker 0', '<b>')])
    assert t.align == 'll'
    assert '&lt;b&gt;' in t._repr_html_()             # cells are escaped
    assert d2l.table(['a', 'b'], [('1', 'x')], align='lr').align == 'lr'


def test_table_says_what_is_wrong():
    with pytest.raises(ValueError, match='a row has 1 cells, the header 2'):
        d2l.table(['a', 'b'], [('1',)])
    with pytest.raises(ValueError, match="align='lx'"):
        d2l.table(['a', 'b'], [('1', '2')], align='lx')


def test_animator_in_a_script(capsys):
    animator = d2l.Animator(xlabel='epoch', xlim=[1, 3],
                            legend=['train loss', 'train acc', 'test acc'])
    for epoch in range(3):
        animator.add(epoch + 0.5, (1.0 / (epoch + 1), 0.5 + 0.1 * epoch, None))
        animator.add(epoch + 1, (None, None, 0.4 + 0.1 * epoch))
    ax = animator.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 3
    np.testing.assert_allclose(lines[0].get_xdata(), [0.5, 1.5, 2.5])
    np.testing.assert_allclose(lines[0].get_ydata(), [1.0, 0.5, 1 / 3])
    np.testing.assert_allclose(lines[2].get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(lines[2].get_ydata(), [0.4, 0.5, 0.6])
    assert lines[1].get_linestyle() == '--'            # fmts 'm--'
    assert ax.get_xlabel() == 'epoch' and ax.get_xlim() == (1, 3)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == \
        ['train loss', 'train acc', 'test acc']
    assert capsys.readouterr().out == ''               # nothing printed headless
    animator.fig.canvas.draw()                          # renders with Agg


def test_animator_in_a_notebook_displays_then_clears(monkeypatch):
    from IPython import display
    calls = []
    monkeypatch.setattr(d2l.plotting, '_in_notebook', lambda: True)
    monkeypatch.setattr(display, 'display', lambda obj: calls.append(('show', obj)))
    monkeypatch.setattr(display, 'clear_output',
                        lambda wait=False: calls.append(('clear', wait)))
    animator = d2l.Animator(legend=['a'], nrows=1, ncols=2, figsize=(4, 2))
    animator.add(1, 2)
    animator.add(2, 3)
    assert calls == [('show', animator.fig), ('clear', True)] * 2
    assert len(animator.axes) == 2


def test_plot_helpers():
    d2l.set_figsize((2, 1.5))
    assert tuple(d2l.plt.rcParams['figure.figsize']) == (2, 1.5)
    x = nd.arange(5)
    d2l.plot(x, [x * 2, x ** 2], 'x', 'f(x)', legend=['2x', 'x^2'])
    lines = d2l.plt.gca().get_lines()
    np.testing.assert_allclose(lines[1].get_ydata(), np.arange(5) ** 2)
    d2l.use_svg_display()                     # a no-op outside Jupyter


def test_devices():
    assert d2l.try_gpu(99) == mx.cpu()
    gpus = d2l.try_all_gpus()
    if mx.num_gpus():
        assert gpus == [mx.gpu(i) for i in range(mx.num_gpus())]
    else:
        assert gpus == [mx.cpu()] and d2l.try_gpu() == mx.cpu()


def test_accuracy_and_evaluate():
    y_hat = nd.array([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5], [0.9, 0.05, 0.05]])
    y = nd.array([2, 2, 1], dtype='int32')
    assert d2l.accuracy(y_hat, y) == 2.0
    assert d2l.accuracy(nd.array([1, 2, 3]), nd.array([1, 0, 3])) == 2.0
    X = nd.arange(20).reshape((10, 2))
    labels = nd.array(np.arange(10) % 2, dtype='int32')
    loader = d2l.load_array((X, labels), 4, is_train=False)

    def net(x):            # predicts class 1 for every example
        n, c = x.shape[0], x.context
        return nd.concat(nd.zeros((n, 1), ctx=c), nd.ones((n, 1), ctx=c), dim=1)
    assert d2l.evaluate_accuracy(net, loader) == pytest.approx(0.5)
    assert d2l.evaluate_accuracy_gpu(net, loader, mx.cpu(1)) == pytest.approx(0.5)


def test_linear_regression_from_scratch():
    """d2l 3.2 with sgd, linreg, squared_loss, synthetic_data, load_array."""
    true_w, true_b = nd.array([2, -3.4]), 4.2
    features, labels = d2l.synthetic_data(true_w, true_b, 1000)
    assert features.shape == (1000, 2) and labels.shape == (1000, 1)
    w = nd.random.normal(0, 0.01, (2, 1))
    b = nd.zeros(1)
    w.attach_grad()
    b.attach_grad()
    for epoch in range(3):
        for X, y in d2l.load_array((features, labels), 10):
            with autograd.record():
                ls = d2l.squared_loss(d2l.linreg(X, w, b), y)
            ls.backward()
            d2l.sgd([w, b], 0.03, 10)
    np.testing.assert_allclose(w.asnumpy().ravel(), [2, -3.4], atol=5e-3)
    assert abs(b.asscalar() - 4.2) < 5e-3


def test_fashion_mnist_helpers(fashion_mnist_dir):
    assert d2l.get_fashion_mnist_labels(nd.array([0, 9, 3])) == \
        ['t-shirt', 'ankle boot', 'dress']
    train_iter, test_iter = d2l.load_data_fashion_mnist(256, root=fashion_mnist_dir)
    assert len(train_iter) == 235 and len(test_iter) == 40
    X, y = next(iter(test_iter))
    assert X.shape == (256, 1, 28, 28) and X.dtype == np.float32
    assert y.dtype == np.int32 and 0 <= X.asnumpy().min() <= X.asnumpy().max() <= 1
    _, test64 = d2l.load_data_fashion_mnist(32, resize=64, root=fashion_mnist_dir)
    X64, _ = next(iter(test64))
    assert X64.shape == (32, 1, 64, 64)
    axes = d2l.show_images(X.squeeze(axis=1)[:6], 2, 3,
                           titles=d2l.get_fashion_mnist_labels(y[:6]))
    assert len(axes) == 6 and axes[0].get_title() == \
        d2l.get_fashion_mnist_labels(y[:1])[0]
    from d2lmini.gluon.data.vision import FashionMNIST
    Xr, yr = FashionMNIST(root=fashion_mnist_dir, train=False)[:4]
    assert len(d2l.show_images(Xr, 1, 4)) == 4       # (H, W, 1) images too


def test_lenet_from_raw_ops():
    ctx = mx.current_context()
    params = d2l.get_lenet_params(ctx)
    assert [p.shape for p in params] == [
        (20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,),
        (128, 10), (10,)]
    assert abs(float(params[4].asnumpy().std()) - 0.01) < 0.001
    copies = d2l.get_params(params, mx.cpu(1))
    assert copies[0].context == mx.cpu(1) and copies[0].grad is not None
    np.testing.assert_array_equal(copies[2].asnumpy(), params[2].asnumpy())
    X = nd.random.uniform(shape=(2, 1, 28, 28), ctx=ctx)
    with standin_ops():
        with autograd.record():
            out = d2l.lenet(X, params)
            loss = (out ** 2).sum()
        loss.backward()
    assert out.shape == (2, 10)
    assert all(float(nd.abs(p.grad).sum().asscalar()) > 0 for p in params[::2])


@pytest.mark.parametrize('builder,shapes', [
    (d2l.lenet_classic, [(6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,), (120, 400),
                         (120,), (84, 120), (84,), (10, 84), (10,)]),
    (d2l.lenet_multigpu, [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,),
                          (128, 800), (128,), (10, 128), (10,)]),
])
def test_lenet_blocks(builder, shapes):
    net = builder()
    net.initialize()
    with standin_ops():
        out = net(nd.random.uniform(shape=(2, 1, 28, 28)))
    assert out.shape == (2, 10)
    assert [p.shape for p in net.collect_params().values()] == shapes


def test_train_ch6_on_a_small_subset(fashion_mnist_dir, capsys):
    from d2lmini.gluon.data import DataLoader
    from d2lmini.gluon.data.vision import FashionMNIST, transforms
    trans = transforms.ToTensor()
    train = FashionMNIST(root=fashion_mnist_dir, train=True).take(512)
    test = FashionMNIST(root=fashion_mnist_dir, train=False).take(256)
    train_iter = DataLoader(train.transform_first(trans), 64, shuffle=True)
    test_iter = DataLoader(test.transform_first(trans), 128)
    net = d2l.lenet_classic()
    with standin_ops():
        d2l.train_ch6(net, train_iter, test_iter, 2, 0.9, mx.cpu(0))
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r'loss \d+\.\d{3}, train acc \d\.\d{3}, test acc \d\.\d{3}',
                        out[-2]), out
    assert re.fullmatch(r'\d+\.\d examples/sec on cpu\(0\)', out[-1]), out
    fig = d2l.plt.gcf()
    lines = fig.axes[0].get_lines()
    assert len(lines) == 3                                 # loss, train acc, test acc
    np.testing.assert_allclose(lines[2].get_xdata(), [1, 2])
    # 8 batches an epoch: a point every 8 // 5 = 1 batches, as in d2l.
    np.testing.assert_allclose(lines[0].get_xdata(), np.arange(1, 17) / 8)


# === the classic book's helpers (d2lzh) ======================================
def _two_class_loader():
    X = nd.arange(20).reshape((10, 2))
    labels = nd.array(np.arange(10) % 2, dtype='int32')
    return d2l.load_array((X, labels), 4, is_train=False)


def _always_one(x):             # predicts class 1 for every example
    n, c = x.shape[0], x.context
    return nd.concat(nd.zeros((n, 1), ctx=c), nd.ones((n, 1), ctx=c), dim=1)


def test_evaluate_accuracy_each_edition_in_its_module():
    loader = _two_class_loader()
    assert d2l.evaluate_accuracy(_always_one, loader) == pytest.approx(0.5)
    assert d2l.evaluate_accuracy(net=_always_one, data_iter=loader) == \
        pytest.approx(0.5)
    # the first edition's: (data_iter, net, ctx), ctx a Context, a list,
    # or left out
    assert classic.evaluate_accuracy(loader, _always_one) == pytest.approx(0.5)
    assert classic.evaluate_accuracy(loader, _always_one, mx.cpu(1)) == \
        pytest.approx(0.5)
    seen = []

    def net(x):
        seen.append(x.context)
        return _always_one(x)
    acc = classic.evaluate_accuracy(loader, net, ctx=[mx.cpu(0), mx.cpu(1)])
    assert acc == pytest.approx(0.5)
    # batches of 4, 4, 2 each split in two halves over the two devices
    assert seen == [mx.cpu(0), mx.cpu(1)] * 3
    with pytest.raises(TypeError, match='evaluate_accuracy'):
        d2l.evaluate_accuracy(loader)
    # no guessing: the first edition's call form is refused, with where it is
    with pytest.raises(TypeError, match='d2lmini.d2l.classic.evaluate_accuracy'):
        d2l.evaluate_accuracy(loader, _always_one)


def test_try_gpu_falls_back_on_mxnet_error(monkeypatch):
    """The book's try_gpu: allocate on gpu(i), fall back when that raises."""
    from d2lmini import context as ctxmod
    if mx.num_gpus():
        assert d2l.try_gpu() == mx.gpu(0)
    else:
        with pytest.raises(mx.base.MXNetError):
            nd.zeros((1,), ctx=mx.gpu(0)).wait_to_read()
        assert d2l.try_gpu() == mx.cpu() and d2l.try_all_gpus() == [mx.cpu()]
    # With two working "GPUs" (cpu(5), cpu(6) standing in) both are found.
    fake = {0: mx.cpu(5), 1: mx.cpu(6)}

    def gpu(i=0):
        if i in fake:
            return fake[i]
        raise mx.base.MXNetError(f'no gpu({i})')
    monkeypatch.setattr(ctxmod, 'gpu', gpu)
    assert d2l.try_all_gpus() == [mx.cpu(5), mx.cpu(6)]
    assert d2l.try_gpu() == mx.cpu(5) and d2l.try_gpu(2) == mx.cpu()


def test_data_iter_and_get_batch():
    features = nd.arange(30).reshape((15, 2))
    labels = nd.arange(15)
    batches = list(d2l.data_iter(4, features, labels))
    assert [b[0].shape for b in batches] == [(4, 2)] * 3 + [(3, 2)]
    seen = np.concatenate([y.asnumpy() for _, y in batches])
    assert sorted(seen.tolist()) == list(range(15))        # a permutation
    for X, y in batches:                                     # rows stay paired
        np.testing.assert_array_equal(X.asnumpy()[:, 0], 2 * y.asnumpy())
    Xs, ys, n = classic._get_batch(
        (nd.ones((4, 3)), nd.array([0, 1, 1, 0], dtype='int32')),
        [mx.cpu(0), mx.cpu(1)])
    assert n == 4 and [x.shape for x in Xs] == [(2, 3), (2, 3)]
    assert [y.context for y in ys] == [mx.cpu(0), mx.cpu(1)]
    assert ys[0].dtype == np.float32                       # the features' dtype


def test_residual_and_resnet18():
    blk = d2l.Residual(3)
    blk.initialize()
    X = nd.random.uniform(shape=(4, 3, 6, 6))
    assert blk(X).shape == (4, 3, 6, 6)
    blk = d2l.Residual(6, use_1x1conv=True, strides=2)
    blk.initialize()
    assert blk(X).shape == (4, 6, 3, 3)
    assert isinstance(blk, mx.gluon.nn.Block)
    assert d2l.Residual is d2l.Residual                    # built once
    net = d2l.resnet18(10)
    net.initialize()
    assert net(nd.random.uniform(shape=(2, 1, 28, 28))).shape == (2, 10)
    # 1 conv + 8 residual blocks (2 convs each, 3 with a 1x1) + dense
    convs = [p for p in net.collect_params() if p.endswith('weight')
             and len(net.collect_params()[p].shape) == 4]
    assert len(convs) == 1 + 16 + 3


def _small_fashion(fashion_mnist_dir, n_train=256, n_test=128, bs=64):
    from d2lmini.gluon.data import DataLoader
    from d2lmini.gluon.data.vision import FashionMNIST, transforms
    trans = transforms.ToTensor()
    train = FashionMNIST(root=fashion_mnist_dir, train=True).take(n_train)
    test = FashionMNIST(root=fashion_mnist_dir, train=False).take(n_test)
    return (DataLoader(train.transform_first(trans), bs, shuffle=True),
            DataLoader(test.transform_first(trans), bs))


def test_the_first_edition_has_a_namespace_of_its_own():
    """classic is what ``import d2lzh as d2l`` gives the classic chapters;
    its names that mean one thing are d2l's too, the two-meaning ones are
    the course's in d2l."""
    assert all(hasattr(classic, name) for name in classic.__all__)
    for name in ('train_ch3', 'train_ch5', 'train', 'data_iter', 'resnet18',
                 'Residual', 'semilogy', 'show_fashion_mnist'):
        assert getattr(d2l, name) is getattr(classic, name), name
    for name in ('try_gpu', 'load_data_fashion_mnist', 'Benchmark', 'sgd'):
        assert getattr(classic, name) is getattr(d2l, name), name
    for name in ('evaluate_accuracy', 'show_images'):
        assert getattr(classic, name) is not getattr(d2l, name), name
    assert classic.Residual.__module__ == 'd2lmini.d2l.classic'
    assert classic.plt is d2l.plt
    assert not hasattr(classic, 'train_ch6')            # not the first edition's


def test_train_ch3_softmax_from_scratch(fashion_mnist_dir, capsys):
    """The classic chapter 3 loop: sgd on params, accuracy going up."""
    train_iter, test_iter = _small_fashion(fashion_mnist_dir, 512, 256)
    # the classic chapter 3 trains on the host, where the DataLoader's batches are
    W = nd.random.normal(scale=0.01, shape=(784, 10), ctx=mx.cpu(0))
    b = nd.zeros(10, ctx=mx.cpu(0))
    W.attach_grad()
    b.attach_grad()

    def net(X):
        return nd.softmax(nd.dot(X.reshape((-1, 784)), W) + b)

    def cross_entropy(y_hat, y):
        return -nd.pick(y_hat, y).log()
    d2l.train_ch3(net, train_iter, test_iter, cross_entropy, 3, 64, [W, b], 0.1)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    pat = r'epoch (\d), loss (\d+\.\d{4}), train acc (\d\.\d{3}), test acc (\d\.\d{3})'
    rows = [re.fullmatch(pat, line) for line in out]
    assert all(rows), out
    assert float(rows[-1].group(2)) < float(rows[0].group(2))
    assert float(rows[-1].group(4)) > 0.5          # 10 classes: chance is 0.1


def test_train_ch5_classic_lenet(fashion_mnist_dir, capsys):
    train_iter, test_iter = _small_fashion(fashion_mnist_dir)
    net = d2l.lenet_multigpu()
    ctx = mx.cpu(1)
    net.initialize(ctx=ctx, init=mx.init.Xavier())
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.1})
    with standin_ops():
        d2l.train_ch5(net, train_iter, test_iter, 64, trainer, ctx, 2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'training on cpu(1)'
    pat = (r'epoch \d, loss \d+\.\d{4}, train acc \d\.\d{3}, '
           r'test acc \d\.\d{3}, time \d+\.\d sec')
    assert len(out) == 3 and all(re.fullmatch(pat, line) for line in out[1:]), out


def test_train_multi_context(fashion_mnist_dir, capsys):
    train_iter, test_iter = _small_fashion(fashion_mnist_dir, 128, 64, 32)
    net = mx.gluon.nn.Dense(10)
    ctx = [mx.cpu(0), mx.cpu(1)]
    net.initialize(ctx=ctx)
    trainer = mx.gluon.Trainer(net.collect_params(), 'sgd',
                               {'learning_rate': 0.1})
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    d2l.train(train_iter, test_iter, net, loss, trainer, ctx, 1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'training on [cpu(0), cpu(1)]'
    assert re.fullmatch(r'epoch 1, loss \d+\.\d{4}, train acc \d\.\d{3}, '
                        r'test acc \d\.\d{3}, time \d+\.\d sec', out[1]), out


def test_train_reports_the_epoch_means_on_two_contexts(capsys):
    """d2l.train keeps its sums on the devices and reads them once an epoch:
    the loss and the train accuracy it prints are those of a loop that reads
    every batch, with the same weights, batches and updates."""
    rng = np.random.default_rng(0)
    batches = [(nd.array(rng.standard_normal((16, 6), dtype=np.float32)),
                nd.array(rng.integers(0, 4, 16).astype(np.int32)))
               for _ in range(3)]
    ctx = [mx.cpu(0), mx.cpu(1)]
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()

    def make():
        mx.random.seed(3)
        net = mx.gluon.nn.Dense(4)
        net.initialize(mx.init.Normal(0.5), ctx=ctx)
        return net, mx.gluon.Trainer(net.collect_params(), 'sgd',
                                     {'learning_rate': 0.5})
    net, trainer = make()
    d2l.train(batches, batches[:1], net, loss, trainer, ctx, 1)
    out = capsys.readouterr().out.splitlines()
    m = re.fullmatch(r'epoch 1, loss (\d+\.\d{4}), train acc (\d\.\d{3}), '
                     r'test acc \d\.\d{3}, time \d+\.\d sec', out[1])
    assert m, out
    ref, ref_trainer = make()
    l_sum = correct = 0.0
    for X, y in batches:                       # the book's loop, read each batch
        Xs = mx.gluon.utils.split_and_load(X, ctx)
        ys = mx.gluon.utils.split_and_load(y.astype('float32'), ctx)
        with autograd.record():
            y_hats = [ref(x) for x in Xs]
            ls = [loss(h, t) for h, t in zip(y_hats, ys)]
        for l in ls:
            l.backward()
        ref_trainer.step(X.shape[0])
        l_sum += sum(float(l.sum().asscalar()) for l in ls)
        correct += sum(float((h.argmax(axis=1) == t).sum().asscalar())
                       for h, t in zip(y_hats, ys))
    assert float(m.group(1)) == pytest.approx(l_sum / 48, abs=1e-4)
    assert float(m.group(2)) == pytest.approx(correct / 48, abs=1e-3)
    np.testing.assert_allclose(net.weight.data(ctx[1]).asnumpy(),
                               ref.weight.data(ctx[1]).asnumpy(), rtol=1e-6)


def test_split_batch_splits_features_and_labels_over_devices():
    X = nd.arange(24).reshape((6, 4))
    y = nd.arange(6)
    devices = [mx.cpu(0), mx.cpu(1)]
    Xs, ys = d2l.split_batch(X, y, devices)
    assert [x.context for x in Xs] == devices and [t.context for t in ys] == devices
    np.testing.assert_array_equal(np.concatenate([x.asnumpy() for x in Xs]), X.asnumpy())
    np.testing.assert_array_equal(ys[1].asnumpy(), [3, 4, 5])
    with pytest.raises(ValueError, match='X has 6 examples.*y has 5'):
        d2l.split_batch(X, nd.arange(5), devices)
    with pytest.raises(ValueError, match='cannot be evenly split into 2 slices'):
        d2l.split_batch(X[:1], y[:1], devices)


def test_classic_plot_helpers():
    d2l.semilogy(range(1, 4), [1, 10, 100], 'epochs', 'loss',
                 range(1, 4), [2, 20, 200], ['train', 'test'])
    ax = d2l.plt.gca()
    assert ax.get_yscale() == 'log' and ax.get_xlabel() == 'epochs'
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [2, 20, 200])
    assert ax.get_lines()[1].get_linestyle() == ':'
    imgs = [nd.ones((1, 28, 28)) * i for i in range(3)]
    figs = d2l.show_fashion_mnist(imgs, ['a', 'b', 'c'])
    assert [f.get_title() for f in figs] == ['a', 'b', 'c']
    assert figs[2].get_images()[0].get_array().shape == (28, 28)


def test_show_images_classic_scale_argument():
    imgs = [nd.ones((4, 4)) * i for i in range(4)]
    axes = classic.show_images(imgs, 2, 2, 0.5)     # classic: scale fourth
    assert len(axes) == 4
    assert tuple(axes[0].figure.get_size_inches()) == (1.0, 1.0)
    with pytest.raises(TypeError, match='d2lmini.d2l.classic.show_images'):
        d2l.show_images(imgs, 2, 2, 0.5)            # the course's: titles


def test_images_per_sec_times_each_step_in_turns():
    calls = []

    def slow():
        calls.append('slow')
        time.sleep(0.004)

    def fast():
        calls.append('fast')
    slow_ips, fast_ips = d2l.images_per_sec([slow, fast], 100, num_rounds=2,
                                            num_repeats=3)
    # a warm-up call each, then the two take turns, round after round
    assert calls == ['slow', 'fast'] + (['slow'] * 3 + ['fast'] * 3) * 2
    assert slow_ips <= 100 / 0.004 and fast_ips > slow_ips


@pytest.mark.parametrize('builder', [d2l.lenet_multigpu, d2l.lenet_classic])
def test_torch_twin_computes_what_the_gluon_net_computes(builder):
    torch = pytest.importorskip('torch')
    net = builder()
    net.initialize(mx.init.Xavier())
    X = nd.random.uniform(shape=(4, 1, 28, 28))
    twin = d2l.torch_twin(net, X)                 # checks the outputs itself
    kinds = [type(m).__name__ for m in twin]
    assert kinds.count('Conv2d') == 2 and kinds.count('Flatten') == 1
    assert kinds.count('Linear') == sum(type(b).__name__ == 'Dense' for b in net)
    y = nd.array([0, 1, 2, 3])
    train_step, predict = d2l.torch_steps(twin, X, y, lr=0.1)
    before = twin[0].weight.detach().clone()
    predict()
    assert torch.equal(twin[0].weight, before)    # inference changes nothing
    train_step()
    assert not torch.equal(twin[0].weight, before)


def test_torch_twin_refuses_a_layer_it_does_not_know():
    pytest.importorskip('torch')
    from d2lmini.gluon import nn
    net = nn.Sequential()
    net.add(nn.Dense(4), nn.BatchNorm())
    net.initialize()
    X = nd.ones((2, 3))
    net(X)
    with pytest.raises(ValueError, match='no PyTorch twin for a BatchNorm'):
        d2l.torch_twin(net, X)


def test_torch_twin_is_none_without_pytorch(monkeypatch):
    monkeypatch.setitem(sys.modules, 'torch', None)   # import torch fails
    net = d2l.lenet_multigpu()
    net.initialize()
    assert d2l.torch_twin(net, nd.ones((1, 1, 28, 28))) is None


def test_show_trace_puts_the_legend_beside_the_bars():
    a = nd.ones((64, 64))
    with mx.engine.Trace() as trace:
        nd.dot(a, a)
        a + 1
    ax = d2l.show_trace(trace)
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.texts] == sorted(
        {name for _, name, _, _ in trace.spans()},
        key=lambda n: (-sum(e - s for _, m, s, e in trace.spans() if m == n), n))
    assert legend.get_bbox_to_anchor().transformed(ax.transAxes.inverted()).x0 >= 1
    assert all((bars.get_edgecolor() == [1, 1, 1, 1]).all() for bars in ax.collections)
    d2l.plt.close('all')


def test_median_time_waits_for_the_engine_and_takes_the_median(monkeypatch):
    ticks = iter([0.0, 1.0, 10.0, 12.0, 20.0, 20.5])  # calls of 1, 2, 0.5 s
    monkeypatch.setattr(d2l.speed, 'time', types.SimpleNamespace(
        perf_counter=lambda: next(ticks)))
    waited = []
    monkeypatch.setattr(nd, 'waitall', lambda: waited.append(1))
    calls = []
    assert d2l.median_time(lambda: calls.append(1), 3) == 1.0
    assert len(calls) == 4 and len(waited) == 4       # a warm-up, then 3


def test_num_parameters_counts_from_the_graph_what_a_forward_pass_allocates():
    """d2l.num_parameters agrees with the parameters a real forward pass
    makes (BatchNorm's running statistics left out), and allocates none."""
    from d2lmini.gluon.model_zoo import vision
    net = vision.get_model('mobilenetv2_0.25', classes=7)
    n = d2l.num_parameters(net, (1, 3, 64, 64))
    assert all(p._data is None for p in net.collect_params().values())
    net.initialize()
    net(mx.nd.ones((1, 3, 64, 64)))
    want = sum(p.data().size for p in net.collect_params().values()
               if p.grad_req != 'null')
    assert n == want > 0
    # MXNet 1.9.1's own DenseNet-121 (its parameter shapes, a fixture it wrote)
    import gzip, json, os
    path = os.path.join(os.path.dirname(__file__), 'fixtures', 'model_zoo',
                        'param_shapes.json.gz')
    with gzip.open(path) as f:
        _, shapes = json.load(f)['densenet121']
    mxnet = sum(int(np.prod(shape)) for _, name, shape in shapes
                if not name.endswith(('running_mean', 'running_var')))
    assert d2l.num_parameters(vision.get_model('densenet121'),
                              (1, 3, 224, 224)) == mxnet
