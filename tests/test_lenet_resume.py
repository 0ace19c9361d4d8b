"""Resuming: 2 epochs, checkpoint, a fresh process for epoch 3 == 3 epochs straight."""
import os
import pathlib
import subprocess
import sys

import numpy as np

from d2lmini import nd

WORKER = pathlib.Path(__file__).with_name('lenet_resume_worker.py')


def _run(*args):
    env = dict(os.environ, D2LMINI_ENGINE=os.environ.get('D2LMINI_ENGINE', 'threaded'))
    subprocess.run([sys.executable, str(WORKER), *map(str, args)], check=True,
                   env=env, timeout=300)


def test_resume_in_a_fresh_process_is_bitwise_identical(tmp_path, fashion_mnist_dir):
    straight, first, resumed = (str(tmp_path / n) for n in ('straight', 'first', 'resumed'))
    _run(fashion_mnist_dir, 0, 3, straight)
    _run(fashion_mnist_dir, 0, 2, first)
    _run(fashion_mnist_dir, 2, 3, resumed, first)
    a = nd.load(straight + '.params')
    b = nd.load(resumed + '.params')
    c = nd.load(first + '.params')
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k].asnumpy(), b[k].asnumpy(), err_msg=k)
    # and the third epoch really changed something (the check is not vacuous)
    assert any(not np.array_equal(a[k].asnumpy(), c[k].asnumpy()) for k in a)
