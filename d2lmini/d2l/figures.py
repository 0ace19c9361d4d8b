"""The figures of chapters 9-14, which those chapters draw but do not
teach: timelines of an engine trace coloured by pass
(:func:`trace_passes`, :func:`plot_passes`, chapter 10), the processes of
a parameter-server job (:func:`draw_cluster`, chapter 11), the steps of a
ring allreduce (:func:`draw_ring`) and Horovod's timelines
(:func:`plot_collectives`, chapter 13).
"""
import numpy as np

from .plotting import _plt


_PASS_COLORS = {'forward': 'tab:orange', 'backward': 'tab:blue',
                'copy': 'tab:red'}


def trace_passes(trace, ctx):
    """``(name, start, end, kind)`` of each operation ``trace`` holds on
    ``ctx``: ``'copy'`` for a copy between devices (``copyto``),
    ``'backward'`` for an operation that autograd's backward pass pushed
    (``trace.spans(ctx, backward=True)``), ``'forward'`` for any other, which
    in a trace of forward and backward passes is the forward pass.

    Examples
    --------
    >>> with mx.engine.Trace() as tr:
    ...     with autograd.record():
    ...         l = net(X).sum()
    ...     l.backward()
    >>> [k for _, _, _, k in d2l.trace_passes(tr, mx.cpu(0))]
    ['forward', 'forward', 'backward', ...]
    """
    return [(name, start, end, 'copy' if name == 'copyto' else
             'backward' if backward else 'forward')
            for _, name, start, end, backward in trace.spans(ctx, backward=True)]


def plot_passes(trace, devices, ax=None, title=None, legend=True):
    """A timeline of an engine trace: one row per device, one bar per
    operation, coloured by :func:`trace_passes` (forward, backward, copy).

    Examples
    --------
    >>> with mx.engine.Trace() as tr:
    ...     forward_backward(net, X, y)
    >>> d2l.plot_passes(tr, [mx.cpu(0), mx.cpu(1)], title='one step')
    """
    plt = _plt()
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.65 * len(devices) + 0.4))
    for row, dev in enumerate(devices):
        bars = {}
        for _, start, end, kind in trace_passes(trace, dev):
            bars.setdefault(kind, []).append((start * 1e3, (end - start) * 1e3))
        for kind, spans in bars.items():
            ax.broken_barh(spans, (row - 0.4, 0.8), color=_PASS_COLORS[kind],
                           label=kind)
    ax.set_yticks(range(len(devices)), [str(d) for d in devices])
    ax.set_xlabel('time (ms)')
    if legend:
        handles = [plt.Rectangle((0, 0), 1, 1, color=c)
                   for c in _PASS_COLORS.values()]
        ax.legend(handles, list(_PASS_COLORS), loc='center left',
                  bbox_to_anchor=(1, 0.5), fontsize='small')
    if title:
        ax.set_title(title, fontsize='medium', loc='left')
    return ax


def draw_cluster(num_workers=4, num_servers=2):
    """The processes of a parameter-server job (chapter 11): workers, which
    push gradients to and pull weights from every server (solid lines), and
    the scheduler, which sees only control messages (dotted).

    Examples
    --------
    >>> fig = d2l.draw_cluster(num_workers=4, num_servers=2)
    """
    fig, ax = _plt().subplots(figsize=(6, 2.6))

    def box(x, y, text, color):
        ax.text(x, y, text, ha='center', va='center', fontsize=8,
                bbox=dict(boxstyle='round', fc=color, ec='gray'))
    xs_w = np.linspace(0.1, 0.9, num_workers)
    xs_s = np.linspace(0.3, 0.7, num_servers)
    for xw in xs_w:
        for xs in xs_s:                           # data: push and pull
            ax.plot([xw, xs], [0.15, 0.55], color='tab:blue', lw=1)
        ax.plot([xw, 0.93], [0.15, 0.9], ':', color='gray', lw=0.8)
    for xs in xs_s:                               # control only
        ax.plot([xs, 0.93], [0.55, 0.9], ':', color='gray', lw=0.8)
    for i, xw in enumerate(xs_w):
        box(xw, 0.15, f'worker {i}\ndata, gradients', '#e8f0fe')
    for j, xs in enumerate(xs_s):
        box(xs, 0.55, f'server {j}\nits keys', '#fde8e8')
    box(0.93, 0.9, 'scheduler', '#eeeeee')
    ax.text(0.05, 0.42, 'push gradients\npull weights', fontsize=8,
            color='tab:blue')
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1)
    ax.axis('off')
    return fig


def draw_ring(history, n):
    """The steps of a ring allreduce on ``n`` ranks, one panel each
    (chapter 13).  ``history`` is a list of ``(phase, moves, holds)``:
    the phase's name, the ``(sender, receiver, chunk)`` messages of the
    step, and, after it, ``holds[rank][chunk]``, the set of ranks whose
    contributions that chunk of that rank holds.  Each rank is a row of
    ``n`` squares, one per chunk, darker and numbered by how many ranks
    it holds; each message an arrow in its chunk's colour.

    Examples
    --------
    >>> _, history = simulate_ring(arrays)     # chapter 13's simulation
    >>> fig = d2l.draw_ring(history, 4)
    """
    plt = _plt()
    colors = plt.cm.tab10(np.arange(n))
    fig, axes = plt.subplots(2, n, figsize=(2.2 * n, 4.6))
    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
    pos = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    w = 0.26                                     # side of one chunk
    steps = {'reduce-scatter': 0, 'all-gather': 0}
    for ax in axes.flat:
        ax.set_xlim(-1.7, 1.7)
        ax.set_ylim(-1.6, 1.5)
        ax.set_aspect('equal')
        ax.axis('off')
    for ax, (phase, moves, holds) in zip(axes.flat, history):
        if phase in steps:
            steps[phase] += 1
            phase = f'{phase}, step {steps[phase]}'
        ax.set_title(phase, fontsize=9)
        for src, dst, c in moves:
            p, q = pos[src], pos[dst]
            ax.annotate('', xy=p + 0.72 * (q - p), xytext=p + 0.28 * (q - p),
                        arrowprops=dict(arrowstyle='-|>', color=colors[c],
                                        lw=2))
        for r, (x, y) in enumerate(pos):
            for c in range(n):
                k = len(holds[r][c])
                x0 = x - n * w / 2 + c * w
                ax.add_patch(plt.Rectangle((x0, y - w / 2), w, w,
                                           fc=colors[c], ec='black', lw=0.5,
                                           alpha=0.15 + 0.85 * k / n))
                ax.text(x0 + w / 2, y, str(k), ha='center', va='center',
                        fontsize=7, fontweight='bold' if k == n else None)
            ax.text(x, y - w / 2 - 0.05, f'rank {r}', ha='center', va='top',
                    fontsize=8)
    axes[1, n - 1].text(0, 0, 'number in a chunk:\nranks summed in it\n\n'
                        'arrow: a message,\nin the colour of\nits chunk',
                        ha='center', va='center', fontsize=8)
    fig.tight_layout()
    return fig


def plot_collectives(traces, num_steps, step):
    """Horovod timelines (chapter 13): a row of two plots per trace.

    ``traces`` maps a title to ``{rank: spans}``, each rank's
    ``HOROVOD_TIMELINE`` file as :func:`d2lmini.engine.trace.load` reads it:
    ``(lane, name, start, end, info)`` in seconds, ``info['cat']`` the
    collective.  On the left the whole run, a bar per broadcast (grey) and
    allreduce (blue), each at least 1.5 ms wide so that it shows; on the
    right the allreduces of step ``step`` (from 1) of the ``num_steps`` the
    run took, magnified.

    Examples
    --------
    >>> fig = d2l.plot_collectives({'fused': spans}, num_steps=10, step=5)
    """
    def of(spans, cat):
        return [s for s in spans if s[4]['cat'] == cat]

    def bars(ax, spans, cat, zero, color, label=None, least=0.0, **kw):
        for rank, sp in spans.items():
            ms = [((s[2] - zero) * 1e3, max((s[3] - s[2]) * 1e3, least))
                  for s in of(sp, cat)]
            ax.broken_barh(ms, (rank - 0.35, 0.7), color=color,
                           label=label if rank == 0 else None, **kw)

    fig, axes = _plt().subplots(len(traces), 2, figsize=(9, 1.8 * len(traces)),
                                gridspec_kw={'width_ratios': [2, 1]},
                                squeeze=False)
    for row, (title, spans) in zip(axes, traces.items()):
        reduces = {r: of(sp, 'allreduce') for r, sp in spans.items()}
        zero = min(r[0][2] for r in reduces.values())
        bars(row[0], spans, 'broadcast', zero, 'tab:gray', 'broadcast', 1.5)
        bars(row[0], spans, 'allreduce', zero, 'tab:blue', 'allreduce', 1.5)
        row[0].set_title(f'{title}: {num_steps} steps', fontsize=9)
        per_step = len(reduces[0]) // num_steps     # allreduces per step
        one = {r: sp[(step - 1) * per_step:step * per_step]
               for r, sp in reduces.items()}
        begin = min(s[2] for sp in one.values() for s in sp)
        end = max(s[3] for sp in one.values() for s in sp)
        bars(row[1], one, 'allreduce', begin, 'tab:blue', edgecolor='black',
             linewidth=0.5)
        row[1].set_xlim(-0.05 * (end - begin) * 1e3, 1.05 * (end - begin) * 1e3)
        row[1].set_title(f'step {step}: {per_step} allreduce(s)', fontsize=9)
        for ax in row:
            ax.set_yticks(sorted(spans))
            ax.set_yticklabels([f'rank {r}' for r in sorted(spans)])
    axes[-1, 0].set_xlabel('ms after the first allreduce')
    axes[-1, 1].set_xlabel("ms after the step's first allreduce began")
    axes[0, 0].legend(loc='lower left', bbox_to_anchor=(0, 1.15), ncol=2,
                      fontsize='small')
    fig.tight_layout()
    return fig
