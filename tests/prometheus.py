"""A reader of Prometheus' text format that checks what it reads.

``GET /metrics`` (``d2lmini.serve``) is scraped by Prometheus, which
refuses a page with one bad line.  :func:`parse` reads a page into
``{(name, labels): value}`` and fails on anything the format does not
allow; :func:`histogram` reads one histogram back and checks it (buckets
cumulative, the last ``+Inf``, ``_count`` equal to it).  The format:
https://prometheus.io/docs/instrumenting/exposition_formats/.
"""
import re

SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)\Z')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(?:,|\Z)')


def parse(text):
    """Prometheus' text format, checked: ``{(name, labels): value}`` with
    ``labels`` a sorted tuple; every sample of a declared family, HELP and
    TYPE once each, before the family's samples."""
    assert text.endswith('\n')
    kinds, helps, samples = {}, set(), {}
    for line in text.splitlines():
        if line.startswith('# HELP '):
            name = line.split(' ')[2]
            assert name not in helps and name not in kinds, line
            helps.add(name)
            continue
        if line.startswith('# TYPE '):
            _, _, name, kind = line.split(' ')
            assert name in helps and name not in kinds, line
            assert kind in ('counter', 'gauge', 'histogram'), line
            kinds[name] = kind
            continue
        m = SAMPLE.match(line)
        assert m, f'not a sample line: {line!r}'
        name, labels, value = m.groups()
        family = re.sub(r'_(bucket|sum|count)\Z', '', name)
        assert name in kinds or kinds.get(family) == 'histogram', line
        pairs, at = [], 0
        while labels and at < len(labels):
            lm = LABEL.match(labels, at)
            assert lm, f'bad labels in {line!r}'
            pairs.append(lm.groups())
            at = lm.end()
        key = (name, tuple(sorted(pairs)))
        assert key not in samples, f'twice: {line!r}'
        samples[key] = float(value)
    return samples


def histogram(samples, name, **labels):
    """``{le: cumulative count}`` and the count of one histogram, checked:
    buckets cumulative, the last ``+Inf``, the count equal to it."""
    want = tuple(sorted((k, str(v)) for k, v in labels.items()))
    buckets = sorted(((float(dict(lab)['le']), v) for (n, lab), v in samples.items()
                      if n == f'{name}_bucket'
                      and tuple(p for p in lab if p[0] != 'le') == want))
    if not buckets:
        return {}, 0
    counts = [c for _, c in buckets]
    assert counts == sorted(counts) and buckets[-1][0] == float('inf')
    total = samples[(f'{name}_count', want)]
    assert total == counts[-1]
    assert (f'{name}_sum', want) in samples
    return dict(buckets), total
