"""Timing and bookkeeping: :class:`Timer`, :class:`Accumulator`,
:class:`Benchmark` (how long a ``with`` block took), and results shown as
a table: :func:`table` (HTML in a notebook, aligned text elsewhere).
"""
import re
import time

import numpy as np


class Timer:
    """Record multiple running times.

    >>> timer = Timer(); ...; timer.stop()           # seconds since start
    """

    def __init__(self):
        self.times = []
        self.start()

    def start(self):
        """Start the timer."""
        self.tik = time.time()

    def stop(self):
        """Stop the timer and record the time in a list."""
        self.times.append(time.time() - self.tik)
        return self.times[-1]

    def avg(self):
        """Return the average time."""
        return sum(self.times) / len(self.times)

    def sum(self):
        """Return the sum of time."""
        return sum(self.times)

    def cumsum(self):
        """Return the accumulated time."""
        return np.array(self.times).cumsum().tolist()


class Accumulator:
    """For accumulating sums over ``n`` variables.

    >>> metric = Accumulator(2); metric.add(3, 10); metric[0] / metric[1]
    0.3
    """

    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        """Add ``args[i]`` to the ``i``-th sum."""
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        """Set every sum back to 0."""
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


class Benchmark:
    """Time a ``with`` block and print how long it took.

    The classic book's form (``d2lzh``), by position or ``prefix=``::

        with Benchmark('Run on CPU.'): ...      # Run on CPU. time: 0.1234 sec
        with Benchmark(): ...                   # time: 0.1234 sec

    The second edition's form, by keyword ``description=``::

        with Benchmark(description='mlp'): ...  # mlp: 0.1234 sec

    ``quiet=True`` prints nothing; either way the seconds are kept in
    ``.time`` once the block is over::

        with Benchmark(quiet=True) as t: ...
        t.time                                  # 0.1234
    """

    def __init__(self, prefix=None, *, description=None, quiet=False):
        if description is not None:
            self._label = f'{description}: '
        else:
            self._label = f'{prefix} time: ' if prefix else 'time: '
        self.quiet = quiet
        self.time = None

    def __enter__(self):
        self.timer = Timer()
        return self

    def __exit__(self, *args):
        self.time = self.timer.stop()
        if not self.quiet:
            print(f'{self._label}{self.time:.4f} sec')


_NUMBER = re.compile(r'[-+]?(\d|\.\d)')     # a cell that starts with a number


class Table:
    """Rows of results, shown as a table: HTML in a notebook and on the
    book's site, aligned plain text elsewhere (``print``, a terminal).

    Made by :func:`table`.  A column whose cells all start with a number
    (``'0.215'``, ``'5,004'``, ``'1.30x'``, ``'82 ms'``) is right-aligned,
    the others left-aligned, unless ``align`` says otherwise.
    """

    def __init__(self, header, rows, align=None):
        self.header = [str(h) for h in header]
        self.rows = [[str(c) for c in row] for row in rows]
        for row in self.rows:
            if len(row) != len(self.header):
                raise ValueError(f'table: a row has {len(row)} cells, the '
                                 f'header {len(self.header)}: {row}')
        if align is None:
            align = ''.join(
                'r' if self.rows and all(_NUMBER.match(r[i]) or not r[i]
                                         for r in self.rows) else 'l'
                for i in range(len(self.header)))
        if len(align) != len(self.header) or set(align) - set('lr'):
            raise ValueError(f"table: align={align!r} needs one 'l' or 'r' "
                             f"per column ({len(self.header)})")
        self.align = align

    def __repr__(self):
        cells = [self.header, *self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]

        def line(row):
            return '  '.join(c.rjust(w) if a == 'r' else c.ljust(w)
                             for c, w, a in zip(row, widths, self.align)).rstrip()
        return '\n'.join(line(r) for r in cells)

    def _repr_html_(self):
        import html

        def cells(row, tag):
            return ''.join(
                f'<{tag}' + (' style="text-align: right"' if a == 'r' else '')
                + f'>{html.escape(c)}</{tag}>' for c, a in zip(row, self.align))
        head = f'<thead><tr>{cells(self.header, "th")}</tr></thead>'
        body = ''.join(f'<tr>{cells(r, "td")}</tr>' for r in self.rows)
        return f'<table class="table">{head}<tbody>{body}</tbody></table>'


def table(header, rows, align=None):
    """A table of results for a notebook: ``header`` names the columns,
    each of ``rows`` gives one cell per column (anything; shown with
    ``str``).  Numbers are right-aligned.

    >>> table(['devices', 'images/s'], [('cpu(0)', '4,543'), ('cpu(0)+cpu(1)', '5,889')])
    devices        images/s
    cpu(0)            4,543
    cpu(0)+cpu(1)     5,889
    """
    return Table(header, rows, align)
