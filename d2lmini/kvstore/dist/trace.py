"""A per-process timeline of a distributed job, for the chapters.

With ``D2LMINI_PS_TRACE=<directory>`` every process of the job writes what
it did, and when, to ``<directory>/<role>-<rank>.jsonl``: one JSON object a
line, ``{"who": "worker 1", "what": "pull", "key": 3, "t0": .., "t1": ..}``
(wall-clock seconds).  Workers record their pushes, pulls and barriers;
servers every request they handle and every update they apply.
:func:`load` reads a directory back, :func:`plot` draws it as one row of
bars per process.
"""
import glob
import json
import os
import time

__all__ = ['Tracer', 'load', 'plot']


class Tracer:
    """Records spans; does nothing when ``directory`` is None."""

    def __init__(self, directory, who):
        self.who = who
        self._f = None
        if directory:
            os.makedirs(directory, exist_ok=True)
            name = who.replace(' ', '-')
            self._f = open(os.path.join(directory, f'{name}.jsonl'), 'w')

    def __bool__(self):
        return self._f is not None

    def record(self, what, t0, t1=None, **info):
        if self._f is not None:
            event = dict(info, who=self.who, what=what, t0=t0,
                         t1=time.time() if t1 is None else t1)
            self._f.write(json.dumps(event) + '\n')

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None


def load(directory):
    """Every event in ``directory``, sorted by start time."""
    events = []
    for path in sorted(glob.glob(os.path.join(directory, '*.jsonl'))):
        with open(path) as f:
            events += [json.loads(line) for line in f if line.strip()]
    return sorted(events, key=lambda e: e['t0'])


COLORS = {'push': 'tab:blue', 'pull': 'tab:green', 'barrier': 'tab:gray',
          'update': 'tab:red', 'wait': 'tab:orange', 'compute': 'tab:purple',
          'init': 'tab:olive'}


def plot(events, ax=None, t0=None, whats=None):
    """One row per process, a bar per span, coloured by kind; returns ``ax``.

    The bars of a row and kind are one ``broken_barh`` (one drawing object,
    however many spans), so a long job still makes a small figure.
    """
    import matplotlib.pyplot as plt
    events = [e for e in events if whats is None or e['what'] in whats]
    rows = sorted({e['who'] for e in events},
                  key=lambda w: ({'scheduler': 0, 'server': 1, 'worker': 2}
                                 .get(w.split()[0], 3), w))
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.5 + 0.45 * len(rows)))
    start = min(e['t0'] for e in events) if t0 is None else t0
    spans = {}
    for e in events:
        spans.setdefault((e['who'], e['what']), []).append(
            (1e3 * (e['t0'] - start), 1e3 * (e['t1'] - e['t0'])))
    kinds = list(dict.fromkeys(e['what'] for e in events))
    for (who, what), bars in spans.items():
        ax.broken_barh(bars, (rows.index(who) - 0.3, 0.6),
                       color=COLORS.get(what, 'tab:brown'))
    for what in kinds:                      # one legend entry per kind
        ax.barh(0, 0, color=COLORS.get(what, 'tab:brown'), label=what)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel('time (ms)')
    ax.legend(loc='lower left', bbox_to_anchor=(0, 1.0), fontsize='small',
              ncol=len(kinds), frameon=False)
    return ax
