"""Dynamic batching (``d2lmini.serve.batcher``), in process, with a fake pool.

The :class:`Batcher` meets its workers only through ``pool.acquire``,
``pool.release`` and ``pool.run``.  Here those are coroutines the test
drives: every batch the batcher runs waits, as a future, until the test
answers it (outputs, :class:`WorkerLost` or :class:`WorkerError`), and
time is a fake clock the test moves, so each rule of the batcher is
checked without a single race:

* a batch leaves when ``max_batch_size`` examples are queued, or when the
  oldest request has waited ``max_delay`` -- not before, unless no other
  request can come (``all_waiting``);
* it takes whole requests, oldest first; a request larger than the
  maximum goes alone; when the last batch was long and other workers are
  idle, an even share of the queue;
* outputs are split back by request;
* a request its caller abandoned is dropped, never run;
* a batch whose worker died is tried once more, at the front of the
  queue; the second time its requests fail (``Unavailable``);
* with no worker alive every queued request fails (``Unavailable``);
* ``submit`` refuses a request when ``max_queue`` wait (``QueueFull``).
"""
import asyncio
import functools

import numpy as np
import pytest

from d2lmini.serve import batcher as batcher_mod
from d2lmini.serve.batcher import Batcher, QueueFull, Unavailable
from d2lmini.serve.workers import NoWorkers, WorkerError, WorkerLost

WAIT = 5.0          # the longest any step may take (a bound, never reached)


class FakeClock:
    """``time`` for the batcher module: ``monotonic()`` moves when told."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


class FakePool:
    """``workers`` workers; every batch run waits for the test's answer."""

    def __init__(self, workers=1):
        self.free = list(range(workers))
        self.alive = workers
        self.runs = []                         # [(worker, x, future)], in order
        self._changed = asyncio.Event()

    async def acquire(self, model):
        await asyncio.sleep(0)        # always yield: a batcher stuck in a loop
        while True:                   # still lets the test's timeouts fire
            if not self.alive:
                raise NoWorkers('no worker is alive')
            if self.free:
                return self.free.pop(0)
            self._changed.clear()
            await self._changed.wait()

    def release(self, worker):
        self.free.append(worker)
        self._changed.set()

    def idle_count(self, model):
        return len(self.free)

    async def run(self, worker, model, x):
        fut = asyncio.get_running_loop().create_future()
        self.runs.append((worker, np.array(x), fut))
        self._changed.set()
        return await fut

    def die(self):
        """Every worker gone: waiting acquirers get NoWorkers."""
        self.alive = 0
        self.free.clear()
        self._changed.set()

    async def batch(self, k):
        """The ``k``-th batch run (0-based), once the batcher has sent it."""
        async def until():
            while len(self.runs) <= k:
                self._changed.clear()
                await self._changed.wait()
        await asyncio.wait_for(until(), WAIT)
        return self.runs[k]


def answer(run):
    """Answer a batch with two outputs computed row by row from its input:
    each request must get back exactly the rows of its own examples."""
    _, x, fut = run
    fut.set_result([x.reshape(len(x), -1).sum(1), x[:, 0] * 2])


def start(workers=1, **settings):
    """A fake pool of ``workers`` and a batcher on it (its loop task ends
    with the test's loop: ``asyncio.run`` cancels what is left)."""
    pool = FakePool(workers)
    return pool, Batcher('m', pool, **settings)


async def occupy(pool, b, n=1):
    """The first worker busy with a first batch, of ``n`` examples."""
    r = b.submit(examples(0, n))
    await pool.batch(0)
    return r


def examples(start, n):
    """``n`` examples, each a (2,) row whose values say which one it is."""
    return np.arange(start, start + n, dtype=np.float32)[:, None].repeat(2, 1)


async def settle(turns=20):
    """Let every task that can run, run (no time passes on the fake clock)."""
    for _ in range(turns):
        await asyncio.sleep(0)


def in_loop(test):
    """A coroutine test, run on a loop of its own, bounded in time."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        asyncio.run(asyncio.wait_for(test(*args, **kwargs), 4 * WAIT))
    return run


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(batcher_mod, 'time', c)
    return c


def rows(x):
    """Which examples a batch holds (the first value of each row)."""
    return [int(v) for v in x[:, 0]]


@in_loop
async def test_a_full_batch_leaves_at_once_and_splits_back(clock):
    pool, b = start(max_batch_size=4, max_delay=60.0)
    r1 = b.submit(examples(0, 1))
    r2 = b.submit(examples(1, 2))
    await settle()
    assert pool.runs == []                 # 3 of 4, and no time has passed
    r3 = b.submit(examples(3, 1))
    worker, x, _ = await pool.batch(0)
    assert rows(x) == [0, 1, 2, 3]         # oldest first, stacked
    answer(pool.runs[0])
    for r, first in ((r1, 0), (r2, 1), (r3, 3)):
        sums, doubled = await asyncio.wait_for(r.future, WAIT)
        np.testing.assert_array_equal(sums, 2 * np.arange(first, first + r.n))
        np.testing.assert_array_equal(doubled, 2 * np.arange(first, first + r.n))
    assert pool.free == [worker] and len(b) == 0


@in_loop
async def test_a_batch_leaves_when_the_oldest_has_waited_max_delay_not_before(clock):
    pool, b = start(max_batch_size=8, max_delay=0.02)
    r1 = b.submit(examples(0, 1))
    clock.now += 0.015
    r2 = b.submit(examples(1, 1))
    clock.now += 0.004                     # the oldest has waited 0.019 s
    for _ in range(5):                     # real time passes, the clock's doesn't
        await asyncio.sleep(0.02)
    assert pool.runs == [] and len(b) == 2
    clock.now += 0.002                     # 0.021 s
    _, x, _ = await pool.batch(0)
    assert rows(x) == [0, 1]
    answer(pool.runs[0])
    await asyncio.wait_for(asyncio.gather(r1.future, r2.future), WAIT)


@in_loop
async def test_a_batch_leaves_at_once_when_no_other_request_can_come(clock):
    # every client connected waits for an answer: waiting out the delay
    # could not add a request to the batch, so it leaves at once
    everyone = [False]
    pool, b = start(max_batch_size=8, max_delay=60.0,
                    all_waiting=lambda: everyone[0])
    r1 = b.submit(examples(0, 1))
    for _ in range(5):
        await asyncio.sleep(0.02)
    assert pool.runs == []                 # someone else may still send
    everyone[0] = True                     # the last client's request:
    r2 = b.submit(examples(1, 2))          # now nobody else can
    _, x, _ = await pool.batch(0)
    assert rows(x) == [0, 1, 2] and clock.now == 1000.0     # no time passed
    answer(pool.runs[0])
    await asyncio.wait_for(asyncio.gather(r1.future, r2.future), WAIT)
    r3 = b.submit(examples(3, 1))          # a lone request, everyone waiting
    _, x, _ = await pool.batch(1)
    assert rows(x) == [3]
    answer(pool.runs[1])
    await asyncio.wait_for(r3.future, WAIT)


@in_loop
async def test_whole_requests_only_and_a_large_one_goes_alone(clock):
    pool, b = start(max_batch_size=4, max_delay=0.05)
    big = b.submit(examples(0, 6))         # over the maximum: alone, at once
    _, x, _ = await pool.batch(0)
    assert rows(x) == list(range(6))
    answer(pool.runs[0])
    sums, _ = await asyncio.wait_for(big.future, WAIT)
    assert sums.shape == (6,)
    r3 = b.submit(examples(10, 3))
    r2 = b.submit(examples(20, 2))         # 5 queued: 3 + 2 does not fit in 4
    _, x, _ = await pool.batch(1)
    assert rows(x) == [10, 11, 12]
    answer(pool.runs[1])
    await asyncio.wait_for(r3.future, WAIT)
    await settle()
    for _ in range(5):                     # the 2 wait for more, or for the delay
        await asyncio.sleep(0.02)
    assert len(pool.runs) == 2 and len(b) == 1
    clock.now += 0.05
    _, x, _ = await pool.batch(2)
    assert rows(x) == [20, 21]
    answer(pool.runs[2])
    sums, _ = await asyncio.wait_for(r2.future, WAIT)
    np.testing.assert_array_equal(sums, [40, 42])


@in_loop
async def test_requests_queue_while_the_worker_is_busy_and_leave_oldest_first(clock):
    pool, b = start(max_batch_size=3, max_delay=0.0)
    await occupy(pool, b)
    rs = [b.submit(examples(i, 1)) for i in range(1, 6)]
    await settle()
    assert len(pool.runs) == 1 and len(b) == 5      # the only worker is busy
    answer(pool.runs[0])
    _, x, _ = await pool.batch(1)
    assert rows(x) == [1, 2, 3]
    answer(pool.runs[1])
    _, x, _ = await pool.batch(2)
    assert rows(x) == [4, 5]
    answer(pool.runs[2])
    outs = await asyncio.wait_for(asyncio.gather(*[r.future for r in rs]), WAIT)
    assert [int(o[0][0]) for o in outs] == [2, 4, 6, 8, 10]


@in_loop
async def test_abandoned_requests_are_dropped_never_run(clock):
    pool, b = start(max_batch_size=4, max_delay=0.0)
    await occupy(pool, b)
    first = b.submit(examples(1, 1))
    gone = b.submit(examples(2, 1))
    last = b.submit(examples(3, 1))
    gone.future.cancel()                   # its client went away (mid-queue)
    answer(pool.runs[0])
    _, x, _ = await pool.batch(1)
    assert rows(x) == [1, 3]
    first.future.cancel()                  # gone while its batch runs:
    answer(pool.runs[1])                   # the others get their answers
    sums, _ = await asyncio.wait_for(last.future, WAIT)
    np.testing.assert_array_equal(sums, [6])
    head = b.submit(examples(4, 1))        # abandoned before their turn, at
    second = b.submit(examples(5, 1))      # the head of the queue
    head.future.cancel()
    second.future.cancel()
    await settle()
    assert len(pool.runs) == 2 and len(b) == 0 and pool.free == [0]


@in_loop
async def test_a_lost_batch_is_retried_once_at_the_front_then_unavailable(clock):
    pool, b = start(2, max_batch_size=4, max_delay=0.0)
    a = b.submit(examples(0, 1))
    a2 = b.submit(examples(1, 1))
    w0, x, fut = await pool.batch(0)
    assert rows(x) == [0, 1]
    pool.free.clear()                      # the other worker: busy elsewhere
    c = b.submit(examples(2, 1))           # queued behind the running batch
    pool.alive = 1                         # w0 dies: the pool forgets it
    fut.set_exception(WorkerLost('worker 0 died'))
    await settle()
    assert len(b) == 3 and len(pool.runs) == 1
    pool.release(1)
    _, x, fut = await pool.batch(1)
    assert rows(x) == [0, 1, 2]            # the retried ones first, in order
    fut.set_exception(WorkerLost('worker 1 died too'))
    for r in (a, a2):                      # their second loss: they fail
        with pytest.raises(Unavailable, match='worker 1 died too'):
            await asyncio.wait_for(r.future, WAIT)
    assert not c.future.done() and len(b) == 1      # c's first: once more
    pool.release(2)
    _, x, _ = await pool.batch(2)
    assert rows(x) == [2]
    answer(pool.runs[2])
    sums, _ = await asyncio.wait_for(c.future, WAIT)
    np.testing.assert_array_equal(sums, [4])


@in_loop
async def test_a_forward_error_fails_its_requests_and_frees_the_worker(clock):
    pool, b = start(max_batch_size=4, max_delay=0.0)
    r = b.submit(examples(0, 2))
    worker, _, fut = await pool.batch(0)
    fut.set_exception(WorkerError('ValueError: bad'))
    with pytest.raises(WorkerError, match='bad'):
        await asyncio.wait_for(r.future, WAIT)
    assert pool.free == [worker]
    later = b.submit(examples(5, 1))
    answer(await pool.batch(1))
    await asyncio.wait_for(later.future, WAIT)


@in_loop
async def test_no_worker_alive_fails_every_queued_request(clock):
    pool, b = start(max_batch_size=2, max_delay=0.0)
    await occupy(pool, b, 2)
    queued = [b.submit(examples(i, 1)) for i in range(2, 5)]
    pool.die()                             # waiting in acquire: NoWorkers
    for r in queued:
        with pytest.raises(Unavailable, match='no worker'):
            await asyncio.wait_for(r.future, WAIT)
    assert len(b) == 0
    late = b.submit(examples(9, 1))        # and so does a request that comes later
    with pytest.raises(Unavailable):
        await asyncio.wait_for(late.future, WAIT)


@in_loop
async def test_the_queue_is_bounded(clock):
    pool, b = start(max_batch_size=1, max_delay=0.0, max_queue=2)
    running = await occupy(pool, b)            # out of the queue, on the worker
    b.submit(examples(1, 1))
    b.submit(examples(2, 5))               # the bound counts requests
    with pytest.raises(QueueFull, match="2 requests are queued for 'm'"):
        b.submit(examples(3, 1))
    answer(pool.runs[0])
    await asyncio.wait_for(running.future, WAIT)
    await pool.batch(1)                    # one left the queue: room again
    b.submit(examples(4, 1))
    assert len(b) == 2


@in_loop
async def test_the_bound_counts_only_requests_still_waited_for(clock):
    pool, b = start(max_batch_size=1, max_delay=0.0, max_queue=2)
    await occupy(pool, b)
    gone = b.submit(examples(1, 1))
    b.submit(examples(2, 1))
    gone.future.cancel()                   # its client went away (or timed out)
    b.submit(examples(3, 1))               # room: the abandoned one does not count
    assert len(b) == 2
    with pytest.raises(QueueFull):
        b.submit(examples(4, 1))


@in_loop
async def test_batch_sizes_are_reported(clock):
    seen = []
    pool, b = start(max_batch_size=4, max_delay=60.0,
                on_batch=lambda size, seconds: seen.append((size, seconds)))
    r = [b.submit(examples(0, 3)), b.submit(examples(3, 1))]
    answer(await pool.batch(0))
    await asyncio.wait_for(asyncio.gather(*[q.future for q in r]), WAIT)
    assert seen == [(4, 0.0)]              # (no time passed on the fake clock)


@pytest.mark.parametrize('kw', [dict(max_batch_size=0), dict(max_delay=-1),
                                dict(max_queue=0)])
@in_loop
async def test_bad_settings_are_refused(kw):
    with pytest.raises(ValueError, match='at least'):
        Batcher('m', FakePool(), **kw)


@in_loop
async def test_long_batches_are_shared_among_idle_workers_short_ones_are_not(clock):
    everyone = [True]                      # every connection waits: no delay
    pool, b = start(workers=2, max_batch_size=8, max_delay=0.01,
                    all_waiting=lambda: everyone[0])
    first = b.submit(examples(0, 4))       # its time is not known yet: whole
    worker, x, _ = await pool.batch(0)
    assert rows(x) == [0, 1, 2, 3]
    clock.now += 0.5                       # a long forward pass (0.5 s > 10 ms)
    answer(pool.runs[0])
    await asyncio.wait_for(first.future, WAIT)
    everyone[0] = False                    # six requests come in, then
    rs = [b.submit(examples(i, 1)) for i in range(10, 16)]
    everyone[0] = True                     # all wait: the batch may leave
    b.look_again()
    (w1, x1, _), (w2, x2, _) = await pool.batch(1), await pool.batch(2)
    assert (rows(x1), rows(x2)) == ([10, 11, 12], [13, 14, 15]) and w1 != w2
    answer(pool.runs[1])                   # short ones, now (no time passes)
    answer(pool.runs[2])
    await asyncio.wait_for(asyncio.gather(*[r.future for r in rs]), WAIT)
    everyone[0] = False
    rs = [b.submit(examples(i, 1)) for i in range(20, 26)]
    everyone[0] = True
    b.look_again()
    _, x, _ = await pool.batch(3)          # two workers idle, one batch
    assert rows(x) == list(range(20, 26))
    await settle()
    assert len(pool.runs) == 4
    answer(pool.runs[3])
    await asyncio.wait_for(asyncio.gather(*[r.future for r in rs]), WAIT)
