"""Allreduce bandwidth: naive vs ring over 2-4 devices, next to memcpy.

For ``n`` = 2, 3, 4 CPU devices (``cpu(0..n-1)``, one engine stream each)
and float32 arrays of 4 KB to 64 MB, ``d2lmini.collectives.allreduce`` in
place (``out=arrays``, as a trainer sums its gradients) with each
algorithm.  Each case is timed as the median of several repetitions after
a warm-up, each ending at ``nd.waitall()``; the two algorithms' repetitions
alternate, so a slow moment of the machine hits both.

* algorithm bandwidth ``algbw`` = array bytes / time;
* bus bandwidth ``busbw`` = ``algbw * 2 (n - 1) / n``: the bytes each
  device moves in an optimal allreduce (NCCL's convention), comparable
  across ``n``;
* the reference is this machine's memcpy bandwidth measured in the same
  run: one ``np.copyto`` of the same number of bytes on one thread (bytes
  copied / time), timed in the same alternating loop as the allreduces;
  and, once per size, the same copy split over two threads (the two
  cores' share of memory bandwidth; for small sizes the hand-off between
  the threads dominates it).

The issue's targets: the ring beats naive for 3 and more devices on large
arrays, and a 2-device allreduce of 64 MB reaches 0.5x the memcpy
bandwidth.  Rows for ``benchmarks/run.py``: per ``(n, size)`` the ring's
algbw with the naive one as reference (ratio = ring's speed-up), then the
64 MB rows against memcpy.  ``python benchmarks/bench_allreduce.py
--table`` prints the full markdown table; :func:`plot` draws it.
"""
import functools
import gc
import os
import statistics
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import d2lmini as mx                       # noqa: E402
from d2lmini import nd                     # noqa: E402
from d2lmini.collectives import allreduce  # noqa: E402

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]     # bytes
DEVICES = [2, 3, 4]
ALGORITHMS = ['naive', 'ring']
_now = time.perf_counter


def _reps(nbytes):
    # ~1-2 s per size over all cases on the 2-core machine
    return 41 if nbytes <= 1 << 20 else 15 if nbytes <= 16 << 20 else 9


def _label(nbytes):
    return f'{nbytes >> 20} MB' if nbytes >= 1 << 20 else f'{nbytes >> 10} KB'


def memcpy_bandwidth(nbytes, threads=1, reps=None):
    """Bytes copied per second by ``np.copyto`` (median), the copy split
    into halves for two threads (this one and a helper that waits for work,
    so no thread is started inside the timing)."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    if threads == 1:
        def once():
            t = _now()
            np.copyto(dst, src)
            return _now() - t
    else:
        h = src.size // 2
        go, done, stop = threading.Event(), threading.Event(), [False]

        def helper():
            while go.wait() and not stop[0]:
                go.clear()
                np.copyto(dst[h:], src[h:])
                done.set()
        th = threading.Thread(target=helper, daemon=True)
        th.start()

        def once():
            t = _now()
            go.set()
            np.copyto(dst[:h], src[:h])
            done.wait()
            done.clear()
            return _now() - t
    try:
        once()
        times = [once() for _ in range(reps or _reps(nbytes))]
    finally:
        if threads != 1:
            stop[0] = True
            go.set()
            th.join(timeout=10)
    return nbytes / statistics.median(times)


def allreduce_times(n, nbytes, algorithms=ALGORITHMS, reps=None):
    """``{case: [seconds, ...]}`` for an in-place allreduce over
    ``cpu(0..n-1)`` with each algorithm, and for ``'memcpy'``: one
    ``np.copyto`` of the same bytes.  The cases' repetitions alternate, so
    a busy moment of the machine slows all of them."""
    xs = [nd.zeros((nbytes // 4,), ctx=mx.cpu(i)) for i in range(n)]
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    cases = {a: functools.partial(allreduce, xs, algorithm=a, out=xs)
             for a in algorithms}
    cases['memcpy'] = functools.partial(np.copyto, dst, src)
    nd.waitall()
    times = {c: [] for c in cases}
    for fn in cases.values():              # warm-up: streams, pages, caches
        fn()
        nd.waitall()
    for _ in range(reps or _reps(nbytes)):
        for c, fn in cases.items():
            t = _now()
            fn()
            if c != 'memcpy':              # (np.copyto is done when it returns)
                nd.waitall()
            times[c].append(_now() - t)
    return times


def measure(devices=DEVICES, sizes=SIZES):
    """The full table: one dict per ``(n, size, algorithm)``."""
    gc.collect()
    table = []
    for nbytes in sizes:
        mem2 = memcpy_bandwidth(nbytes, 2)
        for n in devices:
            times = allreduce_times(n, nbytes)
            mem1 = nbytes / statistics.median(times['memcpy'])
            for a in ALGORITHMS:
                t = statistics.median(times[a])
                algbw = nbytes / t
                table.append({'n': n, 'bytes': nbytes, 'algorithm': a,
                              'time_ms': t * 1e3, 'algbw': algbw / 1e9,
                              'busbw': algbw * 2 * (n - 1) / n / 1e9,
                              'memcpy1': mem1 / 1e9, 'memcpy2': mem2 / 1e9})
    return table


def rows_from(table):
    """Rows for benchmarks/run.py (see the module docstring)."""
    by = {(r['n'], r['bytes'], r['algorithm']): r for r in table}
    rows = []
    for (n, nbytes, a), r in sorted(by.items()):
        if a != 'ring':
            continue
        naive = by[(n, nbytes, 'naive')]
        rows.append({'name': f'ring vs naive, {n} devices, {_label(nbytes)}',
                     'ours': round(r['algbw'], 3),
                     'reference': round(naive['algbw'], 3),
                     'unit': 'GB/s algbw (ref: naive allreduce; higher is better)',
                     'busbw': round(r['busbw'], 3),
                     'ring_ms': round(r['time_ms'], 3),
                     'naive_ms': round(naive['time_ms'], 3)})
    for (n, nbytes, a), r in sorted(by.items()):
        if nbytes == max(s for _, s, _ in by):
            rows.append({'name': f'{a} allreduce vs memcpy, {n} devices, '
                                 f'{_label(nbytes)}',
                         'ours': round(r['algbw'], 3),
                         'reference': round(r['memcpy1'], 3),
                         'unit': 'GB/s algbw (ref: 1-thread np.copyto, same bytes, same loop)',
                         'busbw': round(r['busbw'], 3),
                         'memcpy_2threads': round(r['memcpy2'], 3)})
    return rows


def markdown(table):
    """The full table as markdown (one line per ``(n, size)``)."""
    by = {(r['n'], r['bytes'], r['algorithm']): r for r in table}
    lines = ['| devices | size | naive algbw | ring algbw | ring busbw | '
             'memcpy 1 thread | memcpy 2 threads | ring / naive | '
             'ring / memcpy |',
             '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |']
    for n in sorted({k[0] for k in by}):
        for nbytes in sorted({k[1] for k in by}):
            nv, rg = by.get((n, nbytes, 'naive')), by.get((n, nbytes, 'ring'))
            if nv is None or rg is None:
                continue
            lines.append(
                f'| {n} | {_label(nbytes)} | {nv["algbw"]:.2f} | {rg["algbw"]:.2f} '
                f'| {rg["busbw"]:.2f} | {rg["memcpy1"]:.2f} | {rg["memcpy2"]:.2f} '
                f'| {rg["algbw"] / nv["algbw"]:.2f}x '
                f'| {rg["algbw"] / rg["memcpy1"]:.2f}x |')
    return ('Bandwidths in GB/s (algbw = bytes / time; busbw = algbw x 2(n-1)/n; '
            'memcpy = np.copyto of the same bytes).\n\n' + '\n'.join(lines))


def plot(table, ax=None):
    """Algorithm bandwidth against size: one line per (algorithm, devices),
    memcpy (1 thread) dashed."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    sizes = sorted({r['bytes'] for r in table})
    colors = plt.get_cmap('tab10')
    for k, n in enumerate(sorted({r['n'] for r in table})):
        for a, style in [('naive', ':'), ('ring', '-')]:
            pts = sorted((r['bytes'], r['algbw']) for r in table
                         if r['algorithm'] == a and r['n'] == n)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker='o',
                    color=colors(k), label=f'{a}, {n} devices')
    mem = {r['bytes']: r['memcpy1'] for r in table}
    ax.plot(sizes, [mem[s] for s in sizes], 'k--', label='memcpy (1 thread)')
    ax.set_xscale('log', base=2)
    ax.set_yscale('log')
    ax.set_xticks(sizes)
    ax.set_xticklabels([_label(s) for s in sizes])
    ax.set_xlabel('array size')
    ax.set_ylabel('GB/s (algorithm bandwidth)')
    ax.legend(fontsize='small')
    return ax


def run():
    return rows_from(measure())


if __name__ == '__main__':
    t0 = _now()
    table = measure()
    if '--table' in sys.argv:
        print(markdown(table))
    else:
        for r in rows_from(table):
            print(r)
    print(f'({_now() - t0:.1f} s)', file=sys.stderr)
