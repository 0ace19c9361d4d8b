"""The model server across hosts: the front end on one network namespace
(tests/netns.py), its workers on two others, so every batch crosses a
network interface.

The front end's HTTP side stays on host 0's own 127.0.0.1 (the client runs
there too); its workers' side binds host 0's address (``--host-ip``), and
the workers, started by hand (``--devices none --expect-workers 2``),
connect to it.  A worker killed on its host is noticed by its silence and
the server goes on with the other.  The mistake this setup catches: a
front end whose workers' side is bound to 127.0.0.1 cannot be reached from
another host; it must say so and stop, not hang.
"""
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import netns
from conftest import child_pythonpath

pytest.importorskip('zmq')
pytest.importorskip('tornado')
OK, WHY = netns.available()
pytestmark = [pytest.mark.skipif(not OK, reason=f'no network namespaces: {WHY}'),
              pytest.mark.cpu_context]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = os.path.join(ROOT, 'tests', 'fixtures', 'serve', 'mx191_lenet')
MODEL = 'mx191_lenet'
WORKER_PORT = 9200      # any port is free in a namespace just made
START_TIMEOUT = 60      # seconds for a front end to print its address

# Run on host 0: wait until GET /models lists N workers, then predict.
CLIENT = '''
import json, sys, time
import numpy as np
from d2lmini.serve.client import get_json, predict
url, n, x = sys.argv[1], int(sys.argv[2]), np.load(sys.argv[3])
deadline = time.monotonic() + 20
while True:
    info = get_json(f'{url}/models/mx191_lenet')[0]
    if len(info['workers']) == n or time.monotonic() > deadline:
        break
    time.sleep(0.05)
y = [predict(url, 'mx191_lenet', x).tolist() for _ in range(2 * n)]
print(json.dumps({'info': get_json(f'{url}/models/mx191_lenet')[0], 'y': y}))
'''


def _env():
    return dict(os.environ, PYTHONPATH=child_pythonpath(ROOT),
                PYTHONUNBUFFERED='1', OMP_NUM_THREADS='1')


class _Lines(threading.Thread):
    """Collects what a process prints; ``wait_for(text)``."""

    def __init__(self, proc):
        super().__init__(daemon=True)
        self.proc, self.lines, self.changed = proc, [], threading.Condition()
        self.start()

    def run(self):
        for line in self.proc.stdout:
            with self.changed:
                self.lines.append(line.rstrip('\n'))
                self.changed.notify_all()
        with self.changed:
            self.lines.append(None)           # the end
            self.changed.notify_all()

    def wait_for(self, text, timeout):
        """The first line holding ``text``, or None (the process ended, or
        ``timeout`` seconds passed)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for line in self.lines:
                    if line is None:
                        return None
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)

    def text(self):
        return '\n'.join(line for line in self.lines if line is not None)


def _start(host, argv, **kw):
    proc = host.popen([sys.executable, *map(str, argv)], env=_env(),
                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                      text=True, **kw)
    return proc, _Lines(proc)


def _front_end(host, port, *args):
    return _start(host, ['-m', 'd2lmini.serve', PREFIX, '--devices', 'none',
                         '--port', 0, '--worker-port', port, *args])


def _worker(host, frontend_host, port, name):
    return _start(host, ['-m', 'd2lmini.serve.worker', '--frontend',
                         f'tcp://{frontend_host.addr}:{port}', '--device',
                         'cpu(0)', '--name', name, '--frontend-timeout', 2])


@contextlib.contextmanager
def _stopped_at_end(*procs):
    """Whatever a failed test left running is stopped (its process group)."""
    try:
        yield
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(10)


@pytest.fixture(scope='module')
def hosts():
    with netns.Hosts(3, prefix='d2lserve') as h:
        yield h


def test_workers_on_two_hosts_serve_and_one_dies(hosts, tmp_path):
    from d2lmini import cpu
    from d2lmini.serve.model import Predictor, load
    x = np.load(PREFIX + '-reference.npz')['x']
    np.save(tmp_path / 'x.npy', x)
    expected = Predictor(load(PREFIX), cpu(0))(x)[0]
    h0, h1, h2 = hosts
    port = WORKER_PORT
    front, front_out = _front_end(h0, port, '--host-ip', h0.addr,
                                  '--expect-workers', 2)
    (w1, w1_out), (w2, _) = (_worker(h1, h0, port, 'on-host1'),
                             _worker(h2, h0, port, 'on-host2'))
    with _stopped_at_end(front, w1, w2):
        serving = front_out.wait_for('serving', START_TIMEOUT)
        assert serving, front_out.text()
        url = serving.split(' at ')[1].split()[0]
        assert url.startswith('http://127.0.0.1:')
        assert f'tcp://{h0.addr}:{port}' in serving

        def client(n):
            res = h0.run([sys.executable, '-c', CLIENT, url, str(n),
                          str(tmp_path / 'x.npy')], env=_env(), timeout=60)
            assert res.returncode == 0, res.stderr + front_out.text()
            return json.loads(res.stdout.strip().splitlines()[-1])

        got = client(2)
        assert sorted(w['id'] for w in got['info']['workers']) == \
            ['on-host1', 'on-host2']
        assert all(w['batches'] >= 1 for w in got['info']['workers'])  # both
        for y in got['y']:
            np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)

        os.killpg(w2.pid, signal.SIGKILL)        # host 2's worker, gone at once
        w2.wait(10)
        got = client(1)
        assert [w['id'] for w in got['info']['workers']] == ['on-host1']
        lost, = got['info']['lostWorkers']
        assert lost['id'] == 'on-host2', lost
        # (silent, or its connection closed by its host's kernel: either is seen)
        assert any(why in lost['reason'] for why in ('no heartbeat',
                                                     'cannot send')), lost
        for y in got['y']:
            np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)

        front.send_signal(signal.SIGTERM)        # stops, and tells the worker
        assert front.wait(20) == 0, front_out.text()
        assert w1.wait(20) == 0, w1_out.text()


def test_a_loopback_worker_side_is_reported(hosts):
    """Bound to host 0's 127.0.0.1, the front end's worker side cannot be
    reached from host 1: the front end says so and exits, so does the
    worker."""
    h0, h1, _ = hosts
    port = WORKER_PORT + 1
    front, front_out = _front_end(h0, port, '--host-ip', '127.0.0.1',
                                  '--expect-workers', 1, '--start-timeout', 3)
    worker, worker_out = _worker(h1, h0, port, 'stranded')
    with _stopped_at_end(front, worker):
        assert front.wait(START_TIMEOUT) == 1, front_out.text()
        assert worker.wait(30) == 1, worker_out.text()
    front_out.join(5)
    text = front_out.text()
    assert f'0 of 1 workers ready after 3 s (workers connect to ' \
           f'tcp://127.0.0.1:{port}' in text, text
    assert 'loopback' in text and '--host-ip' in text, text
    assert 'no word from' in worker_out.text()
