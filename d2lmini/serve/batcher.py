"""Dynamic batching: requests that arrive one by one leave as batches.

A forward pass over 32 examples costs far less than 32 passes over one
(one call instead of 32, and matrix products instead of vector ones), so a
server that waits a little to gather requests serves more of them.  The
rule, as in Triton's dynamic batcher:

1. wait for a free worker (while every worker is busy, requests simply
   queue up: the busier the server, the larger its batches);
2. then wait until ``max_batch_size`` examples are queued, or the oldest
   request has waited ``max_delay`` seconds, whichever comes first --
   or until no other request *can* come: when every client connected is
   already waiting for an answer (``all_waiting``, which the server knows:
   an HTTP/1.1 connection carries one request at a time), waiting longer
   cannot grow the batch, only delay it;
3. take whole requests, oldest first, up to ``max_batch_size`` examples
   (a request larger than that goes alone), stack them, run them as one
   forward pass on that worker, and split the outputs back by request.
   When the model's batches are long (the last one took more than
   ``max_delay``: the forward pass dominates, as a ResNet's does) and
   other workers are idle, take only an even share of the queue, so that
   the idle workers take the rest at once and the shares run side by side.

Where the batch runs: on its worker, a process or a thread.  A worker
thread (``--in-process``) holds its copy of the model in the front end's
own process, and the loop may run the batch itself instead, on its own
thread (``on_loop``): when every open connection waits for an answer (the
loop has no HTTP work to do until one goes out) and the model's last batch
took no longer than ``max_delay`` (the wait a request accepts anyway, and
at most what a request arriving meanwhile waits to be read).  That saves
the two hand-offs, to the thread and back, each the wake-up of a sleeping
thread: on the 2-core VM, one client's LeNet request took 0.78 ms instead
of 0.99 (``benchmarks/SERVE.md``).  Under load it makes no difference that
could be measured there.

The queue is bounded: :meth:`Batcher.submit` raises :class:`QueueFull`
when ``max_queue`` requests wait, and the server answers 503 with
``Retry-After`` rather than letting latency grow without limit.  A request
whose caller stopped waiting (its timeout passed, its client went away) is
dropped when its turn comes.  A batch whose worker died goes back to the
front of the queue once; the second time its requests fail.
"""
import asyncio
import collections
import time

import numpy as np

from .workers import NoWorkers, ThreadWorker, WorkerError, WorkerLost

__all__ = ['Batcher', 'Request', 'QueueFull', 'Unavailable']


class QueueFull(RuntimeError):
    """The queue holds ``max_queue`` requests already (answer 503)."""


class Unavailable(RuntimeError):
    """No worker could run the request (answer 503)."""


class Request:
    """One request's examples ``x`` (``n`` of them) and the future of its outputs."""
    __slots__ = ('x', 'n', 'future', 'arrived', 'tries')

    def __init__(self, x):
        self.x, self.n = x, len(x)
        self.future = asyncio.get_running_loop().create_future()
        self.arrived = time.monotonic()
        self.tries = 0


class Batcher:
    """The queue of one model, and the loop that empties it into workers."""

    def __init__(self, model, pool, max_batch_size=32, max_delay=0.005,
                 max_queue=100, on_batch=None, all_waiting=None, on_loop=False):
        if max_batch_size < 1 or max_delay < 0 or max_queue < 1:
            raise ValueError('max_batch_size and max_queue must be at least 1, '
                             'max_delay at least 0')
        self.model, self.pool = model, pool
        self.max_batch_size, self.max_delay = max_batch_size, max_delay
        self.max_queue = max_queue
        self.on_batch = on_batch or (lambda size, seconds: None)
        self.all_waiting = all_waiting or (lambda: False)
        self.on_loop = on_loop
        self.last_seconds = None          # the last batch's time on its worker
        self.queue = collections.deque()
        self.queued = 0                   # examples in the queue
        self._want = 1                    # wake the loop at this many
        self._grown = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    def submit(self, x):
        """Queue the examples ``x`` (a batch axis first); the Request."""
        if len(self.queue) >= self.max_queue:      # (count the live ones only)
            self.queue = collections.deque(r for r in self.queue
                                           if not r.future.done())
            self.queued = sum(r.n for r in self.queue)
        if len(self.queue) >= self.max_queue:
            raise QueueFull(f'{len(self.queue)} requests are queued for '
                            f'{self.model!r}')
        r = Request(x)
        self.queue.append(r)
        self.queued += r.n
        if self.queued >= self._want or self.all_waiting():
            self._grown.set()
        return r

    def __len__(self):
        return len(self.queue)

    def look_again(self):
        """Have the loop check its rules again: ``all_waiting`` may have
        turned true (the server calls this when a connection closes)."""
        self._grown.set()

    async def _wait(self, want, timeout=None):
        """Until ``want`` examples are queued, or ``timeout`` seconds."""
        self._want = want
        self._grown.clear()
        timer = timeout is not None and asyncio.get_running_loop().call_later(
            timeout, self._grown.set)
        await self._grown.wait()
        if timer:
            timer.cancel()

    def _drop_abandoned(self):
        while self.queue and self.queue[0].future.done():
            self.queued -= self.queue.popleft().n

    def _share(self):
        """The most examples the next batch takes (rule 3): all it may,
        unless batches are long and other workers idle."""
        if self.last_seconds is None or self.last_seconds <= self.max_delay:
            return self.max_batch_size
        workers = 1 + self.pool.idle_count(self.model)   # (one is acquired)
        return min(self.max_batch_size, -(-self.queued // workers))

    def _take(self, limit):
        batch, size = [], 0
        while self.queue:
            r = self.queue[0]
            if not r.future.done():
                if batch and size + r.n > limit:
                    break
                batch.append(r)
                size += r.n
            self.queued -= self.queue.popleft().n
        return batch

    async def _loop(self):
        while True:
            self._drop_abandoned()
            if not self.queue:
                await self._wait(1)
                continue
            try:                                          # 1. a free worker
                worker = await self.pool.acquire(self.model)
            except NoWorkers as e:
                for r in self.queue:
                    if not r.future.done():
                        r.future.set_exception(Unavailable(str(e)))
                self.queue.clear()
                self.queued = 0
                continue
            while True:                                   # 2. full, or late
                self._drop_abandoned()
                left = self.queue[0].arrived + self.max_delay - time.monotonic() \
                    if self.queue else None
                if not self.queue or self.queued >= self.max_batch_size or \
                        left <= 0 or self.all_waiting():
                    break
                await self._wait(self.max_batch_size, left)
            batch = self._take(self._share())             # 3. stack, run, split
            if not batch:
                self.pool.release(worker)
                continue
            asyncio.get_running_loop().create_task(self._run(worker, batch))

    async def _run(self, worker, batch):
        x = batch[0].x if len(batch) == 1 else np.concatenate([r.x for r in batch])
        start = time.monotonic()
        try:
            if self._here(worker):
                outs = self.pool.run_here(worker, self.model, x)
            else:
                outs = await self.pool.run(worker, self.model, x)
        except WorkerLost as e:
            for r in reversed(batch):
                r.tries += 1
                if r.future.done():
                    continue
                if r.tries < 2:
                    self.queue.appendleft(r)               # once more, first
                    self.queued += r.n
                else:
                    r.future.set_exception(Unavailable(str(e)))
            self._grown.set()
            return
        except WorkerError as e:
            for r in batch:
                if not r.future.done():
                    r.future.set_exception(e)
            self.pool.release(worker)
            return
        self.pool.release(worker)
        self.last_seconds = time.monotonic() - start
        self.on_batch(len(x), self.last_seconds)
        i = 0
        for r in batch:
            if not r.future.done():
                r.future.set_result([o[i:i + r.n] for o in outs])
            i += r.n

    def _here(self, worker):
        """Whether the loop runs this batch itself (see the module's doc)."""
        return (self.on_loop and isinstance(worker, ThreadWorker) and
                self.last_seconds is not None and
                self.last_seconds <= self.max_delay and self.all_waiting())

    def close(self):
        self._task.cancel()
