"""Chapter 4, layers and parameters: how many numbers does a network learn?

``num_parameters(net, X)`` counts the scalars in all of ``net``'s
parameters.  The nets come initialized but not yet run, so shapes that
depend on the input are still unknown; a parameter shared by several
layers counts once.
"""
from .. import context
from .. import ndarray as nd
from ..gluon import nn
from . import Case, compare_equal, run_cases


def _shared():
    shared = nn.Dense(8)
    net = nn.Sequential()
    net.add(nn.Dense(8), shared, nn.Dense(8, params=shared.params),
            nn.Dense(10))
    return net


def _sequential(*layers):
    net = nn.Sequential()
    net.add(*layers)
    return net


# (what the net is, how to build it, the input's shape, the count by hand);
# activations are left out: they change no count
NETS = [
    ('Dense(4)', lambda: nn.Dense(4), (2, 3), 3 * 4 + 4),
    ('Dense(4, use_bias=False)', lambda: nn.Dense(4, use_bias=False),
     (1, 6), 6 * 4),
    ('Dense(3), flattening its input', lambda: nn.Dense(3), (2, 2, 5),
     2 * 5 * 3 + 3),
    ('Sequential(Dense(8), Dense(2))',
     lambda: _sequential(nn.Dense(8), nn.Dense(2)),
     (1, 5), (5 * 8 + 8) + (8 * 2 + 2)),
    ('Sequential(Activation("relu")), no parameters',
     lambda: _sequential(nn.Activation('relu')), (2, 3), 0),
    ('Conv2D(6, kernel_size=5)', lambda: nn.Conv2D(6, kernel_size=5),
     (1, 1, 28, 28), 6 * 1 * 5 * 5 + 6),
    ('Sequential of 4 Dense, the 2nd and 3rd sharing their parameters',
     _shared, (2, 20), (20 * 8 + 8) + (8 * 8 + 8) + (8 * 10 + 10)),
]


def num_parameters(solution):
    """Check ``solution(net, X)``: the number of scalar parameters."""
    counts = {text: count for text, _, _, count in NETS}
    cases = [Case(build, shape, text=f'net={text}, X of shape {shape}')
             for text, build, shape, _ in NETS]

    def prepare(args):                # a fresh net for every call
        build, shape = args
        net = build()
        net.initialize()
        return net, nd.ones(shape, ctx=context.current_context())

    def expected(build, shape):
        return next(count for text, b, _, count in NETS if b is build)

    return run_cases(solution, cases, expected, compare_equal,
                     prepare=prepare,
                     todo='num_parameters(net, X) returns how many numbers '
                          "net's parameters hold once it has seen X")
