"""Chapter 14, symbolic programming: the coding exercise's reference."""
import math


def mlp_arg_shapes(data_shape, num_hiddens):
    """{argument: shape} of fc1 -> relu -> ... -> fcK on data_shape."""
    shapes = {'data': tuple(data_shape)}
    batch = data_shape[0]
    # FullyConnected flattens its input: all axes but the first are features
    in_units = math.prod(data_shape[1:])
    for i, h in enumerate(num_hiddens, 1):
        shapes[f'fc{i}_weight'] = (h, in_units)   # (outputs, inputs)
        shapes[f'fc{i}_bias'] = (h,)
        in_units = h                  # the next layer sees (batch, h)
    return shapes
