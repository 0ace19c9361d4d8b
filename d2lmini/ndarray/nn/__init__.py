"""Neural-network operators, one module per family as in MXNet's
``src/operator/nn/``: ``fully_connected``, ``convolution``, ``pooling``,
``activation``, ``softmax``, ``dropout``, ``batch_norm``.  Importing this
package registers them all in the op table."""
from . import activation, batch_norm, convolution, dropout, fully_connected, pooling
from . import softmax
