"""Chapter 12, the distributed KVStore: the coding exercise's reference."""


def staleness(events):
    """For each push to a dist_async server, the updates made since its
    worker's last pull."""
    version = 0        # how many updates the server has made
    pulled = {}        # worker: the version it last pulled
    stale = []
    for what, worker in events:
        if what == 'pull':
            pulled[worker] = version
        else:
            # the gradient was computed on version pulled[worker]; the
            # server is at `version` now (the worker's own earlier pushes
            # count too)
            stale.append(version - pulled[worker])
            version += 1                # dist_async: every push updates
    return stale
