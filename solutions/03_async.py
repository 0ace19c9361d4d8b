"""Chapter 3, asynchronous computation: the coding exercise's reference."""


def loop_time(n, t_front, t_back, sync_every=None):
    """Time until a loop of n operations is done (see the chapter's model)."""
    front = 0      # the front end's clock: when it has pushed so far
    done = 0       # the back end's clock: when the last operation finished
    for i in range(1, n + 1):
        front += t_front                   # push operation i
        # the back end starts it once it is pushed and the previous is done
        done = max(front, done) + t_back
        if sync_every and i % sync_every == 0:
            front = max(front, done)       # y.wait_to_read(): wait for it
    return max(front, done)                # nd.waitall()
