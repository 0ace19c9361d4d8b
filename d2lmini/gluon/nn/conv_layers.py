"""Convolution and pooling layers (1-D, 2-D, 3-D), MXNet 1.x semantics.

``Conv2D(channels, kernel_size, ...)`` holds a weight of shape
(channels, in_channels // groups, kh, kw) for the default 'NCHW' layout; a
missing ``in_channels`` is read from the first input.  The transposed
convolutions (``Conv2DTranspose``...) hold (in_channels, channels // groups,
kh, kw).  Each layer calls one ``nd`` operator (``F.Convolution``,
``F.Deconvolution``, ``F.Pooling``, ``F.pad``) with MXNet's keywords.
Channels-last layouts (NWC, NHWC, NDHWC) are accepted everywhere.

Examples
--------
>>> conv = nn.Conv2D(6, kernel_size=5, padding=2, activation='sigmoid')
>>> conv.initialize(); conv(nd.ones((1, 1, 28, 28))).shape
(1, 6, 28, 28)
"""
import numbers

from ..block import HybridBlock
from .basic_layers import Activation

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose',
           'Conv3DTranspose', 'ReflectionPad2D', 'MaxPool1D', 'MaxPool2D', 'MaxPool3D',
           'AvgPool1D', 'AvgPool2D', 'AvgPool3D', 'GlobalMaxPool1D', 'GlobalMaxPool2D',
           'GlobalMaxPool3D', 'GlobalAvgPool1D', 'GlobalAvgPool2D', 'GlobalAvgPool3D']

_DEFAULT_LAYOUT = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}


def _tuple(value, n, what):
    """``value`` (an int or a sequence of n ints) as a tuple of n ints."""
    if isinstance(value, numbers.Integral):
        return (int(value),) * n
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f'{what} must be an int or a sequence of {n} ints, '
                         f'got {value}')
    return value


def _check_layout(layout, n):
    allowed = {1: ('NCW', 'NWC'), 2: ('NCHW', 'NHWC'), 3: ('NCDHW', 'NDHWC')}[n]
    if layout not in allowed:
        raise ValueError(f'layout must be one of {allowed}, got {layout!r}')


class _Conv(HybridBlock):
    """N-D convolution (``F.Convolution``) or transposed convolution
    (``op_name='Deconvolution'``, with ``adj``), plus an optional activation."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups,
                 layout, in_channels=0, activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros',
                 op_name='Convolution', adj=None, **kwargs):
        super().__init__(**kwargs)
        self._op_name = op_name
        n = len(kernel_size)
        _check_layout(layout, n)
        with self.name_scope():
            self._channels = int(channels)
            self._in_channels = in_channels
            self._groups = int(groups)
            self._layout = layout
            self._kwargs = {
                'kernel': kernel_size, 'stride': _tuple(strides, n, 'strides'),
                'dilate': _tuple(dilation, n, 'dilation'),
                'pad': _tuple(padding, n, 'padding'), 'num_filter': self._channels,
                'num_group': self._groups, 'no_bias': not use_bias}
            if adj is not None:
                self._kwargs['adj'] = self.out_pad = _tuple(adj, n, 'output_padding')
            if layout != _DEFAULT_LAYOUT[n]:
                self._kwargs['layout'] = layout
            if channels % groups:
                raise ValueError(f'channels ({channels}) must be divisible by groups '
                                 f'({groups})')
            self.weight = self.params.get('weight', shape=self._weight_shape(in_channels),
                                          init=weight_initializer,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(channels,),
                                            init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            if activation is not None:
                self.act = Activation(activation, prefix=activation + '_')
            else:
                self.act = None
            # 2-D: one fused op (F._conv_act), same values, one pass less
            self._fused_act = activation is not None and n == 2 and \
                'layout' not in self._kwargs and op_name == 'Convolution'

    def _weight_shape(self, in_channels):
        if in_channels % self._groups:
            raise ValueError(f'{type(self).__name__}: input channels ({in_channels}) '
                             f'must be divisible by groups ({self._groups})')
        k = self._kwargs['kernel']
        if self._op_name == 'Deconvolution':       # (in, out/groups, *kernel)
            a, b = in_channels, self._channels // self._groups
        else:                                      # (out, in/groups, *kernel)
            a, b = self._channels, in_channels // self._groups
        if self._layout.index('C') == 1:
            return (a, b) + k
        return (a,) + k + (b,)

    def _alias(self):
        return 'conv'

    def infer_shape(self, x, *args):
        if x.ndim != len(self._layout):
            raise ValueError(f'{type(self).__name__} expects {len(self._layout)}-D '
                             f'input ({self._layout}), got shape {x.shape}')
        self.weight.shape = self._weight_shape(x.shape[self._layout.index('C')])

    def hybrid_forward(self, F, x, weight, bias=None):
        if self._fused_act:
            return F._conv_act(x, weight, bias, act_type=self.act._act_type, name='fwd',
                              **self._kwargs)
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name='fwd', **self._kwargs)
        else:
            out = op(x, weight, bias, name='fwd', **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        kw = self._kwargs
        n = len(kw['kernel'])
        s = f'kernel_size={kw["kernel"]}, stride={kw["stride"]}'
        if kw['pad'] != (0,) * n:
            s += f', padding={kw["pad"]}'
        if kw['dilate'] != (1,) * n:
            s += f', dilation={kw["dilate"]}'
        if kw.get('adj', (0,) * n) != (0,) * n:
            s += f', output_padding={kw["adj"]}'
        if kw['num_group'] != 1:
            s += f', groups={kw["num_group"]}'
        if self.bias is None:
            s += ', bias=False'
        if self.act:
            s += f', {self.act}'
        shape = self.weight.shape
        if self._op_name == 'Deconvolution':
            return f'{type(self).__name__}({shape[0] or None} -> {self._channels}, {s})'
        cin = shape[1] if self._layout.index('C') == 1 else shape[-1]
        return f'{type(self).__name__}({cin * self._groups or None} -> {shape[0]}, {s})'


class Conv1D(_Conv):
    """1-D convolution over (N, C, W) input."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1,
                 groups=1, layout='NCW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1, 'kernel_size'), strides,
                         padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over (N, C, H, W) input.

    Parameters
    ----------
    channels : int
        Output channels.
    kernel_size, strides, padding, dilation : int or (int, int)
    groups : int
        Split input and output channels into this many independent groups.
    in_channels : int
        Input channels; 0 (default) infers them from the first input.
    """

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, layout='NCHW', activation=None,
                 use_bias=True, weight_initializer=None, bias_initializer='zeros',
                 in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2, 'kernel_size'), strides,
                         padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over (N, C, D, H, W) input."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout='NCDHW', activation=None,
                 use_bias=True, weight_initializer=None, bias_initializer='zeros',
                 in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 3, 'kernel_size'), strides,
                         padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer, **kwargs)


class Conv1DTranspose(_Conv):
    """Transposed 1-D convolution over (N, C, W) input (``F.Deconvolution``):
    ``out_width = (width-1)*strides - 2*padding + dilation*(kernel_size-1) + 1
    + output_padding``."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0,
                 dilation=1, groups=1, layout='NCW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 1, 'kernel_size'), strides,
                         padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer,
                         op_name='Deconvolution', adj=output_padding, **kwargs)


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution over (N, C, H, W) input (``F.Deconvolution``),
    e.g. the upsampling layers of a fully convolutional network.

    ``out_height = (height-1)*strides[0] - 2*padding[0] + dilation[0]*
    (kernel_size[0]-1) + 1 + output_padding[0]``; likewise for the width.
    The weight is ``(in_channels, channels // groups, kh, kw)``.

    >>> up = nn.Conv2DTranspose(4, kernel_size=2, strides=2)
    >>> up.initialize(); up(nd.ones((1, 3, 5, 5))).shape
    (1, 4, 10, 10)
    """

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0),
                 output_padding=(0, 0), dilation=(1, 1), groups=1, layout='NCHW',
                 activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', in_channels=0, **kwargs):
        super().__init__(channels, _tuple(kernel_size, 2, 'kernel_size'), strides,
                         padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer,
                         op_name='Deconvolution', adj=output_padding, **kwargs)


class Conv3DTranspose(_Conv):
    """Transposed 3-D convolution over (N, C, D, H, W) input."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0),
                 output_padding=(0, 0, 0), dilation=(1, 1, 1), groups=1,
                 layout='NCDHW', activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer='zeros', in_channels=0,
                 **kwargs):
        super().__init__(channels, _tuple(kernel_size, 3, 'kernel_size'), strides,
                         padding, dilation, groups, layout, in_channels, activation,
                         use_bias, weight_initializer, bias_initializer,
                         op_name='Deconvolution', adj=output_padding, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the H and W axes of (N, C, H, W) input by reflection (the edge
    not repeated): ``padding`` is an int for all four sides, or MXNet's
    8-tuple ``pad_width`` (the first four 0).

    >>> nn.ReflectionPad2D(2)(nd.ones((1, 3, 4, 4))).shape
    (1, 3, 8, 8)
    """

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numbers.Integral):
            padding = (0, 0, 0, 0) + (int(padding),) * 4
        padding = tuple(int(p) for p in padding)
        if len(padding) != 8:
            raise ValueError(f'ReflectionPad2D: padding must be an int or 8 ints '
                             f'(pad_width of a 4-D array), got {padding}')
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode='reflect', pad_width=self._padding)

    def __repr__(self):
        return f'{type(self).__name__}(padding={self._padding})'


class _Pooling(HybridBlock):
    """Max/average pooling (``F.Pooling``)."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool,
                 pool_type, layout, count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        n = len(pool_size)
        _check_layout(layout, n)
        if strides is None:
            strides = pool_size
        self._kwargs = {
            'kernel': pool_size, 'stride': _tuple(strides, n, 'strides'),
            'pad': _tuple(padding, n, 'padding'), 'global_pool': global_pool,
            'pool_type': pool_type,
            'pooling_convention': 'full' if ceil_mode else 'valid'}
        if layout != _DEFAULT_LAYOUT[n]:
            self._kwargs['layout'] = layout
        if count_include_pad is not None:
            self._kwargs['count_include_pad'] = count_include_pad
        self._layout = layout

    def _alias(self):
        return 'pool'

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name='fwd', **self._kwargs)

    def __repr__(self):
        kw = self._kwargs
        return (f'{type(self).__name__}(size={kw["kernel"]}, stride={kw["stride"]}, '
                f'padding={kw["pad"]}, ceil_mode={kw["pooling_convention"] == "full"}'
                f', global_pool={kw["global_pool"]}, pool_type={kw["pool_type"]}, '
                f'layout={self._layout})')


class MaxPool1D(_Pooling):
    """Max pooling over (N, C, W) input."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW',
                 ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 1, 'pool_size'), strides, padding,
                         ceil_mode, False, 'max', layout, **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over (N, C, H, W) input; ``strides`` default to ``pool_size``.

    ``ceil_mode=True`` keeps a last, partial window (MXNet's 'full' convention).
    """

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout='NCHW',
                 ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 2, 'pool_size'), strides, padding,
                         ceil_mode, False, 'max', layout, **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over (N, C, D, H, W) input."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, layout='NCDHW',
                 ceil_mode=False, **kwargs):
        super().__init__(_tuple(pool_size, 3, 'pool_size'), strides, padding,
                         ceil_mode, False, 'max', layout, **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over (N, C, W) input."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout='NCW',
                 ceil_mode=False, count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 1, 'pool_size'), strides, padding,
                         ceil_mode, False, 'avg', layout, count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over (N, C, H, W) input; padded zeros count in the mean
    unless ``count_include_pad=False``."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCHW', count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 2, 'pool_size'), strides, padding,
                         ceil_mode, False, 'avg', layout, count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over (N, C, D, H, W) input."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False,
                 layout='NCDHW', count_include_pad=True, **kwargs):
        super().__init__(_tuple(pool_size, 3, 'pool_size'), strides, padding,
                         ceil_mode, False, 'avg', layout, count_include_pad, **kwargs)


class _GlobalPooling(_Pooling):
    """Pooling over the whole spatial extent: every spatial axis becomes 1."""
    _ndim, _pool_type = 2, 'avg'

    def __init__(self, layout=None, **kwargs):
        n = self._ndim
        super().__init__((1,) * n, None, 0, True, True, self._pool_type,
                         layout or _DEFAULT_LAYOUT[n], **kwargs)


class GlobalMaxPool1D(_GlobalPooling):
    """Max over the W axis: (N, C, W) -> (N, C, 1)."""
    _ndim, _pool_type = 1, 'max'


class GlobalMaxPool2D(_GlobalPooling):
    """Max over H and W: (N, C, H, W) -> (N, C, 1, 1)."""
    _ndim, _pool_type = 2, 'max'


class GlobalMaxPool3D(_GlobalPooling):
    """Max over D, H and W: (N, C, D, H, W) -> (N, C, 1, 1, 1)."""
    _ndim, _pool_type = 3, 'max'


class GlobalAvgPool1D(_GlobalPooling):
    """Mean over the W axis: (N, C, W) -> (N, C, 1)."""
    _ndim, _pool_type = 1, 'avg'


class GlobalAvgPool2D(_GlobalPooling):
    """Mean over H and W: (N, C, H, W) -> (N, C, 1, 1)."""
    _ndim, _pool_type = 2, 'avg'


class GlobalAvgPool3D(_GlobalPooling):
    """Mean over D, H and W: (N, C, D, H, W) -> (N, C, 1, 1, 1)."""
    _ndim, _pool_type = 3, 'avg'
