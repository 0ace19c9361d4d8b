"""scipy.stats for the harness when SciPy is not installed, in NumPy:
``pearsonr`` (test_metric.py's oracle for PCC and PearsonCorrelation),
``uniform.ppf``/``uniform.cdf`` (test_numpy_op.py's random-generator
buckets) and ``chisquare`` (the p-value of test_utils.verify_generator).
Anything else raises ImportError."""
import math
from types import SimpleNamespace

import numpy as np


def pearsonr(x, y):
    """(r, p-value); the p-value is not computed (NaN): the tests read r."""
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    xc, yc = x - x.mean(), y - y.mean()
    r = float((xc * yc).sum() / np.sqrt((xc * xc).sum() * (yc * yc).sum()))
    return r, float('nan')


def _uniform_ppf(q, loc=0.0, scale=1.0):
    return loc + scale * np.asarray(q, dtype=np.float64)


def _uniform_cdf(x, loc=0.0, scale=1.0):
    return np.clip((np.asarray(x, dtype=np.float64) - loc) / scale, 0.0, 1.0)


uniform = SimpleNamespace(ppf=_uniform_ppf, cdf=_uniform_cdf)


def _gammaincc(a, x):
    """The regularized upper incomplete gamma Q(a, x), a > 0, x >= 0:
    a power series for x < a + 1, else a continued fraction (Lentz)."""
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1 / a
        n = a
        while abs(term) > abs(total) * 1e-15:
            n += 1
            term *= x / n
            total += term
        return max(0.0, 1 - total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return math.exp(log_front) * h


def chisquare(f_obs, f_exp):
    """(statistic, p-value) of Pearson's chi-square test, k - 1 degrees of freedom."""
    f_obs = np.asarray(f_obs, dtype=np.float64)
    f_exp = np.asarray(f_exp, dtype=np.float64)
    stat = float(((f_obs - f_exp) ** 2 / f_exp).sum())
    return stat, _gammaincc((f_obs.size - 1) / 2, stat / 2)


def __getattr__(name):
    if name.startswith('__'):                # the import system's probes
        raise AttributeError(name)
    raise ImportError(f'scipy is not installed (harness placeholder; '
                      f'scipy.stats.{name} unavailable)')
