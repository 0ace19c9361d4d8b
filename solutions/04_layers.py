"""Chapter 4, layers and parameters: the coding exercise's reference."""


def num_parameters(net, X):
    """How many numbers ``net``'s parameters hold once it has seen ``X``."""
    # Deferred initialization: a layer learns its input size, and so its
    # weight's shape, from the first batch it sees.
    net(X)
    # collect_params() holds each parameter once, even when several layers
    # share it, so shared weights are not counted twice.
    return sum(p.data().size for p in net.collect_params().values())
