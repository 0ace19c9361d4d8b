"""Neural-network operators, one module per family as in MXNet's
``src/operator/nn/``: ``fully_connected``, ``convolution``,
``deconvolution``, ``pooling``, ``activation``, ``softmax``, ``dropout``,
``batch_norm``, ``normalization`` (instance and group norm), ``pad``,
``ctc_loss`` and ``loss_heads`` (SoftmaxOutput, the regression outputs,
MakeLoss), ``rnn`` (the fused recurrent layers) and ``fused`` (what a graph fuses);
and mixed precision's ``amp_cast`` and ``all_finite``.  Importing this package registers them all in the op table."""
from . import activation, batch_norm, convolution, dropout, fully_connected, pooling
from . import ctc_loss, deconvolution, fused, loss_heads, normalization, pad, rnn, softmax
from . import all_finite, amp_cast

FAMILIES = (activation, batch_norm, convolution, ctc_loss, deconvolution, dropout,
            fully_connected, loss_heads, normalization, pad, pooling, rnn, softmax,
            amp_cast, all_finite)
