"""MXNet's aggregate statistics, as ``profiler.dumps()`` prints them.

One section per category, in name order: ``operator`` (the engine's
operations, on every device together), a domain's name (its tasks and
counters), ``<domain>,frame``, ``<domain>,instant_marker`` (markers are
listed by category only, as MXNet does) and ``event``.  A row gives the
count, and the total, minimum, maximum and average time in milliseconds.
Rows are sorted by ``sort_by``, largest first unless ``ascending``.

A counter's row follows MXNet to the letter, odd as it is: its values
(the last, the smallest, the largest) divided by 1000 in the time columns,
and half its range, divided by 1000, as the average.  The memory section,
``Device Storage`` (:mod:`.memory`), has no time column: its counters'
smallest, largest and "average" values are in kB (1000 bytes), and in
the JSON document it goes under ``Memory`` instead of ``Time``.
"""
import json

SORT_BY = ('total', 'avg', 'min', 'max', 'count')
FORMATS = ('table', 'json')
_RULE = '================='
_COLUMNS = ('Name', 'Total Count', 'Time (ms)', 'Min Time (ms)', 'Max Time (ms)',
            'Avg Time (ms)')
_MEMORY_COLUMNS = ('Name', 'Total Count', 'Min Use  (kB)', 'Max Use  (kB)',
                   'Avg Use  (kB)')
MEMORY = ('Device Storage', 'Pool Memory')      # MXNet's memory sections


def _values(row):
    """``(count, total, min, max, avg)`` as MXNet prints them."""
    kind, count, total, lo, hi = row
    if kind == 'counter':
        return count, total / 1e3, lo / 1e3, hi / 1e3, ((hi - lo) // 2) / 1e3
    return count, total / 1e3, lo / 1e3, hi / 1e3, total / count / 1e3


def _sorted(rows, sort_by, ascending):
    """``rows`` (``{name: row}``) in MXNet's order: by the value, then by
    the name, both descending; ``ascending`` reverses the value only."""
    def key(item):
        name, (kind, count, total, lo, hi) = item
        if sort_by == 'avg':
            value = (hi - lo) // 2 if kind == 'counter' else total / count
        else:
            value = {'total': total, 'min': lo, 'max': hi, 'count': count}[sort_by]
        return (-value if ascending else value, name)
    return sorted(rows.items(), key=key, reverse=True)


def table(stats, sort_by='total', ascending=False):
    """The text table of ``stats`` (``{category: {name: row}}``)."""
    def line(cells):
        first, count, *times = cells
        return f'{first:<25}{count:>16} ' + ' '.join(f'{t:>16}' for t in times)
    out = ['', 'Profile Statistics:',
           '\tNote the difference in units for different entries.']
    for category in sorted(stats):
        memory = category in MEMORY
        columns = _MEMORY_COLUMNS if memory else _COLUMNS
        out += [category, _RULE, line(columns),
                line(['-' * len(c) if i else '----' for i, c in enumerate(columns)])]
        for name, row in _sorted(stats[category], sort_by, ascending):
            count, *times = _values(row)
            if memory:
                times = times[1:]        # no total
            out.append(line([name, count] + [f'{t:.4f}' for t in times]))
        out.append('')
    return '\n'.join(out) + '\n'


def as_json(stats, sort_by='total', ascending=False):
    """The JSON document of ``stats``: ``Time`` (per category, per name:
    ``Count``, ``Total``, ``Min``, ``Max``, ``Avg``), ``Memory`` and
    ``Unit``, with four significant digits as MXNet writes them."""
    time, memory = {}, {}
    for category in sorted(stats):
        section = (memory if category in MEMORY else time)[category] = {}
        for name, row in _sorted(stats[category], sort_by, ascending):
            count, *values = _values(row)
            keys = ('Total', 'Min', 'Max', 'Avg')
            if category in MEMORY:
                keys, values = keys[1:], values[1:]
            section[name] = dict(
                Count=count, **{k: float(f'{v:.4g}') for k, v in zip(keys, values)})
    return json.dumps({'Time': time, 'Memory': memory,
                       'Unit': {'Time': 'ms', 'Memory': 'kB'}}, indent=4) + '\n'
