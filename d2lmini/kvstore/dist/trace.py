"""A per-process timeline of a distributed job, for the chapters.

With ``D2LMINI_PS_TRACE=<directory>`` every process of the job writes what
it did, and when, to ``<directory>/<role>-<rank>.jsonl``: one JSON object a
line, ``{"who": "worker 1", "what": "pull", "key": 3, "t0": .., "t1": ..}``
(wall-clock seconds).  Workers record their pushes, pulls and barriers;
servers every request they handle and every update they apply.
:func:`load` reads a directory back, :func:`plot` draws it as one row of
bars per process.  The spans are recorded, read and drawn by the span
recorder every timeline of d2lmini shares (:mod:`d2lmini.engine.trace`);
this module adds the file names, the events as dicts and the colours.
"""
import os

from ...engine import trace as _spans

__all__ = ['Tracer', 'load', 'plot']


class Tracer(_spans.Spans):
    """Records spans to ``<directory>/<who>.jsonl``; does nothing when
    ``directory`` is None."""

    def __init__(self, directory, who):
        path = None
        if directory:
            path = os.path.join(directory, who.replace(' ', '-') + '.jsonl')
        super().__init__(path, lane=who)
        self.who = who

    def __bool__(self):
        return self._f is not None

    def record(self, what, t0, t1=None, **info):
        if self._f is not None:
            super().record(what, t0, t1, **info)


def load(directory):
    """Every event in ``directory``, sorted by start time."""
    return [_spans.as_dict(s) for s in _spans.load(directory)]


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
    kinds = list(dict.fromkeys(e['what'] for e in events))
    _spans.plot([_spans.from_dict(e) for e in events], ax, lanes=rows,
                colors={k: COLORS.get(k, 'tab:brown') for k in kinds},
                t0=t0, height=0.6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.legend(loc='lower left', bbox_to_anchor=(0, 1.0), fontsize='small',
              ncol=len(kinds), frameon=False)
    return ax
