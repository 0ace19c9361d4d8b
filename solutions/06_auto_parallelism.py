"""Chapter 6, automatic parallelism: the coding exercise's reference."""


def finish_times(ops):
    """{name: finish time} of ops pushed in order onto in-order devices."""
    free = {}        # device: when it finishes the last operation given to it
    finish = {}      # operation: when it finishes
    for name, device, duration, inputs in ops:
        # it waits for its device (operations run in push order there) and
        # for every input, wherever that was computed
        start = max([free.get(device, 0)] + [finish[x] for x in inputs])
        finish[name] = free[device] = start + duration
    return finish
