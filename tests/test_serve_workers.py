"""The model server's workers when things go wrong: workers that die, stall
or lie, peers that are not workers, and workers started elsewhere.

Every server here is the command line (``python -m d2lmini.serve``, run by
:class:`~d2lmini.serve.client.ServerProcess`), serving the LeNet that MXNet
1.9.1 exported (``tests/fixtures/serve/``); answers are compared with a
forward pass in this process.  Each scenario shares one server between its
tests (module fixtures, used in file order), and checks at the end that no
process it started is left.

* a local worker killed (SIGKILL) under load: every request is answered,
  200 or 503, within its timeout; the server goes on with the other worker
  and lists the dead one in ``lostWorkers``; with every worker dead, 503 at
  once and ``/ping`` Unhealthy.  That server runs signed
  (``D2LMINI_PS_SECRET``): an unsigned or wrongly signed hello is refused;
* workers started by hand (``--devices none --expect-workers 2``): they
  serve; hostile peers on the worker port (garbage, bad headers, lies, a
  fake worker with wrong answers, a peer using a real worker's name) are
  refused or dropped while the server serves on; a worker stopped with
  SIGSTOP is declared lost after ``dead_after`` and its batch retried; once
  continued it is ignored and exits after its ``--frontend-timeout``, as a
  worker whose front end was killed does;
* local workers on ``gpu(0)``, ``gpu(1)`` of the CuPy stand-in: they
  serve; a peer giving a local worker's pid is not taken for it; a flood
  of hellos from a peer that never reads does not stop the serving;
* workers started over ssh (``-H hostfile``, the launcher's fake ``ssh``).

Workers on other hosts for real (network namespaces): test_serve_netns.py.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

zmq = pytest.importorskip('zmq')
pytest.importorskip('tornado')

import d2lmini as mx                                         # noqa: E402
from conftest import alive, child_pythonpath                        # noqa: E402
from d2lmini.kvstore.dist import wire                        # noqa: E402
from d2lmini.serve.client import (HTTPError, ServerProcess,  # noqa: E402
                                  get_json, predict)
from d2lmini.serve.model import Predictor, load              # noqa: E402

pytestmark = pytest.mark.cpu_context
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = os.path.join(HERE, 'fixtures', 'serve', 'mx191_lenet')
MODEL = 'mx191_lenet'
FAKE_SSH_DIR = os.path.join(HERE, 'launch_helpers', 'bin')
TIMEOUT_S = 3.0         # the servers' --timeout-s
MARGIN_S = 2.0          # allowed past it (a busy machine), still far from hanging
FRONTEND_TIMEOUT = 2.0  # the hand-started workers' --frontend-timeout
TOL = 1e-5              # server vs. this process: 1.6e-7 at most seen

X = np.load(PREFIX + '-reference.npz')['x']                  # (4, 1, 28, 28)


@pytest.fixture(scope='module')
def expected():
    """The forward pass in this process, on cpu(0)."""
    return Predictor(load(PREFIX), mx.cpu(0))(X)[0]


# --------------------------------------------------------------- helpers
def _env(**extra):
    env = dict(os.environ, PYTHONPATH=child_pythonpath(ROOT))
    env.update(extra)
    return env


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _children():
    """pid -> parent pid of every process on this machine."""
    out = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open(f'/proc/{d}/stat') as f:
                    out[int(d)] = int(f.read().rsplit(')', 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return out


def _descendants(pid):
    """The pids of ``pid``'s children, grandchildren..."""
    parents, found, todo = _children(), set(), [pid]
    while todo:
        p = todo.pop()
        for c, pp in parents.items():
            if pp == p and c not in found:
                found.add(c)
                todo.append(c)
    return found




def _wait_gone(pids, timeout=10.0):
    """The pids still alive after waiting up to ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def _until(what, timeout=10.0, every=0.05):
    """Call ``what()`` until it returns something true; that, or the last
    value after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = what()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(every)


def _describe(server):
    return get_json(f'{server.url}/models/{MODEL}')[0]


def _ask(url, x=X, timeout=TIMEOUT_S + 10):
    """``(HTTP status, outputs or error JSON, seconds)`` of one prediction."""
    start = time.monotonic()
    try:
        y = predict(url, MODEL, x, timeout=timeout)
        code = 200
    except HTTPError as e:
        code, y = e.code, json.loads(e.read() or b'{}')
    except OSError as e:                     # refused, reset: counted as such
        code, y = type(e).__name__, str(e)
    return code, y, time.monotonic() - start


def _ping(url):
    try:
        return get_json(f'{url}/ping')['status']
    except HTTPError as e:
        return json.loads(e.read())['status'] + f' ({e.code})'


def _serving(server, expected):
    """The server answers X correctly."""
    code, y, _ = _ask(server.url)
    assert code == 200, (code, y, server.output[-10:])
    np.testing.assert_allclose(y, expected, rtol=TOL, atol=TOL)


def _close(server):
    """Stop ``server`` (SIGTERM) and check nothing it started is left."""
    pids = _descendants(server.proc.pid) | {server.proc.pid}
    server.close()
    assert server.proc.returncode is not None
    assert _wait_gone(pids) == [], (pids, server.output[-20:])


def _start_worker(address, *args):
    return subprocess.Popen(
        [sys.executable, '-m', 'd2lmini.serve.worker', '--frontend', address,
         *map(str, args)], env=_env(), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.communicate(timeout=10)


class Peer:
    """A ZeroMQ DEALER on the front end's worker port, speaking the wire
    format (signed with ``secret``) or not."""

    def __init__(self, address, secret=None, **options):
        self.zctx = zmq.Context()
        self.sock = wire.limit(self.zctx.socket(zmq.DEALER))
        self.sock.linger = 0
        for k, v in options.items():
            self.sock.setsockopt(getattr(zmq, k), v)
        self.sock.connect(address)
        self.chan = wire.Channel(secret)

    def send(self, op, arrays=(), **meta):
        wire.send(self.sock, self.chan.pack(op, arrays, dest='frontend', **meta))

    def raw(self, frames):
        self.sock.send_multipart(frames)

    def recv(self, timeout=5.0):
        """The next message: ``(header, arrays)``, or None."""
        if not self.sock.poll(int(timeout * 1000)):
            return None
        _, h, arrays = wire.recv(self.sock, self.chan)
        return h, arrays

    def close(self):
        self.sock.close()
        self.zctx.term()


class FakeWorker(threading.Thread):
    """A peer that passes for a worker: hello, ``loaded`` for every model,
    heartbeats; then answers each batch with one row too many."""

    def __init__(self, address, name, **hello):
        super().__init__(daemon=True)
        self.hello = {'device': 'cpu(7)', 'host': 'elsewhere', 'pid': 1, **hello}
        self.peer, self.name = Peer(address), name
        self.batches, self.stop = [], threading.Event()

    def run(self):
        p = self.peer
        p.send('hello', node=self.name, **self.hello)
        beat = time.monotonic()
        while not self.stop.is_set():
            if time.monotonic() - beat > 0.1:
                p.send('hb', node=self.name)
                beat = time.monotonic()
            got = p.recv(0.05)
            if got is None:
                continue
            h, arrays = got
            if h['op'] == 'model':
                p.send('loaded', node=self.name, model=h['model'])
            elif h['op'] == 'batch':
                self.batches.append(h['id'])
                n = len(arrays[0]) + 1
                p.send('result', [np.zeros((n, 10), np.float32)],
                       node=self.name, id=h['id'], model=h['model'])
            elif h['op'] == 'stop':
                break
        p.close()

    def close(self):
        self.stop.set()
        self.join(5)


# ===================================================== killed local workers
SECRET = 'serve-test-secret'


@pytest.fixture(scope='module')
def signed():
    """Two local workers, cpu(0) and cpu(1), everything signed."""
    s = ServerProcess(PREFIX, '--devices', 'cpu(0),cpu(1)', '--timeout-s',
                      TIMEOUT_S, env=_env(D2LMINI_PS_SECRET=SECRET))
    yield s
    s.close()


def test_signed_workers_serve_and_unsigned_hellos_are_refused(signed, expected):
    _serving(signed, expected)
    info = _describe(signed)
    assert sorted(w['device'] for w in info['workers']) == ['cpu(0)', 'cpu(1)']
    assert all(w['status'] == 'READY' for w in info['workers'])
    unsigned, wrong = Peer(info['workerAddress']), \
        Peer(info['workerAddress'], secret=b'another secret')
    try:
        for p, name in ((unsigned, 'unsigned-peer'), (wrong, 'wrong-secret-peer')):
            p.send('hello', node=name, device='cpu(5)', host='x', pid=1)
            assert p.recv(0.5) is None                # no model for it
        assert _until(lambda: sum('refused a message' in line
                                  for line in signed.output) >= 2, 5)
    finally:
        unsigned.close()
        wrong.close()
    info = _describe(signed)
    assert len(info['workers']) == 2 and info['lostWorkers'] == []
    _serving(signed, expected)


def _load(url, stop, results, x):
    while not stop.is_set():
        results.append(_ask(url, x))


def test_a_killed_worker_fails_no_request(signed, expected):
    """SIGKILL cpu(1)'s worker while 4 clients send requests.  (It is
    stopped first until it holds a batch, so that one batch surely dies
    with it.)"""
    victim = next(w for w in _describe(signed)['workers']
                  if w['device'] == 'cpu(1)')
    stop, results = threading.Event(), []
    clients = [threading.Thread(target=_load, args=(signed.url, stop, results, X),
                                daemon=True) for _ in range(4)]
    for t in clients:
        t.start()
    try:
        assert _until(lambda: len(results) >= 8, 30)
        os.kill(victim['pid'], signal.SIGSTOP)
        busy = _until(lambda: [w for w in _describe(signed)['workers']
                               if w['id'] == victim['id'] and w['status'] == 'BUSY'],
                      0.7, every=0.01)
        os.kill(victim['pid'], signal.SIGKILL)
        assert busy, 'the stopped worker was never given a batch'
        before = len(results)
        assert _until(lambda: len(results) >= before + 20, 30)
    finally:
        stop.set()
        for t in clients:
            t.join(TIMEOUT_S + 15)
    codes = {}
    for code, y, seconds in results:
        codes[code] = codes.get(code, 0) + 1
        assert code in (200, 503), (code, y)
        assert seconds < TIMEOUT_S + MARGIN_S, (code, seconds)
        if code == 200:
            np.testing.assert_allclose(y, expected, rtol=TOL, atol=TOL)
    assert codes.get(200, 0) > len(results) // 2, codes
    info = _describe(signed)
    assert [w['device'] for w in info['workers']] == ['cpu(0)']
    assert victim['id'] not in [w['id'] for w in info['workers']]
    lost, = info['lostWorkers']
    assert lost['id'] == victim['id'] and lost['device'] == 'cpu(1)'
    # (its exit; or its socket gone when a batch was sent to it, seen first
    # when the launcher is slow to reap it; or, on a slow machine, its
    # silence before it was killed)
    assert any(why in lost['reason'] for why in
               ('exited', 'cannot send to it', 'no heartbeat')), lost
    assert not alive(victim['pid'])
    _serving(signed, expected)


def test_with_every_worker_dead_503_at_once_and_unhealthy(signed):
    # (every one left: one, after the test above; two if, run by another
    # pytest-xdist process, this test is the first to use the server)
    for w in _describe(signed)['workers']:
        os.kill(w['pid'], signal.SIGKILL)
    assert _until(lambda: _ping(signed.url) == 'Unhealthy (500)', 10), \
        _ping(signed.url)
    code, err, seconds = _ask(signed.url)
    assert code == 503 and err['type'] == 'ServiceUnavailable', (code, err)
    assert 'no worker' in err['message']
    assert seconds < TIMEOUT_S                   # not the timeout's 504
    info = _describe(signed)
    assert info['workers'] == [] and len(info['lostWorkers']) == 2
    _close(signed)


# ========================================= workers started by hand; hostile peers
@pytest.fixture(scope='module')
def by_hand():
    """A front end without workers of its own, and two workers started here
    (``--worker-port`` picked free)."""
    port = _free_port()
    address = f'tcp://127.0.0.1:{port}'
    box = []

    def start():                 # (ServerProcess returns once it serves)
        try:
            box.append(ServerProcess(
                PREFIX, '--devices', 'none', '--expect-workers', 2,
                '--worker-port', port, '--timeout-s', TIMEOUT_S, env=_env()))
        except RuntimeError as e:
            box.append(e)

    starting = threading.Thread(target=start, daemon=True)
    starting.start()
    workers = [_start_worker(address, '--device', f'cpu({i})', '--name',
                             f'hand{i}', '--frontend-timeout', FRONTEND_TIMEOUT)
               for i in range(2)]
    starting.join(90)
    try:
        s, = box
        assert isinstance(s, ServerProcess), s
        s.hand = dict(zip(['hand0', 'hand1'], workers))
        s.address = address
        yield s
        s.close()
    finally:
        for w in workers:
            _stop(w)


def test_workers_started_by_hand_serve(by_hand, expected):
    _serving(by_hand, expected)
    info = _describe(by_hand)
    assert info['workerAddress'] == by_hand.address
    assert sorted((w['id'], w['device']) for w in info['workers']) == \
        [('hand0', 'cpu(0)'), ('hand1', 'cpu(1)')]
    assert info['lostWorkers'] == []


def test_garbage_on_the_worker_port_is_refused(by_hand, expected):
    header = {'v': 1, 'op': 'hello', 'node': 'intruder', 'arrays': []}
    p = Peer(by_hand.address)
    try:
        p.raw([b''])
        p.raw([b'\x00\xffnot json', b'x' * 1000])
        p.raw([b'[1, 2, 3]'])                                 # JSON, not a message
        p.raw([json.dumps({'op': 'hello'}).encode()])         # no version
        p.raw([b'[' * 100000])                                # deep
        for bad in ({'pid': 'one'}, {'node': 7}, {'id': -1}, {'shape': 'x'},
                    {'node': ['a']}, {'device': {'a': 1}}):
            p.raw([json.dumps(dict(header, **bad)).encode()])
        for spec in (['float32', [10 ** 12]], ['float32', [-1]],
                     ['object', [1]], ['float32', [2] * 40], 'float32'):
            p.raw([json.dumps(dict(header, op='result', id=1,
                                   arrays=[spec])).encode(), b'\0' * 16])
        p.raw([json.dumps(dict(header, arrays=[['float32', [10 ** 9]]])).encode()])
        p.send('no such op', node='hand1')
        assert p.recv(0.3) is None
    finally:
        p.close()
    _serving(by_hand, expected)
    info = _describe(by_hand)
    assert sorted(w['id'] for w in info['workers']) == ['hand0', 'hand1']
    assert info['lostWorkers'] == []


def test_a_peer_cannot_speak_for_a_worker(by_hand, expected):
    """Names are public (GET /models): a message about worker W counts only
    from W's own connection."""
    p = Peer(by_hand.address)
    try:
        p.send('result', [np.zeros((4, 10), np.float32)], node='hand0', id=12345)
        p.send('failed', node='hand1', model=MODEL, message='lies')
        p.send('loaded', node='hand1', model='other')
        time.sleep(0.3)
    finally:
        p.close()
    info = _describe(by_hand)
    assert sorted(w['id'] for w in info['workers']) == ['hand0', 'hand1']
    assert info['lostWorkers'] == []
    _serving(by_hand, expected)


def test_a_worker_that_lies_is_dropped(by_hand, expected):
    """A fake worker answering a batch it was not given, another answering
    with the wrong number of rows: both dropped; every request is answered,
    correctly, by the real workers."""
    for name, what in (('not-running', 'which it was not running'),
                       ('wrong-rows', 'outputs of shapes')):
        fake = FakeWorker(by_hand.address, name)
        fake.start()
        try:
            assert _until(lambda: any(w['id'] == name and w['status'] == 'READY'
                                      for w in _describe(by_hand)['workers']))
            if name == 'not-running':
                fake.peer.send('result', [np.zeros((1, 10), np.float32)],
                               node=name, id=424242)
            else:                        # the workers take turns: 3 requests
                for _ in range(3):
                    _serving(by_hand, expected)
                assert len(fake.batches) == 1
            lost = _until(lambda: [w for w in _describe(by_hand)['lostWorkers']
                                   if w['id'] == name])
            assert len(lost) == 1 and what in lost[0]['reason'], lost
        finally:
            fake.close()
    info = _describe(by_hand)
    assert sorted(w['id'] for w in info['workers']) == ['hand0', 'hand1']
    _serving(by_hand, expected)


def test_a_stopped_worker_is_lost_and_its_batch_retried(by_hand, expected):
    """SIGSTOP hand0: after dead_after (1 s) it is lost, its batch runs on
    hand1.  Continued, its late answers are ignored, and it exits after its
    --frontend-timeout, the front end no longer speaking to it."""
    hand0 = by_hand.hand['hand0']
    before = {w['id']: w['batches'] for w in _describe(by_hand)['workers']}
    os.kill(hand0.pid, signal.SIGSTOP)
    try:
        for _ in range(2):             # the two take turns: one is hand0's
            _serving(by_hand, expected)
        info = _describe(by_hand)
        assert [w['id'] for w in info['workers']] == ['hand1']
        assert info['workers'][0]['batches'] == before['hand1'] + 2
        lost = [w for w in info['lostWorkers'] if w['id'] == 'hand0']
        assert len(lost) == 1 and 'no heartbeat' in lost[0]['reason'], lost
    finally:
        os.kill(hand0.pid, signal.SIGCONT)
    assert hand0.wait(FRONTEND_TIMEOUT + 10) == 1
    out = hand0.communicate(timeout=5)[0]
    assert 'no word from' in out, out
    info = _describe(by_hand)
    assert [w['id'] for w in info['workers']] == ['hand1']
    assert len([w for w in info['lostWorkers'] if w['id'] == 'hand0']) == 1
    _serving(by_hand, expected)


def test_a_worker_whose_front_end_died_exits(by_hand):
    hand1 = by_hand.hand['hand1']
    assert hand1.poll() is None
    by_hand.proc.kill()                  # no 'stop' for anybody
    by_hand.proc.wait(10)
    assert hand1.wait(FRONTEND_TIMEOUT + 10) == 1
    assert 'no word from' in hand1.communicate(timeout=5)[0]


# ========================================= local workers on the GPU stand-in
@pytest.fixture(scope='module')
def standin():
    """``gpu(0)``, ``gpu(1)`` of the CuPy stand-in (tests/cupy_standin.py)."""
    s = ServerProcess(PREFIX, '--devices', 'gpu(0),gpu(1)', '--timeout-s',
                      TIMEOUT_S, env=_env(
                          D2LMINI_CUPY='cupy_standin', D2LMINI_STANDIN_GPUS='2',
                          D2LMINI_DEFAULT_CONTEXT='gpu(0)',
                          PYTHONPATH=child_pythonpath(ROOT) + os.pathsep + HERE))
    yield s
    _close(s)


def test_workers_on_the_gpu_standin_serve(standin, expected):
    info = _describe(standin)
    assert sorted(w['device'] for w in info['workers']) == ['gpu(0)', 'gpu(1)']
    assert all(w['gpu'] for w in info['workers'])
    assert info['devices'] == ['gpu(0)', 'gpu(1)']
    for _ in range(2):                   # once on each
        _serving(standin, expected)
    assert all(w['batches'] >= 1 for w in _describe(standin)['workers'])


def test_a_peer_cannot_claim_a_local_worker(standin, expected):
    """A hello that gives a local worker's pid and host does not make the
    front end take that process for the peer's: dropping the peer must not
    kill the worker."""
    real = _describe(standin)['workers'][0]
    fake = FakeWorker(_describe(standin)['workerAddress'], 'impostor',
                      pid=real['pid'], host=real['host'])
    fake.start()
    try:
        assert _until(lambda: any(w['id'] == 'impostor' and w['status'] == 'READY'
                                  for w in _describe(standin)['workers']))
        fake.peer.send('result', [np.zeros((1, 10), np.float32)],
                       node='impostor', id=777)
        assert _until(lambda: any(w['id'] == 'impostor' for w in
                                  _describe(standin)['lostWorkers']))
    finally:
        fake.close()
    time.sleep(0.3)
    assert alive(real['pid'])
    info = _describe(standin)
    assert real['id'] in [w['id'] for w in info['workers']]
    assert len(info['workers']) == 2
    for _ in range(2):
        _serving(standin, expected)


def test_a_flood_of_hellos_does_not_stop_serving(standin, expected):
    """2500 hellos from one peer that never reads: the front end sends each
    a model until that peer's queue is full, drops them, and serves on
    meanwhile; its real workers stay."""
    real = sorted(w['id'] for w in _describe(standin)['workers'])
    p = Peer(_describe(standin)['workerAddress'], RCVHWM=1, RCVBUF=4096)
    try:
        for i in range(2500):
            p.send('hello', node=f'greedy{i}', device='cpu(3)', host='x', pid=1)
        for _ in range(3):
            code, y, seconds = _ask(standin.url)
            assert code == 200 and seconds < TIMEOUT_S + MARGIN_S, (code, seconds)
            np.testing.assert_allclose(y, expected, rtol=TOL, atol=TOL)
        assert _until(lambda: sorted(w['id'] for w in _describe(standin)['workers'])
                      == real, 30)
    finally:
        p.close()
    lost = _describe(standin)['lostWorkers']
    assert any(w['reason'] == 'it does not read its messages' for w in lost)
    _serving(standin, expected)


# ========================================= workers started over ssh (-H)
def test_workers_over_ssh_serve_and_stop(tmp_path, expected):
    log = tmp_path / 'ssh-log'
    log.mkdir()
    hostfile = tmp_path / 'hosts'
    hostfile.write_text('alpha\nbeta:2222\n')
    env = _env(FAKE_SSH_LOG=str(log),
               PATH=FAKE_SSH_DIR + os.pathsep + os.environ['PATH'])
    s = ServerProcess(PREFIX, '-H', hostfile, '--host-ip', '127.0.0.1',
                      '--devices', 'cpu(0)', env=env)
    try:
        workers = _describe(s)['workers']
        assert len(workers) == 2 and {w['device'] for w in workers} == {'cpu(0)'}
        calls = [f.read_text().split('\0')[:-1] for f in log.iterdir()]
        assert sorted(c[-2] for c in calls) == ['alpha', 'beta']
        assert [c[-4:-2] for c in calls if c[-2] == 'beta'] == [['-p', '2222']]
        for _ in range(2):
            _serving(s, expected)
        assert all(w['batches'] >= 1 for w in _describe(s)['workers'])
        pids = [w['pid'] for w in workers]
    finally:
        _close(s)
    assert _wait_gone(pids) == []

