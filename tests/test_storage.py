"""Pooled host memory (d2lmini/storage.py): freed arrays' pages are reused.

Counted in page faults, not seconds: a 4 KB page the kernel has to hand out
(and zero) again is one minor fault.  Each case runs in a fresh interpreter,
with the pool on and off, so the two malloc policies do not mix.
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHURN = r'''
import resource, numpy as np
import d2lmini
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def churn():      # arrays of a training step's sizes, allocated and freed
    arrs = [np.ones(n, np.float32) for n in (1 << 21, 3 << 20, 1 << 22, 5 << 19)]
    del arrs
churn(); churn()
f0 = faults()
for _ in range(5):
    churn()
print(d2lmini.storage.pooled(), (faults() - f0) // 5)
'''


def churn(pool):
    env = dict(os.environ, D2LMINI_MEM_POOL='1' if pool else '0',
               PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    out = subprocess.run([sys.executable, '-c', CHURN], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0] == 'True', int(out[1])


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='glibc only')
def test_pool_reuses_freed_pages():
    pooled, faults = churn(True)
    if not pooled:
        pytest.skip('the C library has no mallopt (not glibc)')
    unpooled, faults_without = churn(False)
    assert not unpooled
    # 46 MB churned per round: ~11000 pages.  Without the pool glibc gives
    # part of them back to the kernel at each free (1520 pages per round
    # here); with it, none.
    assert faults_without > 1000, faults_without
    assert faults < 100, faults
