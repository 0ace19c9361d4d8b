"""Why an upstream test failed, as a (cause, name) pair a report can count.

run.py lists every in-scope failure under its one-line reason; this module
folds those reasons into causes ("`mx.np.<name>` missing", "values differ
beyond tolerance", "timeout", ...) with, where there is one, the name that
blocked the test (``pad``, ``ndarray.tolist``, ``einsum(optimize=)``), so
that "every in-scope failure explained" is a table a reader can check: a
cause, how many tests it stops, and which names stop how many. A test is
counted under the FIRST failure it hit; fixing that name may reveal the next.

Reasons are pytest's crash messages as the harness records them, e.g.
``AttributeError: module 'd2lmini.numpy' has no attribute 'pad'`` or
``_mxnet_harness.MissingInD2lmini: d2lmini lacks mxnet.np.pad (module mxnet.np)``.
"""
import collections
import re

# d2lmini module names as MXNet users spell them.
_SPELLING = [('d2lmini', 'mx'), ('mxnet', 'mx'), ('numpy_extension', 'npx'),
             ('numpy', 'np'), ('symbol', 'sym'), ('ndarray', 'nd')]


def mx_name(module):
    """``d2lmini.symbol.numpy`` -> ``mx.sym.np`` (MXNet's user-facing spelling)."""
    parts = module.split('.')
    spell = dict(_SPELLING)
    return '.'.join(spell.get(p, p) for p in parts)


def _missing(module, attr):
    """The cause of ``module.attr`` being absent."""
    module = mx_name(module)
    if module in ('mx.nd', 'mx.sym') and attr in ('np', 'npx'):
        mode = 'symbolic: hybridized' if module == 'mx.sym' else 'imperative'
        return f'`F.np` / `F.npx` missing ({mode} HybridBlock)', f'{module}.{attr}'
    if module.startswith('mx.sym.') or module == 'mx.sym':
        return f'`{module}.<name>` missing (F in a hybridized block: symbolic mode)', attr
    if module.startswith('mx.nd.') or module == 'mx.nd':
        return f'`{module}.<name>` missing (F in an imperative HybridBlock, or legacy nd)', attr
    return f'`{module}.<name>` missing', attr


_CLASS_OWNER = {'ndarray': 'mx.np.ndarray', 'NDArray': 'mx.nd.NDArray',
                '_Symbol': 'mx.sym.np._Symbol', 'Symbol': 'mx.sym.Symbol'}

_RULES = [
    # (pattern, function of the match -> (cause, name))
    (r'TestTimeout|ran longer than .* \(harness timeout\)',
     lambda m: ('ran past the per-test timeout', '')),
    (r'CRASHED', lambda m: ('crashed or hung the test process', '')),
    (r'scipy is not installed.*scipy\.([\w.]+) unavailable',
     lambda m: ('needs SciPy (not installed; the harness fallback lacks it)', m[1])),
    (r'd2lmini lacks (mxnet[\w.]*)\.(\w+) \(module',
     lambda m: _missing(m[1], m[2])),
    (r'd2lmini lacks (mxnet\.util\.use_np)',
     lambda m: ('`mx.util.use_np` / `npx.set_np` missing (NumPy semantics)', '')),
    (r'd2lmini lacks (mxnet[\w.]*)\.(\w+)\b', lambda m: _missing(m[1], m[2])),
    (r'd2lmini lacks (mxnet)\b', lambda m: ('`mx` missing', '')),
    (r'd2lmini has no (.*?) \(harness test_utils\)',
     lambda m: ('harness: feature absent from d2lmini', m[1])),
    (r"module '([\w.]+)' has no attribute '(\w+)'", lambda m: _missing(m[1], m[2])),
    (r"type object '(\w+)' has no attribute '(\w+)'",
     lambda m: ('class attribute missing', f'{m[1]}.{m[2]}')),
    (r"'(\w+)' object has no attribute '(\w+)'",
     lambda m: (f'`{_CLASS_OWNER.get(m[1], m[1])}` attribute/method missing', m[2])),
    (r"No module named '([\w.]+)'",
     lambda m: ('module missing', mx_name(m[1]))),
    (r"(\w+)\(\) got an unexpected keyword argument '(\w+)'",
     lambda m: ('keyword argument not supported', f'{m[1]}({m[2]}=)')),
    (r'(\w+)\(\) (?:takes|missing) .*argument',
     lambda m: ('positional arguments not as MXNet', f'{m[1]}()')),
    (r'NotImplementedError:?\s*(.*)',
     lambda m: ('NotImplementedError', _short(m[1]))),
    (r'exceeds tolerance', lambda m: ('values differ beyond tolerance', '')),
    (r'\.shape = .* are not equal|\bassert .*\bshape|(?i:shape mismatch)'
     r'|operands could not be broadcast',
     lambda m: ('shape mismatch', '')),
    (r'\bassert .*\bdtype\b|(?i:dtype mismatch)',
     lambda m: ('dtype mismatch', '')),
    (r'Items are not equal|Arrays are not equal|array_equal|assert_equal',
     lambda m: ('values not equal (exact comparison)', '')),
    (r'DID NOT RAISE|did not raise|Should have failed',
     lambda m: ('expected an error, none raised', _short(m.string, 60))),
    (r'^AssertionError:?\s*(.*)',
     lambda m: ('other assertion', _short(m[1]))),
    (r'^([\w.]*(?:Error|Exception|Warning)):?\s*(.*)',
     lambda m: (f'`{m[1].rsplit(".", 1)[-1]}` raised', _short(m[2]))),
]
_RULES = [(re.compile(p), f) for p, f in _RULES]


def _short(text, width=80):
    """A message's first line, addresses and long numbers blanked."""
    line = (text or '').strip().splitlines()[0] if (text or '').strip() else ''
    line = re.sub(r'0x[0-9a-fA-F]+', '0x…', line)
    line = re.sub(r'\d+\.\d{3,}(e[-+]?\d+)?', '…', line)
    return line[:width]


def classify(reason):
    """(cause, name) for a test's failure reason; name may be ''.

    Reads the reason's first three non-empty lines as one (an
    AssertionError's message starts on its second line; the arrays that
    follow it would mislead the dtype and shape rules)."""
    text = re.sub(r'^\[(setup|teardown)\] ', '', (reason or '').strip())
    text = ' '.join([ln.strip() for ln in text.splitlines() if ln.strip()][:3])
    text = re.split(r' (?:ACTUAL|DESIRED|x|y): ', text)[0]     # numpy.testing's arrays
    for pattern, make in _RULES:
        m = pattern.search(text)
        if m:
            return make(m)
    return 'other', _short(text)


def table(failures):
    """Markdown: the causes of ``failures`` ({node: reason}), most tests first,
    each with its names and how many tests each one stops."""
    by_cause = collections.defaultdict(collections.Counter)
    for node, reason in failures.items():
        cause, name = classify(reason)
        by_cause[cause][name] += 1
    lines = ['| cause | tests | names (tests each stops) |', '|---|---:|---|']
    for cause, names in sorted(by_cause.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        listed = ', '.join(f'`{n}` ({c})' if n else f'({c})'
                           for n, c in sorted(names.items(), key=lambda kv: (-kv[1], kv[0])))
        listed = listed.replace('|', '\\|')
        lines.append(f'| {cause} | {sum(names.values())} | {listed} |')
    lines.append(f'| **total** | {len(failures)} | |')
    return lines
