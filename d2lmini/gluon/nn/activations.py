"""Activation layers added for MXNet 1.x parity (``nn.GELU``); the classic
ones (``Activation``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``SELU``,
``Swish``) live in :mod:`.basic_layers`."""
from ..block import HybridBlock

__all__ = ['GELU']


class GELU(HybridBlock):
    """Gaussian Error Linear Unit (Hendrycks & Gimpel, 2016):
    ``x * Phi(x)``, with ``Phi`` the standard normal CDF (the exact erf form,
    as MXNet's ``LeakyReLU(act_type='gelu')``).

    >>> nn.GELU()(nd.array([-1., 0., 1.]))
    <BLANKLINE>
    [-0.15865526  0.          0.8413447 ]
    <NDArray 3 @cpu(0)>
    """

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type='gelu', name='fwd')

    def __repr__(self):
        return f'{type(self).__name__}()'
