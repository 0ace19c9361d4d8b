"""Chapter 11, parameter servers: the coding exercise's reference."""


def server_value(w, lr, pushes, num_workers, sync):
    """The value a server holds after ``pushes`` of (worker, gradient)."""
    pending = []                        # the gradients of the current round
    for worker, grad in pushes:
        if not sync:                    # dist_async: every push is a step
            w -= lr * grad
            continue
        pending.append(grad)            # dist_sync: hold the push...
        if len(pending) == num_workers:  # ...until every worker has pushed
            w -= lr * sum(pending)      # one step with the sum
            pending = []
    return w                            # an incomplete round is not applied
