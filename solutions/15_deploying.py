"""Chapter 15, deploying a model: the coding exercise's reference."""


def form_batches(arrivals, max_batch_size, max_delay, service_time):
    """The batches one worker runs: [(leave_time, [request indices]), ...]."""
    batches = []
    free = 0                 # when the worker can take the next batch
    i = 0                    # the oldest request not yet in a batch
    while i < len(arrivals):
        # the batch is due when its oldest request has waited max_delay,
        # or earlier, when the request that fills it arrives ...
        due = arrivals[i] + max_delay
        if i + max_batch_size - 1 < len(arrivals):
            due = min(due, arrivals[i + max_batch_size - 1])
        # ... but it cannot leave before the worker is free: meanwhile
        # more requests arrive, and the batch grows (up to max_batch_size)
        leave = max(free, due)
        members = [j for j in range(i, min(i + max_batch_size, len(arrivals)))
                   if arrivals[j] <= leave]
        batches.append((leave, members))
        free = leave + service_time
        i += len(members)
    return batches
