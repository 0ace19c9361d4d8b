"""Per-sample normalization layers: ``InstanceNorm`` and ``GroupNorm``
(``BatchNorm`` and ``LayerNorm`` live in :mod:`.basic_layers`).

Each calls one ``nd`` operator (``F.InstanceNorm``, ``F.GroupNorm``) with
MXNet 1.x's keywords; the statistics are the sample's own, so training and
prediction compute the same thing (no running statistics).
"""
from ..block import HybridBlock
from .basic_layers import _gamma_beta, _channels_from_input

__all__ = ['InstanceNorm', 'GroupNorm']


class InstanceNorm(HybridBlock):
    """Instance normalization (Ulyanov et al., 2016): each sample's each
    channel (``axis``) normalized over the remaining axes, then
    ``* gamma + beta`` (one per channel).

    Note MXNet's defaults: ``scale=False`` (gamma stays 1, not trained),
    ``center=True``.

    >>> layer = nn.InstanceNorm(in_channels=3)
    >>> layer.initialize(); layer(nd.ones((2, 3, 4))).shape
    (2, 3, 4)
    """

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis, self._epsilon = axis, epsilon
        _gamma_beta(self, in_channels, center, scale, beta_initializer,
                    gamma_initializer)

    infer_shape = _channels_from_input

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis in (1, 1 - x.ndim):
            return F.InstanceNorm(x, gamma, beta, eps=self._epsilon)
        x = F.swapaxes(x, 1, self._axis)
        return F.swapaxes(F.InstanceNorm(x, gamma, beta, eps=self._epsilon), 1,
                          self._axis)

    def __repr__(self):
        content = ', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())
        return f'{type(self).__name__}({content}, in_channels={self.gamma.shape[0]})'


class GroupNorm(HybridBlock):
    """Group normalization (Wu & He, 2018): the channels (axis 1) split into
    ``num_groups`` groups; each sample's each group normalized over its
    channels and the spatial axes, then ``* gamma + beta``.

    As in MXNet 1.x, ``gamma`` and ``beta`` have ONE value per group,
    shape ``(num_groups,)`` (the paper and PyTorch have one per channel).

    >>> layer = nn.GroupNorm(num_groups=2)
    >>> layer.initialize(); layer(nd.ones((2, 4, 3))).shape
    (2, 4, 3)
    """

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'num_groups': num_groups, 'center': center,
                        'scale': scale}
        self._num_groups, self._epsilon = num_groups, epsilon
        _gamma_beta(self, num_groups, center, scale, beta_initializer,
                    gamma_initializer, deferred=False)

    def hybrid_forward(self, F, x, gamma, beta):
        return F.GroupNorm(x, gamma, beta, num_groups=self._num_groups,
                           eps=self._epsilon)

    def __repr__(self):
        content = ', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())
        return f'{type(self).__name__}({content})'
