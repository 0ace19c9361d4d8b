"""Chapter 8, concise multi-device training: the exercise's reference."""


def split_and_load(data, ctx_list):
    """One slice of ``data`` (along axis 0) per device, on that device.

    When the batch does not divide, the first ``n % k`` slices get one
    example more, so that slices differ by at most one example.
    """
    n, k = data.shape[0], len(ctx_list)
    each, extra = divmod(n, k)
    slices, start = [], 0
    for i, ctx in enumerate(ctx_list):
        stop = start + each + (1 if i < extra else 0)
        slices.append(data[start:stop].as_in_context(ctx))
        start = stop
    return slices
