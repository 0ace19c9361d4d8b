"""``GET /metrics``: counters and histograms in Prometheus' text format.

Prometheus scrapes a page of lines ``name{label="value"} number``, with
``# HELP`` and ``# TYPE`` lines before each family.  A histogram is
cumulative buckets ``name_bucket{le="0.005"}`` (how many observations
were at most 0.005), ``name_sum`` and ``name_count``; the quantiles are
computed by whoever reads them.  (The format:
https://prometheus.io/docs/instrumenting/exposition_formats/.)
"""
import bisect
import collections

__all__ = ['Metrics', 'LATENCY_BUCKETS', 'BATCH_BUCKETS']

LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0,
                   2.0, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _labels(labels):
    if not labels:
        return ''
    text = ','.join(f'{k}="{_escape(v)}"' for k, v in labels)
    return '{' + text + '}'


def _escape(value):
    """A label value as the format asks: backslash, double quote and line
    feed escaped (a model name comes from a URL: anything can be in it)."""
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _number(v):
    """Every digit of a count (``%g`` would write 1234567 as 1.23457e+06)."""
    return str(int(v)) if isinstance(v, int) else repr(float(v))


class _Histogram:
    def __init__(self, buckets):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)     # the last: +Inf
        self.sum = 0.0

    def observe(self, value):
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.sum += value


class Metrics:
    """Counters, gauges and histograms keyed by label tuples."""

    def __init__(self, prefix='d2lmini_serve_'):
        self.prefix = prefix
        self.help = {}
        self.kind = {}
        self.values = collections.defaultdict(dict)   # family -> labels -> value
        self._buckets = {}

    def _family(self, name, kind, text, buckets=None):
        if name not in self.kind:
            self.kind[name], self.help[name] = kind, text
            if buckets:
                self._buckets[name] = buckets
        return self.values[name]

    def inc(self, name, text, by=1, **labels):
        fam = self._family(name, 'counter', text)
        key = tuple(sorted(labels.items()))
        fam[key] = fam.get(key, 0) + by

    def set(self, name, text, value, **labels):
        self._family(name, 'gauge', text)[tuple(sorted(labels.items()))] = value

    def observe(self, name, text, value, buckets, **labels):
        fam = self._family(name, 'histogram', text, buckets)
        key = tuple(sorted(labels.items()))
        if key not in fam:
            fam[key] = _Histogram(buckets)
        fam[key].observe(value)

    def get(self, name, **labels):
        return self.values.get(name, {}).get(tuple(sorted(labels.items())))

    def render(self):
        lines = []
        for name in sorted(self.values):
            full = self.prefix + name
            lines += [f'# HELP {full} {self.help[name]}',
                      f'# TYPE {full} {self.kind[name]}']
            for key, v in sorted(self.values[name].items()):
                if self.kind[name] != 'histogram':
                    lines.append(f'{full}{_labels(key)} {_number(v)}')
                    continue
                total = 0
                for le, c in zip(list(v.buckets) + ['+Inf'], v.counts):
                    total += c
                    le = le if le == '+Inf' else f'{le:g}'
                    lines.append(f'{full}_bucket{_labels(key + (("le", le),))} {total}')
                lines.append(f'{full}_sum{_labels(key)} {_number(v.sum)}')
                lines.append(f'{full}_count{_labels(key)} {total}')
        return '\n'.join(lines) + '\n'
