"""The model server over HTTP (``d2lmini.serve``), end to end.

What a client of the server relies on, checked through its HTTP API:

* predictions equal a direct forward pass, for the LeNet that the real
  MXNet 1.9.1 exported (``tests/fixtures/serve``) and for one d2lmini
  builds and exports here; JSON or ``.npy`` in and out; one example or a
  batch; two models served at once, each answering for itself;
* concurrent requests are batched and every answer is its own request's;
* ``/ping``, ``/models``, ``/models/{name}`` and ``/metrics`` (Prometheus'
  text format, checked line by line);
* every bad body, a body over the limit (by ``Content-Length`` or
  chunked), a client that hangs up, is answered (or dropped) and the
  server serves on with all its workers;
* a full queue answers 503 with ``Retry-After``, a late request 504.

Three servers are shared by the tests (module fixtures): ``served``, the
command line in a child process; ``held`` and ``hurried``, in this
process (:class:`ModelServer` on its thread) with ``dead_after`` long
enough that a worker stopped with ``SIGSTOP`` stays a (busy) worker: the
queue-full, timeout and hang-up tests hold the worker that way, so what
they check does not depend on timing.  Each fixture checks, when it
closes its server, that no process of it is left.  The batching rules
themselves are ``test_serve_batcher.py``'s.
"""
import concurrent.futures
import contextlib
import http.client
import io
import json
import os
import re
import select
import signal
import socket
import time
import types
import urllib.error
import urllib.request

import numpy as np
import pytest
import prometheus

pytest.importorskip('tornado')
pytest.importorskip('aiohttp')

import d2lmini as mx                                    # noqa: E402
from d2lmini.d2l.models import lenet_multigpu          # noqa: E402
from d2lmini.serve import ModelServer, api, model      # noqa: E402
from d2lmini.serve.client import (Client, HTTPError, ServerProcess,  # noqa: E402
                                  load_test, npy_bytes)
from d2lmini.serve.metrics import Metrics              # noqa: E402
from conftest import alive

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, 'fixtures', 'serve', 'mx191_lenet')
NPY, JSON = 'application/x-npy', 'application/json'
LIMIT = int(0.25 * (1 << 20))     # --max-body-mb 0.25 of the command-line server
TOL = dict(rtol=1e-5, atol=1e-5)  # measured: served vs direct, 5e-7 (1e-6 relative)
WAIT = 20.0                       # the longest any wait here may last
REF = dict(np.load(FIXTURE + '-reference.npz'))  # x (4, 1, 28, 28); y: MXNet's


# ----------------------------------------------------------------- helpers
def call(url, path='', body=None, ctype=None, accept=None, timeout=WAIT):
    """``(status, headers, body)`` of one request (GET without ``body``)."""
    headers = {k: v for k, v in (('Content-Type', ctype), ('Accept', accept)) if v}
    req = urllib.request.Request(url + path, data=body, headers=headers,
                                 method='GET' if body is None else 'POST')
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def post(url, name, x, body=NPY, accept=NPY):
    """POST the examples ``x`` as ``body`` (.npy or JSON); the answer."""
    x = np.asarray(x, np.float32)
    data = npy_bytes(x) if body == NPY else json.dumps(x.tolist()).encode()
    return call(url, f'/predictions/{name}', data, body, accept)


def outputs(answer):
    status, headers, body = answer
    assert status == 200, body[:300]
    if headers['Content-Type'].startswith(NPY):
        return np.load(io.BytesIO(body), allow_pickle=False)
    assert headers['Content-Type'].startswith(JSON)
    return np.asarray(json.loads(body), np.float32)


def error(answer, code):
    """The JSON error ``{"code", "type", "message"}`` of an answer ``code``."""
    status, headers, body = answer
    assert status == code, body[:300]
    assert headers['Content-Type'].startswith(JSON)
    err = json.loads(body)
    assert err['code'] == code and err['type'] and err['message']
    return err


def get(url, path):
    status, _, body = call(url, path)
    assert status == 200, body[:300]
    return json.loads(body)


def describe(url, name):
    (desc,) = get(url, f'/models/{name}')
    return desc


def wait_for(cond, what):
    deadline = time.monotonic() + WAIT
    while not cond():
        assert time.monotonic() < deadline, f'waited {WAIT:g} s for {what}'
        time.sleep(0.01)


def connect(url, head, body=b''):
    """A raw socket to ``url``'s server that has sent ``head`` + ``body``."""
    host, port = url.rsplit('/', 1)[-1].split(':')
    s = socket.create_connection((host, int(port)), timeout=WAIT)
    s.sendall(head.encode() + body)
    return s


def answer_of(sock):
    r = http.client.HTTPResponse(sock)
    r.begin()
    return r.status, r.headers, r.read()


def post_head(name, ctype=NPY, **headers):
    lines = [f'POST /predictions/{name} HTTP/1.1', 'Host: 127.0.0.1',
             f'Content-Type: {ctype}'] + [f'{k.replace("_", "-")}: {v}'
                                          for k, v in headers.items()]
    return '\r\n'.join(lines) + '\r\n\r\n'


def on_the_worker(url, name):
    """The one request sent is out of the queue, on the (only) worker:
    nothing queued, and the worker busy.  (Busy alone is not enough: the
    worker is taken first, then the batch gathers for ``max_delay``.)"""
    desc = describe(url, name)
    return desc['queueLength'] == 0 and desc['workers'][0]['status'] == 'BUSY'


@contextlib.contextmanager
def stopped(pid):
    """The worker process ``pid`` stopped (SIGSTOP) inside the block."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def metrics(url):
    status, headers, body = call(url, '/metrics')
    assert status == 200 and headers['Content-Type'].startswith('text/plain')
    return prometheus.parse(body.decode())


def histogram(samples, name, **labels):
    return prometheus.histogram(samples, 'd2lmini_serve_' + name, **labels)


INF = float('inf')


def batches(before, after, upto, over=0):
    """How many batches of size in (``over``, ``upto``] ran between two
    readings of the batch-size histogram."""
    def n(h, le):
        return h.get(le, 0) if le else 0
    return n(after, upto) - n(after, over) - n(before, upto) + n(before, over)


def requests_total(samples, model, code):
    key = ('d2lmini_serve_requests_total', (('code', str(code)), ('model', model)))
    return samples.get(key, 0)




def serve_children():
    """Processes whose parent is this one and that run ``d2lmini.serve``
    (from ``/proc``)."""
    found = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/stat') as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                cmd = f.read()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and b'd2lmini.serve' in cmd:
            found.append(int(pid))
    return found


# ----------------------------------------------------------------- servers
@pytest.fixture(scope='module')
def lenet(tmp_path_factory):
    """d2lmini's LeNet (the multi-device chapters'), exported twice:
    ``plain`` without a signature file, ``signed`` with ``signature.json``."""
    mx.random.seed(0)
    net = lenet_multigpu(hybrid=True)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.zeros((1, 1, 28, 28)))
    root = tmp_path_factory.mktemp('serve')
    for kind in ('plain', 'signed'):
        (root / kind).mkdir()
        net.export(str(root / kind / 'lenet'))
    (root / 'signed' / 'signature.json').write_text(json.dumps(
        {'inputs': [{'data_name': 'data', 'data_shape': [0, 1, 28, 28]}]}))
    return types.SimpleNamespace(
        plain=str(root / 'plain' / 'lenet'), signed=str(root / 'signed' / 'lenet'),
        root=root, forward=lambda x: net(mx.nd.array(np.asarray(x, np.float32))).asnumpy())


class Served:
    """A server ``start()`` started: its ``url``, its workers' ``pids``;
    ``close()`` checks that no process of it is left (its workers, and the
    processes it added under this one: a command line, or local workers)."""

    def __init__(self, start):
        before = set(serve_children())
        self.server = server = start()
        self.url = server.url
        try:
            names = [m['modelName'] for m in get(self.url, '/models')['models']]
            self.pids = sorted(w['pid'] for w in describe(self.url, names[0])['workers'])
            self.children = sorted(set(serve_children()) - before)
        except BaseException:
            server.close()
            raise

    def close(self):
        self.server.close()
        pids = self.pids + self.children
        wait_for(lambda: not any(map(alive, pids)), f'{pids} gone')


@pytest.fixture(scope='module')
def served(lenet):
    """The command line, as in production: the exported LeNet (its example
    shape from ``--input-shape``) and MXNet 1.9.1's, one worker."""
    s = Served(lambda: ServerProcess(
        lenet.plain, FIXTURE, '--input-shape', '1,28,28', '--max-batch-size', 8,
        '--max-batch-delay-ms', 20, '--max-body-mb', 0.25))
    yield s
    s.close()


@pytest.fixture(scope='module')
def held(lenet):
    """In this process, both models with their shapes from signature files;
    batches of at most 4, at most 4 requests queued."""
    s = Served(ModelServer([FIXTURE, lenet.signed], max_batch_size=4,
                           max_batch_delay_ms=5, queue_size=4, timeout_s=WAIT,
                           dead_after=60.0).start)
    yield s
    s.close()


@pytest.fixture(scope='module')
def hurried(lenet):
    """In this process, requests that time out after 1 s."""
    s = Served(ModelServer([lenet.signed], max_batch_size=1, timeout_s=1.0,
                           dead_after=60.0).start)
    yield s
    s.close()


@pytest.fixture(scope='module')
def patient(lenet):
    """In this process, a batch delay of a minute: a batch leaves before
    then only when it is full or when no other request can come."""
    s = Served(ModelServer([lenet.signed], max_batch_size=8,
                           max_batch_delay_ms=60000, timeout_s=120,
                           dead_after=60.0).start)
    yield s
    s.close()


def still_serving(s, name='mx191_lenet'):
    """A prediction is right, and every worker is the one that started."""
    if name == 'mx191_lenet':
        np.testing.assert_allclose(outputs(post(s.url, name, REF['x'][:2])),
                                   REF['y'][:2], **TOL)
    else:
        assert outputs(post(s.url, name, REF['x'][:2])).shape == (2, 10)
    desc = describe(s.url, name)
    assert desc['lostWorkers'] == []
    assert sorted(w['pid'] for w in desc['workers']) == s.pids
    assert all(alive(p) for p in s.pids)


FORMATS = [(NPY, NPY), (JSON, JSON), (JSON, NPY), (NPY, JSON)]


# ----------------------------------------------------------------- answers
@pytest.mark.parametrize('body,accept', FORMATS, ids=lambda f: f.split('/')[1])
def test_mxnet_191_models_answers_equal_mxnet_191s(served, body, accept):
    x, y = REF['x'], REF['y']
    one = outputs(post(served.url, 'mx191_lenet', x[1], body, accept))
    assert one.shape == (10,)                      # one example: no batch axis
    np.testing.assert_allclose(one, y[1], **TOL)
    many = outputs(post(served.url, 'mx191_lenet', x, body, accept))
    assert many.shape == (4, 10)
    np.testing.assert_allclose(many, y, **TOL)


@pytest.mark.parametrize('body,accept', FORMATS, ids=lambda f: f.split('/')[1])
def test_an_exported_d2lmini_lenet_answers_as_its_forward_pass(served, lenet,
                                                                body, accept):
    x = np.random.RandomState(1).rand(3, 1, 28, 28).astype(np.float32)
    y = lenet.forward(x)
    one = outputs(post(served.url, 'lenet', x[2], body, accept))
    assert one.shape == (10,)
    np.testing.assert_allclose(one, y[2], **TOL)
    np.testing.assert_allclose(outputs(post(served.url, 'lenet', x, body, accept)),
                               y, **TOL)


def test_each_model_answers_for_itself(served, lenet):
    x = REF['x']
    ours, theirs = (outputs(post(served.url, n, x)) for n in ('lenet', 'mx191_lenet'))
    np.testing.assert_allclose(ours, lenet.forward(x), **TOL)
    np.testing.assert_allclose(theirs, REF['y'], **TOL)
    assert not np.allclose(ours, theirs, atol=1e-2)   # two different networks
    assert get(served.url, '/models')['models'] == [
        {'modelName': 'lenet', 'modelUrl': lenet.plain},
        {'modelName': 'mx191_lenet', 'modelUrl': FIXTURE}]


def test_the_example_shape_comes_from_the_option_or_a_signature_file(served, held,
                                                                     lenet):
    with pytest.raises(model.ModelError, match='--input-shape'):
        model.load(lenet.plain)                       # no signature: the option
    assert describe(served.url, 'lenet')['inputShape'] == [1, 28, 28]
    for name in ('mx191_lenet', 'lenet'):             # PREFIX-signature.json, signature.json
        assert describe(held.url, name)['inputShape'] == [1, 28, 28]
    np.testing.assert_allclose(outputs(post(held.url, 'mx191_lenet', REF['x'][0])),
                               REF['y'][0], **TOL)
    np.testing.assert_allclose(outputs(post(held.url, 'lenet', REF['x'], JSON)),
                               lenet.forward(REF['x']), **TOL)
    err = error(post(held.url, 'lenet', np.zeros((1, 28, 28, 1))), 400)
    assert '(1, 28, 28)' in err['message']


# ----------------------------------------------------------------- batching
def test_concurrent_requests_are_batched_and_each_gets_its_own_answer(served, lenet):
    xs = np.random.RandomState(2).rand(32, 1, 28, 28).astype(np.float32)
    sizes = [1, 2, 1, 1, 3, 1, 1, 2] * 2 + [1] * 8         # 32 examples, 24 requests
    parts = np.split(xs, np.cumsum(sizes)[:-1])
    before, _ = histogram(metrics(served.url), 'batch_size', model='lenet')
    with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
        answers = list(pool.map(lambda x: post(served.url, 'lenet', x), parts))
    want = lenet.forward(xs)
    at = 0
    for x, a in zip(parts, answers):
        np.testing.assert_allclose(outputs(a), want[at:at + len(x)], **TOL)
        at += len(x)
    after, _ = histogram(metrics(served.url), 'batch_size', model='lenet')
    ones, larger = batches(before, after, 1), batches(before, after, 8, 1)
    assert larger >= 1, f'{ones} batches of one, none larger'
    assert batches(before, after, INF, 8) == 0          # none over the maximum


def test_a_batch_leaves_at_once_when_every_connection_waits(patient, lenet):
    x = np.random.RandomState(4).rand(3, 1, 28, 28).astype(np.float32)
    server, queue = patient.server, patient.server.batchers['lenet']
    wait_for(lambda: server.connections == 0, 'the fixture\'s connections closed')
    with Client(patient.url, timeout=WAIT) as c:      # alone: no minute's wait
        np.testing.assert_allclose(c.predict('lenet', x[0]), lenet.forward(x)[0], **TOL)
    host, port = patient.url.rsplit('/', 1)[-1].split(':')
    idle = socket.create_connection((host, int(port)), timeout=WAIT)
    try:                                              # someone else could send
        wait_for(lambda: server.connections == 1, 'the idle connection')
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            c = Client(patient.url, timeout=WAIT)
            answer = pool.submit(c.predict, 'lenet', x[1:])
            wait_for(lambda: len(queue) == 1, 'the request queued')
            time.sleep(0.5)
            assert not answer.done() and len(queue) == 1
            assert (server.connections, server.waiting) == (2, 1)
            idle.close()                              # now nobody else can
            np.testing.assert_allclose(answer.result(WAIT), lenet.forward(x)[1:], **TOL)
            c.close()
    finally:
        idle.close()
    wait_for(lambda: server.connections == 0, 'the connections closed')
    samples = metrics(patient.url)                    # (on a connection of its own)
    assert samples[('d2lmini_serve_connections', (('state', 'open'),))] == 1
    assert samples[('d2lmini_serve_connections', (('state', 'waiting'),))] == 0


def test_a_request_larger_than_the_batch_size_is_answered_whole(served, lenet):
    x = np.random.RandomState(3).rand(13, 1, 28, 28).astype(np.float32)
    before, _ = histogram(metrics(served.url), 'batch_size', model='lenet')
    np.testing.assert_allclose(outputs(post(served.url, 'lenet', x)),
                               lenet.forward(x), **TOL)
    after, _ = histogram(metrics(served.url), 'batch_size', model='lenet')
    assert batches(before, after, INF, 8) == 1          # one batch of 13, unsplit


def test_the_load_generator_drives_the_server(served):
    body = npy_bytes(REF['x'][0])
    res = load_test(f'{served.url}/predictions/mx191_lenet', body, clients=4,
                    seconds=0.5, warmup=0.1)
    assert set(res['codes']) == {200} and res['ok'] > 0
    assert res['p50_ms'] <= res['p99_ms'] <= res['max_ms']


def test_a_client_keeps_one_connection_for_many_requests(served):
    x, y = REF['x'], REF['y']
    with Client(served.url) as c:
        for npy in (True, False):
            for i in range(3):
                np.testing.assert_allclose(c.predict('mx191_lenet', x[i], npy=npy),
                                           y[i], **TOL)
        local = c.conn.sock.getsockname()
        np.testing.assert_allclose(c.predict('mx191_lenet', x), y, **TOL)
        assert c.conn.sock.getsockname() == local          # kept alive
        with pytest.raises(HTTPError) as e:
            c.predict('nothing', x[0])
        assert e.value.code == 404 and 'Model not found' in e.value.msg
        with pytest.raises(HTTPError) as e:
            c.predict('mx191_lenet', x[0, :, :27])
        assert e.value.code == 400 and '(1, 28, 28)' in e.value.msg
        np.testing.assert_allclose(c.predict('mx191_lenet', x[3]), y[3], **TOL)


# ----------------------------------------------------------------- the other pages
def test_ping_and_the_models_pages(served):
    assert get(served.url, '/ping') == {'status': 'Healthy'}
    desc = describe(served.url, 'mx191_lenet')
    assert desc['modelName'] == 'mx191_lenet' and desc['modelVersion'] == '0'
    assert desc['batchSize'] == 8 and desc['maxBatchDelay'] == 20.0
    assert desc['queueLength'] == 0 and desc['inputName'] == 'data'
    assert desc['devices'] == ['cpu(0)'] and desc['lostWorkers'] == []
    (w,) = desc['workers']
    assert w['status'] in ('READY', 'BUSY') and w['device'] == 'cpu(0)'
    assert w['pid'] == served.pids[0] and not w['gpu']
    assert re.match(r'tcp://127\.0\.0\.1:\d+\Z', desc['workerAddress'])
    err = error(call(served.url, '/models/nothing'), 404)
    assert err['type'] == 'ModelNotFoundException'


def test_metrics_are_prometheus_text(served):
    before = metrics(served.url)
    error(call(served.url, '/predictions/mx191_lenet', b'[1, 2', JSON), 400)
    outputs(post(served.url, 'mx191_lenet', REF['x'][0]))
    text = call(served.url, '/metrics')[2].decode()
    samples = prometheus.parse(text)
    for fam, kind in (('requests_total', 'counter'), ('batch_size', 'histogram'),
                      ('request_latency_seconds', 'histogram'), ('workers', 'gauge')):
        assert f'# TYPE d2lmini_serve_{fam} {kind}\n' in text
    for code in (400, 200):
        assert requests_total(samples, 'mx191_lenet', code) == \
            requests_total(before, 'mx191_lenet', code) + 1
    _, count = histogram(samples, 'request_latency_seconds', model='mx191_lenet')
    assert count == requests_total(samples, 'mx191_lenet', 200) and count >= 1
    assert samples[('d2lmini_serve_workers', (('state', 'ready'),))] + \
        samples[('d2lmini_serve_workers', (('state', 'busy'),))] == 1
    assert samples[('d2lmini_serve_queue_depth', (('model', 'mx191_lenet'),))] == 0


# ----------------------------------------------------------------- bad input
class _Unpickled:
    """Unpickling this creates the file ``path``: proof that a body ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, 'w')


def _npy_pickle(path):
    buf = io.BytesIO()
    np.save(buf, np.array([_Unpickled(path)] * 784, dtype=object).reshape(1, 28, 28),
            allow_pickle=True)
    return buf.getvalue()


def _json(obj):
    return json.dumps(obj).encode()


ONE = REF['x'][0]
BAD = {
    'malformed json': (b'[[1, 2,', JSON, 'neither JSON'),
    'json of strings': (_json([[['a'] * 28] * 28]), JSON, 'numbers'),
    'json of numbers in strings': (_json([[['0.5'] * 28] * 28]), JSON, 'numbers'),
    'json with nulls': (_json([[[None] * 28] * 28]), JSON, 'numbers'),
    'ragged json': (_json([[[0.5] * 28] * 27 + [[0.5] * 27]]), JSON, 'numbers'),
    'json nested 100000 deep': (b'[' * 100000 + b']' * 100000, JSON, 'neither JSON'),
    'json object without data': (_json({'inputs': ONE.tolist()}), JSON, 'numbers'),
    'a bare number': (b'5', JSON, 'shape'),
    'empty json body': (b'', JSON, 'neither JSON'),
    'empty npy body': (b'', NPY, 'not an .npy'),
    'not npy at all': (b'hello', NPY, 'not an .npy'),
    'truncated npy, its header seen before': (npy_bytes(ONE)[:-100], NPY, 'bytes of data'),
    'truncated npy, a new header': (npy_bytes(np.ones((3, 1, 28, 28)))[:-8], NPY,
                                    'not an .npy'),
    'npy of complex numbers': (npy_bytes(ONE.astype(np.complex64)), NPY, 'complex'),
    'npy of strings': (npy_bytes(np.full((1, 28, 28), 'x')), NPY, 'numbers'),
    'npy of the wrong shape': (npy_bytes(np.ones((1, 27, 28), np.float32)), NPY,
                               'expected one example of shape (1, 28, 28)'),
    'json of the wrong shape': (_json(np.ones((28, 28)).tolist()), JSON,
                                'expected one example of shape (1, 28, 28)'),
    'a batch of no examples': (npy_bytes(np.ones((0, 1, 28, 28), np.float32)), NPY,
                               'shape (0, 1, 28, 28)'),
}


@pytest.mark.parametrize('case', list(BAD))
def test_bad_input_is_400_and_the_server_serves_on(served, case):
    body, ctype, says = BAD[case]
    outputs(post(served.url, 'mx191_lenet', ONE))   # (the .npy header is seen)
    err = error(call(served.url, '/predictions/mx191_lenet', body, ctype), 400)
    assert err['type'] == 'BadInput' and says in err['message']
    still_serving(served)


def test_a_pickled_npy_body_is_refused_unread(served, tmp_path):
    proof = tmp_path / 'unpickled'
    err = error(call(served.url, '/predictions/mx191_lenet', _npy_pickle(str(proof)),
                     NPY), 400)
    assert 'object' in err['message'] or 'pickle' in err['message']
    assert not proof.exists()
    still_serving(served)


def test_an_unknown_model_is_404(served):
    before = requests_total(metrics(served.url), '', 404)   # (other tests' 404s)
    err = error(post(served.url, 'resnet', ONE), 404)
    assert err['type'] == 'ModelNotFoundException' and 'lenet' in err['message']
    error(call(served.url, '/predictions/a%22b%0Ac', b'[1]', JSON), 404)
    samples = metrics(served.url)                   # (still valid Prometheus text)
    assert requests_total(samples, '', 404) == before + 2   # one series, not one a name
    assert not [k for k in samples if ('model', 'resnet') in k[1]]
    still_serving(served)


@pytest.mark.parametrize('length', [LIMIT + 1, 10 ** 12])
def test_a_body_over_the_limit_is_413_by_its_content_length(served, length):
    before = requests_total(metrics(served.url), 'mx191_lenet', 413)
    sock = connect(served.url, post_head('mx191_lenet', Content_Length=length))
    with sock:                                     # answered before the body is sent
        err = error(answer_of(sock), 413)
    assert f'{LIMIT:,}' in err['message']
    assert requests_total(metrics(served.url), 'mx191_lenet', 413) == before + 1
    still_serving(served)


def test_a_client_that_sends_its_whole_body_first_gets_the_413(held):
    # urllib writes the whole body before it reads.  20 MB is more than the
    # kernel buffers between the two: had the server stopped reading at its
    # 16 MB limit and closed, urllib's write would fail (connection reset);
    # it reads the rest and drops it, and urllib gets the 413
    big = b'\0' * (20 << 20)
    for path in ('/predictions/mx191_lenet', '/echo'):
        err = error(call(held.url, path, big, NPY), 413)
        assert 'over the limit of 16,777,216 bytes' in err['message']
    still_serving(held)


def test_a_chunked_body_over_the_limit_is_413(served):
    chunk = b'\0' * (1 << 16)
    sock = connect(served.url, post_head('mx191_lenet', Transfer_Encoding='chunked'))
    with sock:
        for _ in range(2 * LIMIT // len(chunk)):  # until answered, at most twice over
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(b'%x\r\n' % len(chunk) + chunk + b'\r\n')
            except (BrokenPipeError, ConnectionResetError):
                break
        err = error(answer_of(sock), 413)
    assert 'over the limit' in err['message']
    still_serving(served)


def test_a_client_gone_mid_body_leaves_the_server_serving(served):
    body = npy_bytes(ONE)
    sock = connect(served.url, post_head('mx191_lenet', Content_Length=len(body)),
                   body[:len(body) // 2])
    sock.close()
    still_serving(served)
    assert served.server.proc.poll() is None


# ----------------------------------------------------------------- held workers
def test_a_full_queue_is_503_with_retry_after_and_held_requests_batch(held, lenet):
    xs = np.random.RandomState(4).rand(5, 1, 28, 28).astype(np.float32)
    url, (pid,) = held.url, held.pids
    before, _ = histogram(metrics(url), 'batch_size', model='lenet')
    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        with stopped(pid):
            first = pool.submit(post, url, 'lenet', xs[0])
            wait_for(lambda: on_the_worker(url, 'lenet'), 'the first on the worker')
            queued = [pool.submit(post, url, 'lenet', x) for x in xs[1:]]
            wait_for(lambda: describe(url, 'lenet')['queueLength'] == 4,
                     'four requests queued')
            status, headers, _ = full = post(url, 'lenet', xs[0])
            err = error(full, 503)
            assert headers['Retry-After'] == '1' and 'queued' in err['message']
            assert not first.done()
        answers = [f.result(WAIT) for f in [first] + queued]
    for a, y in zip(answers, lenet.forward(xs)):
        np.testing.assert_allclose(outputs(a), y, **TOL)
    after, _ = histogram(metrics(url), 'batch_size', model='lenet')
    assert batches(before, after, INF) == 2                  # one alone, then four
    assert batches(before, after, 1) == 1 and batches(before, after, 4, 2) == 1
    still_serving(held, 'lenet')


def test_a_client_gone_while_waiting_is_dropped(held):
    url, (pid,) = held.url, held.pids
    body = npy_bytes(ONE)
    head = post_head('mx191_lenet', Content_Length=len(body))
    samples = metrics(url)
    gone0 = requests_total(samples, 'mx191_lenet', 499)
    before, _ = histogram(samples, 'batch_size', model='mx191_lenet')
    with stopped(pid):
        running = connect(url, head, body)
        wait_for(lambda: on_the_worker(url, 'mx191_lenet'), 'the first on the worker')
        waiting = connect(url, head, body)
        wait_for(lambda: describe(url, 'mx191_lenet')['queueLength'] == 1,
                 'a request queued')
        running.close()
        waiting.close()
        wait_for(lambda: requests_total(metrics(url), 'mx191_lenet', 499) == gone0 + 2,
                 'both hang-ups counted (499)')
    still_serving(held)
    after, _ = histogram(metrics(url), 'batch_size', model='mx191_lenet')
    assert batches(before, after, INF) == 2     # the one running and still_serving's:
    #                                             the one queued never ran


def test_a_request_past_its_timeout_is_504(hurried):
    url, (pid,) = hurried.url, hurried.pids
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        with stopped(pid):
            running = pool.submit(post, url, 'lenet', ONE)
            wait_for(lambda: on_the_worker(url, 'lenet'), 'the first on the worker')
            waiting = pool.submit(post, url, 'lenet', ONE)
            for f in (running, waiting):
                err = error(f.result(WAIT), 504)
                assert err['type'] == 'Timeout' and 'within 1 s' in err['message']
    assert requests_total(metrics(url), 'lenet', 504) == 2
    still_serving(hurried, 'lenet')


# ----------------------------------------------------------------- the parts
def test_decode_takes_json_npy_one_example_or_a_batch():
    x = np.arange(2 * 784, dtype=np.float32).reshape(2, 1, 28, 28)
    for body, ctype in ((_json(x[0].tolist()), JSON), (_json({'data': x[0].tolist()}),
                        'application/json; charset=utf-8'), (npy_bytes(x[0]), NPY),
                        (npy_bytes(x[0]), None)):        # .npy known by its magic
        got, single = api.decode(body, ctype, (1, 28, 28))
        assert single and got.dtype == np.float32 and got.shape == (1, 1, 28, 28)
        np.testing.assert_array_equal(got[0], x[0])
    for arr in (x, np.asfortranarray(x), x.astype('>f4'), x.astype(np.int32) % 2):
        for _ in range(2):               # the second time, from the header cache
            got, single = api.decode(npy_bytes(arr), NPY, (1, 28, 28))
            assert not single and got.dtype == np.float32
            np.testing.assert_array_equal(got, arr)
    with pytest.raises(api.BadInput, match=r'\(N, 1, 28, 28\)'):
        api.decode(npy_bytes(x[:, :, :27]), NPY, (1, 28, 28))


def test_encode_json_or_npy():
    y = np.arange(12, dtype=np.float32).reshape(2, 6)
    body, ctype = api.encode([y[:1]], True, None)
    assert ctype == JSON and json.loads(body) == y[0].tolist()
    body, ctype = api.encode([y], False, f'{NPY}, */*')
    assert ctype == NPY
    np.testing.assert_array_equal(np.load(io.BytesIO(body), allow_pickle=False), y)
    body, _ = api.encode([y, y[:, :2]], False, JSON)       # two outputs: a list each
    assert json.loads(body) == [y.tolist(), y[:, :2].tolist()]
    with pytest.raises(api.BadInput, match='2 outputs'):
        api.encode([y, y], False, NPY)


def test_npy_answers_equal_numpys_own_files():
    # the header is cached per dtype and shape: the second file of each kind
    # comes from the cache, and must be byte for byte what np.save writes
    for arr in (np.arange(10, dtype=np.float32), np.zeros((3, 4), '>f8'),
                np.asfortranarray(np.arange(6.).reshape(2, 3)), np.float32(2.5),
                np.arange(4, dtype=np.int64)[::2], np.zeros((0, 5), np.float32)):
        for _ in range(2):
            arr = np.asarray(arr) + 0        # (a new array, same dtype and shape)
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
            assert api.npy(arr) == buf.getvalue()
            np.testing.assert_array_equal(
                np.load(io.BytesIO(api.npy(arr)), allow_pickle=False), arr)


def test_metrics_render_counters_gauges_histograms():
    m = Metrics()
    m.inc('requests_total', 'Requests', model='a', code=200)
    m.inc('requests_total', 'Requests', by=1234567, model='a', code=200)
    m.set('workers', 'Workers', 3, state='ready')
    for v in (0.5, 3, 3, 100):
        m.observe('sizes', 'Sizes', v, (1, 4, 16), model='a"b\\c\nd')
    text = m.render()
    samples = prometheus.parse(text)
    assert samples[('d2lmini_serve_requests_total',
                    (('code', '200'), ('model', 'a')))] == 1234568
    assert 'd2lmini_serve_requests_total{code="200",model="a"} 1234568\n' in text
    assert samples[('d2lmini_serve_workers', (('state', 'ready'),))] == 3
    assert histogram(samples, 'sizes', model='a\\"b\\\\c\\nd') == (
        {1.0: 1, 4.0: 3, 16.0: 3, float('inf'): 4}, 4)
    assert samples[('d2lmini_serve_sizes_sum', (('model', 'a\\"b\\\\c\\nd'),))] == 106.5



# ----------------------------------------------------------------- in-process workers
def serve_threads():
    import threading
    return [t for t in threading.enumerate() if t.name.startswith('serve-')]


def test_in_process_workers_answer_as_mxnet_and_leave_no_thread(lenet):
    """--in-process: the workers are threads of the server's process, one
    per device, and answer as the worker processes do."""
    before = serve_threads()
    s = ModelServer([FIXTURE, lenet.signed], devices=['cpu(0)', 'cpu(1)'],
                    max_batch_size=8, max_batch_delay_ms=20,
                    in_process=True).start()
    try:
        desc = describe(s.url, 'mx191_lenet')
        assert [(w['device'], w['pid'], w['inProcess'], w['status'])
                for w in desc['workers']] == [
            ('cpu(0)', os.getpid(), True, 'READY'), ('cpu(1)', os.getpid(), True, 'READY')]
        assert len(serve_threads()) == len(before) + 2
        np.testing.assert_allclose(outputs(post(s.url, 'mx191_lenet', REF['x'])),
                                   REF['y'], **TOL)
        x = np.random.RandomState(2).rand(24, 1, 28, 28).astype(np.float32)
        with concurrent.futures.ThreadPoolExecutor(24) as ex:
            answers = list(ex.map(lambda i: outputs(post(s.url, 'lenet', x[i])),
                                  range(24)))
        np.testing.assert_allclose(np.stack(answers), lenet.forward(x), **TOL)
        batches = histogram(prometheus.parse(call(s.url, '/metrics')[2].decode()),
                            'batch_size', model='lenet')[1]
        assert batches < 24                      # some requests went together
    finally:
        s.close()
    assert serve_threads() == before


def test_an_in_process_forward_pass_that_raises_is_500_and_serving_goes_on(
        lenet, monkeypatch):
    calls = []
    real = model.Predictor.__call__

    def flaky(self, batch):
        calls.append(len(batch))
        if len(calls) == 1:
            raise FloatingPointError('a kernel failed')
        return real(self, batch)
    monkeypatch.setattr(model.Predictor, '__call__', flaky)
    s = ModelServer([lenet.signed], max_batch_size=1, in_process=True).start()
    try:
        err = error(post(s.url, 'lenet', REF['x'][0]), 500)
        assert 'FloatingPointError: a kernel failed' in err['message']
        np.testing.assert_allclose(outputs(post(s.url, 'lenet', REF['x'][1])),
                                   lenet.forward(REF['x'][1:2])[0], **TOL)
        (w,) = describe(s.url, 'lenet')['workers']
        assert w['status'] == 'READY' and w['batches'] == 2
    finally:
        s.close()


@pytest.mark.parametrize('hand_off,delay_ms,on_loop', [
    (False, 1000, True),      # every connection waits, the model is quick
    (True, 1000, False),      # --always-hand-off
    (False, 0, False),        # a batch takes longer than the delay: 0 ms
])
def test_the_loop_runs_a_short_batch_itself_when_every_connection_waits(
        lenet, hand_off, delay_ms, on_loop):
    """One client on one kept-alive connection: while it waits nobody else
    can send, and the loop runs each batch itself (all but the first, whose
    time is not known yet) with the worker thread's copy of the model."""
    s = ModelServer([lenet.signed], devices=['cpu(0)'], in_process=True,
                    max_batch_delay_ms=delay_ms, always_hand_off=hand_off).start()
    try:
        x = np.random.RandomState(3).rand(5, 1, 28, 28).astype(np.float32)
        with Client(s.url) as c:
            got = np.stack([c.predict('lenet', x[i]) for i in range(5)])
        np.testing.assert_allclose(got, lenet.forward(x), **TOL)
        (w,) = describe(s.url, 'lenet')['workers']
        assert w['batches'] == 5
        assert w['batchesOnLoop'] == (4 if on_loop else 0)
    finally:
        s.close()


def test_a_batch_that_fails_on_the_loop_is_500_and_serving_goes_on(lenet, monkeypatch):
    real, calls = model.Predictor.__call__, []

    def flaky(self, batch):
        calls.append(len(batch))
        if len(calls) == 2:                      # the first batch on the loop
            raise FloatingPointError('a kernel failed')
        return real(self, batch)
    monkeypatch.setattr(model.Predictor, '__call__', flaky)
    s = ModelServer([lenet.signed], in_process=True, max_batch_delay_ms=1000).start()
    try:
        with Client(s.url) as c:
            c.predict('lenet', REF['x'][0])
            with pytest.raises(HTTPError, match='FloatingPointError: a kernel failed'):
                c.predict('lenet', REF['x'][1])
            np.testing.assert_allclose(c.predict('lenet', REF['x'][2]),
                                       lenet.forward(REF['x'][2:3])[0], **TOL)
        (w,) = describe(s.url, 'lenet')['workers']
        assert w['status'] == 'READY' and w['batchesOnLoop'] == 1
    finally:
        s.close()


def test_a_model_an_in_process_worker_cannot_load_stops_the_start(lenet, monkeypatch):
    def broken(self, files, ctx):
        raise MemoryError('no room on the device')
    monkeypatch.setattr(model.Predictor, '__init__', broken)
    s = ModelServer([lenet.signed], in_process=True, start_timeout=WAIT)
    t = time.monotonic()
    with pytest.raises(RuntimeError, match='did not start: could not load lenet: '
                                           'MemoryError: no room on the device'):
        s.start()
    assert time.monotonic() - t < WAIT / 2      # told at once, not timed out
    s.close()                                   # (a no-op now: all is closed)
    assert s.pool._zctx.closed                  # (left open, its collection hangs)
    assert serve_threads() == []


def test_in_process_workers_are_refused_with_other_hosts(lenet):
    with pytest.raises(ValueError, match='in-process workers run on this machine'):
        ModelServer([lenet.signed], in_process=True, hosts=[('nodeA', 22)],
                    worker_host='10.0.0.1')


def test_the_command_line_in_process_starts_no_worker_process(lenet):
    from d2lmini.engine.cores import blas_threads
    before = set(serve_children())
    env = {k: v for k, v in os.environ.items() if k != 'OPENBLAS_NUM_THREADS'}
    s = Served(lambda: ServerProcess(lenet.signed, '--in-process', '--devices',
                                     'cpu(0),cpu(1)', env=env))
    try:
        server_pids = set(serve_children()) - before
        assert len(server_pids) == 1 and s.pids == sorted(server_pids) * 2
        # one BLAS thread per call, as a worker process has (None: not OpenBLAS)
        one = None if blas_threads() is None else 1
        assert [w['blasThreads'] for w in describe(s.url, 'lenet')['workers']] \
            == [one, one]
        x = REF['x'][:3]
        np.testing.assert_allclose(outputs(post(s.url, 'lenet', x)),
                                   lenet.forward(x), **TOL)
    finally:
        s.close()
