"""Chapter 5, LeNet: the coding exercise's reference solution."""


def conv2d_output_shape(data_shape, num_filter, kernel, stride=(1, 1),
                        pad=(0, 0)):
    """The shape of nd.Convolution on NCHW data of ``data_shape``."""
    batch, _, height, width = data_shape
    # Along each axis: pad both sides, then count the positions where the
    # kernel fits, moving `stride` at a time (a partial step is dropped).
    out = [(n + 2 * p - k) // s + 1
           for n, k, s, p in zip((height, width), kernel, stride, pad)]
    return (batch, num_filter, *out)   # one output channel per filter
