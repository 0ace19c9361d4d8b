"""The chapters' networks: LeNet-5 as in the book (:func:`lenet_classic`),
and the multi-device chapters' LeNet, from raw operators
(:func:`get_lenet_params`, :func:`get_params`, :func:`lenet`) and as
Gluon layers (:func:`lenet_multigpu`); and :func:`num_parameters`, a network's size
without allocating it.
"""
from .. import context
from .. import ndarray as nd


def lenet_classic():
    """LeNet-5 as in chapter 6 (sigmoid activations, average pooling)."""
    from ..gluon import nn
    net = nn.Sequential()
    net.add(nn.Conv2D(channels=6, kernel_size=5, padding=2, activation='sigmoid'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=16, kernel_size=5, activation='sigmoid'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(120, activation='sigmoid'),
            nn.Dense(84, activation='sigmoid'),
            nn.Dense(10))
    return net


def get_lenet_params(ctx=None, scale=0.01):
    """The multi-GPU chapter's LeNet parameters on ``ctx``, with gradients.

    ``[W1, b1, W2, b2, W3, b3, W4, b4]``: weights ~ N(0, scale^2), zero
    biases.  For several devices, make them once and copy them with
    :func:`get_params`, so every device starts from the same values.
    """
    ctx = ctx or context.current_context()
    shapes = [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,),
              (128, 10), (10,)]
    params = []
    for shape in shapes:
        if len(shape) == 1:
            params.append(nd.zeros(shape, ctx=ctx))
        else:
            params.append(nd.random.normal(0, scale, shape=shape, ctx=ctx))
    for p in params:
        p.attach_grad()
    return params


def get_params(params, device):
    """Copy ``params`` to ``device`` and attach gradients."""
    new_params = [p.copyto(device) for p in params]
    for p in new_params:
        p.attach_grad()
    return new_params


def lenet(X, params):
    """The multi-GPU chapter's LeNet, from raw operators."""
    h1_conv = nd.Convolution(data=X, weight=params[0], bias=params[1],
                             kernel=(3, 3), num_filter=20)
    h1_activation = nd.relu(h1_conv)
    h1 = nd.Pooling(data=h1_activation, pool_type='avg', kernel=(2, 2),
                    stride=(2, 2))
    h2_conv = nd.Convolution(data=h1, weight=params[2], bias=params[3],
                             kernel=(5, 5), num_filter=50)
    h2_activation = nd.relu(h2_conv)
    h2 = nd.Pooling(data=h2_activation, pool_type='avg', kernel=(2, 2),
                    stride=(2, 2))
    h2 = h2.reshape((h2.shape[0], -1))
    h3_linear = nd.dot(h2, params[4]) + params[5]
    h3 = nd.relu(h3_linear)
    y_hat = nd.dot(h3, params[6]) + params[7]
    return y_hat


def lenet_multigpu(hybrid=False):
    """The multi-GPU chapter's LeNet as a Gluon network (same layers);
    ``hybrid=True``: a HybridSequential, which ``hybridize()`` traces whole."""
    from ..gluon import nn
    net = nn.HybridSequential() if hybrid else nn.Sequential()
    net.add(nn.Conv2D(channels=20, kernel_size=3, activation='relu'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(channels=50, kernel_size=5, activation='relu'),
            nn.AvgPool2D(pool_size=2, strides=2),
            nn.Dense(128, activation='relu'),
            nn.Dense(10))
    return net


def num_parameters(net, data_shape):
    """How many parameters the HybridBlock ``net`` has (those with
    gradients: BatchNorm's running statistics are not counted) for inputs
    of ``data_shape``, without allocating them: the shapes are inferred on
    the network's graph, ``net(mx.sym.var('data'))`` (chapter 14).

    >>> from d2lmini.gluon.model_zoo import vision
    >>> num_parameters(vision.resnet18_v1(), (1, 3, 224, 224))
    11689512
    """
    import numpy as np
    from .. import symbol
    out = net(symbol.var('data'))
    shapes, _, _ = out.infer_shape(data=tuple(data_shape))
    return sum(int(np.prod(shape)) for name, shape in
               zip(out.list_arguments(), shapes) if name != 'data')
