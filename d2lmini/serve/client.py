"""Talking to the server: one prediction, a server in a process, a load test.

:func:`predict` sends examples and returns the outputs (``urllib``, no
dependency).  :class:`ServerProcess` runs ``python -m d2lmini.serve`` as a
child process, as it would run in production, and stops it (and its
workers) when done.  :func:`load_test` drives a server with many
concurrent requests (``aiohttp``) in one of two ways:

* **closed loop**, ``clients=N``: N clients, each sending its next request
  as soon as the last one is answered.  The server is never offered more
  than N requests at once; this measures the most it can serve.
* **open loop**, ``rate=R``: requests start at R per second (evenly
  spaced) whether or not earlier ones were answered, as independent users
  would send them.  Latency is measured from when a request was *due*, so
  a server that falls behind shows it (no "coordinated omission").

Both return the throughput and the latency percentiles, and every
request of the window as ``(due, latency, status)``, for a plot over time.
"""
import asyncio
import http.client
import io
import json
import os
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from ..launch.plan import _child_pythonpath

__all__ = ['predict', 'Client', 'ServerProcess', 'load_test', 'npy_bytes',
           'HTTPError']

HTTPError = urllib.error.HTTPError


def npy_bytes(x):
    """The ``.npy`` file of ``x`` as bytes (a request body)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(x), allow_pickle=False)
    return buf.getvalue()


def _request(x, npy):
    """``(body, content type)`` of the examples ``x``."""
    x = np.asarray(x, dtype=np.float32)
    return (npy_bytes(x), 'application/x-npy') if npy else \
        (json.dumps(x.tolist()).encode(), 'application/json')


def _outputs(data, content_type):
    if (content_type or '').startswith('application/x-npy'):
        return np.load(io.BytesIO(data), allow_pickle=False)
    return np.asarray(json.loads(data), dtype=np.float32)


def predict(url, model, x, npy=True, timeout=10.0):
    """POST ``x`` to ``url/predictions/model``; the outputs as an array.

    An error answer raises ``urllib.error.HTTPError``; its JSON body, with
    the server's message, is in ``e.read()``.
    """
    body, ctype = _request(x, npy)
    req = urllib.request.Request(f'{url}/predictions/{model}', data=body,
                                 method='POST', headers={
                                     'Content-Type': ctype,
                                     'Accept': ctype})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return _outputs(r.read(), r.headers.get('Content-Type'))


class Client:
    """Requests to the server at ``url`` over one kept-alive connection
    (:func:`predict` opens a new one each time)::

        with Client(server.url) as c:
            y = c.predict('lenet', x)

    An error answer raises :class:`HTTPError`, as :func:`predict` does.
    Not for several threads at once: give each its own.
    """

    def __init__(self, url, timeout=10.0):
        u = urllib.parse.urlsplit(url)
        self.url = url
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)

    def post(self, path, body, content_type, accept=None):
        """``(status, content type, body)`` of one POST to ``path``."""
        headers = {'Content-Type': content_type, 'Accept': accept or content_type}
        try:
            self.conn.request('POST', path, body, headers)
            r = self.conn.getresponse()
            data = r.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()             # (the next request reconnects)
            raise
        return r.status, r.getheader('Content-Type'), data

    def predict(self, model, x, npy=True):
        """The outputs of ``model`` for the examples ``x`` (or one example)."""
        body, ctype = _request(x, npy)
        status, rtype, data = self.post(f'/predictions/{model}', body, ctype)
        if status != 200:
            try:
                message = json.loads(data)['message']
            except (ValueError, TypeError, KeyError):
                message = data[:200].decode(errors='replace')
            raise HTTPError(f'{self.url}/predictions/{model}', status, message,
                            None, io.BytesIO(data))
        return _outputs(data, rtype)

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def get_json(url, timeout=10.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


class ServerProcess:
    """``python -m d2lmini.serve ARGS`` as a child process.

    ``url`` once it serves; ``close()`` stops it with SIGTERM (SIGKILL after
    ``grace`` seconds); also a context manager.  ``output`` collects what
    it printed.
    """

    def __init__(self, *args, start_timeout=60.0, env=None):
        argv = [sys.executable, '-m', 'd2lmini.serve'] + [str(a) for a in args]
        if '--port' not in argv:
            argv += ['--port', '0']
        env = dict(os.environ if env is None else env, PYTHONUNBUFFERED='1')
        env['PYTHONPATH'] = _child_pythonpath(env.get('PYTHONPATH', ''))
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True)
        self.output, self.url = [], None
        found = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.output.append(line.rstrip('\n'))
                m = re.search(r'serving .* at (http://\S+) with', line)
                if m and not found.is_set():
                    self.url = m.group(1)
                    found.set()
            found.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        found.wait(start_timeout)
        if self.url is None:
            self.close()
            raise RuntimeError('the server did not start:\n' +
                               '\n'.join(self.output[-20:]))

    def workers(self, model):
        """The workers ``GET /models/{model}`` lists."""
        return get_json(f'{self.url}/models/{model}')[0]['workers']

    def close(self, grace=5.0):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self._reader.join(2)
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


async def _load(url, body, headers, clients, rate, seconds, warmup, timeout):
    import aiohttp
    lat, codes, log = [], {}, []
    conn = aiohttp.TCPConnector(limit=0, force_close=False)
    tmo = aiohttp.ClientTimeout(total=timeout)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    start, stop = t0 + warmup, t0 + warmup + seconds

    async def one(session, due):
        try:
            async with session.post(url, data=body, headers=headers) as r:
                await r.read()
                code = r.status
        except asyncio.TimeoutError:
            code = 'timeout'
        except aiohttp.ClientError as e:
            code = type(e).__name__
        end = loop.time()
        if start <= end <= stop:                  # answered inside the window:
            codes[code] = codes.get(code, 0) + 1  # the throughput
        if start <= due < stop:                   # sent inside it: the latency,
            log.append((due - start, end - due, code))   # however late
            if code == 200:
                lat.append(end - due)

    async with aiohttp.ClientSession(connector=conn, timeout=tmo) as session:
        if clients:
            async def client():
                while loop.time() < stop:
                    await one(session, loop.time())
            await asyncio.gather(*[client() for _ in range(clients)])
        else:
            tasks, i = [], 0
            while True:
                due = t0 + i / rate
                if due >= stop:
                    break
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.ensure_future(one(session, due)))
                i += 1
            await asyncio.gather(*tasks)
    lat = np.sort(np.array(lat)) * 1e3
    ok = codes.get(200, 0)
    pct = (lambda q: float(np.percentile(lat, q))) if len(lat) else (lambda q: float('nan'))
    return {'rps': ok / seconds, 'ok': ok, 'codes': codes,
            'p50_ms': pct(50), 'p95_ms': pct(95), 'p99_ms': pct(99),
            'max_ms': float(lat[-1]) if len(lat) else float('nan'),
            'clients': clients, 'rate': rate, 'seconds': seconds,
            'requests': sorted(log, key=lambda r: r[0])}


def load_test(url, body, content_type='application/x-npy', clients=None,
              rate=None, seconds=2.0, warmup=0.3, timeout=30.0, accept=None):
    """Drive ``url`` (POST ``body``) for ``seconds`` after ``warmup``:
    ``clients`` concurrent clients (closed loop) or ``rate`` requests per
    second (open loop).  Returns ``{'rps', 'p50_ms', 'p95_ms', 'p99_ms',
    'max_ms', 'codes', 'requests', ...}``: the throughput and the
    ``codes`` count the answers that came inside the window, the latencies
    are those of the requests sent inside it (answered before or after its
    end: dropping the late ones would hide the slowest); ``requests`` lists
    those as ``(due, latency, status)``, in seconds from the window's
    start.  The answers are asked for in ``accept`` (by default the
    body's own type).  Runs on a thread of its own, so it also works inside a notebook
    (whose loop is already running)."""
    if (clients is None) == (rate is None):
        raise ValueError('give clients= (closed loop) or rate= (open loop)')
    headers = {'Content-Type': content_type, 'Accept': accept or content_type}
    out = []
    t = threading.Thread(target=lambda: out.append(asyncio.run(_load(
        url, body, headers, clients, rate, seconds, warmup, timeout))))
    t.start()
    t.join()
    if not out:
        raise RuntimeError('the load test failed (see the traceback above)')
    return out[0]
