"""The HTTP API, MXNet Model Server's and TorchServe's, on tornado.

=====================================  =====================================
``POST /predictions/{name}``           a JSON array (one example or a list
                                       of them) or an ``.npy`` file
                                       (``Content-Type: application/x-npy``)
                                       in; the outputs out, as JSON, or as
                                       ``.npy`` with ``Accept:
                                       application/x-npy``
``GET /ping``                          ``{"status": "Healthy"}`` (500 and
                                       ``Unhealthy`` with no worker)
``GET /models``, ``GET /models/{n}``   what is served: workers, devices,
                                       batch settings, queue length
``GET /metrics``                       Prometheus' text format
``POST /echo``                         the body back: the HTTP layer's own
                                       ceiling, for benchmarks
=====================================  =====================================

Bad input is answered, never raised: 400 for a body that is not JSON or
``.npy``, not numbers, or not of the model's input shape (the message
names the shape expected); 404 for an unknown model; 413 for a body over
the size limit (checked from ``Content-Length`` before the body is read,
and again as it streams in); 503 with ``Retry-After`` when the queue is
full or no worker can run the request; 504 when the request's timeout
passes.  Errors are JSON ``{"code", "type", "message"}``, as TorchServe's.
``.npy`` bodies are read with ``allow_pickle=False``: nothing a client
sends is unpickled.
"""
import asyncio
import io
import json
import math
import time

import numpy as np
import tornado.httpserver
import tornado.iostream
import tornado.web

from .batcher import QueueFull, Unavailable
from .workers import WorkerError

NPY = 'application/x-npy'
__all__ = ['make_app', 'HTTPServer', 'BadInput', 'decode', 'encode', 'npy']


class BadInput(ValueError):
    """A request body the model cannot take (answer 400)."""


_NPY_HEADERS = {}     # an .npy header's bytes -> (dtype, shape, order), as NumPy read it


def _npy(body):
    """The array of an ``.npy`` body.  NumPy parses a header it has not
    seen (``allow_pickle=False``); a header seen before (clients send the
    same one again and again) is looked up, and the data viewed in place."""
    body = bytes(body)
    if body[:6] == b'\x93NUMPY' and len(body) > 10:
        width = 2 if body[6] == 1 else 4
        end = 8 + width + int.from_bytes(body[8:8 + width], 'little')
        known = _NPY_HEADERS.get(body[:end])
        if known is not None:
            dtype, shape, order = known
            count = math.prod(shape)
            if len(body) - end < count * dtype.itemsize:
                raise BadInput(f'the .npy body holds {len(body) - end} bytes of data; '
                               f'its header says {dtype}{list(shape)}')
            return np.frombuffer(body, dtype, count, end).reshape(shape, order=order)
    try:
        arr = np.load(io.BytesIO(body), allow_pickle=False)
    except Exception as e:                     # noqa: BLE001 -- anything: 400
        raise BadInput(f'the body is not an .npy file ({type(e).__name__}: '
                       f'{str(e)[:200]})') from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in 'biuf':
        raise BadInput(f'an .npy array of dtype {getattr(arr, "dtype", "?")}: '
                       f'numbers are expected (bool, int, uint or float)')
    if len(_NPY_HEADERS) < 64 and body[:6] == b'\x93NUMPY':
        order = 'F' if arr.ndim > 1 and arr.flags.f_contiguous and \
            not arr.flags.c_contiguous else 'C'
        _NPY_HEADERS[body[:end]] = (arr.dtype, arr.shape, order)
    return arr


def decode(body, content_type, shape):
    """The examples in ``body``, float32 with a batch axis, and whether the
    body was one example (``single``)."""
    ctype = (content_type or '').split(';')[0].strip().lower()
    if ctype in (NPY, 'application/octet-stream') or body[:6] == b'\x93NUMPY':
        arr = _npy(body)
    else:
        try:
            obj = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise BadInput('the body is neither JSON nor an .npy file '
                           f'(Content-Type: {NPY})') from None
        if isinstance(obj, dict):              # {"data": [...]}, as MMS accepts
            obj = obj.get('data', obj.get('instances'))
        try:                 # (no dtype: "0.5" and null stay strings and objects)
            arr = np.asarray(obj)
        except (ValueError, TypeError):
            arr = None
        if arr is None or arr.dtype.kind not in 'biuf':
            raise BadInput('the JSON body is not an array of numbers of one '
                           'shape (a nested list, ragged or with non-numbers?)')
    shape = tuple(shape)
    if arr.shape == shape:
        return arr.astype(np.float32, copy=False)[None], True
    if arr.ndim == len(shape) + 1 and arr.shape[1:] == shape and len(arr):
        return arr.astype(np.float32, copy=False), False
    want = ', '.join(map(str, shape))
    raise BadInput(f'input of shape {arr.shape}: expected one example of shape '
                   f'({want}) or a batch of shape (N, {want})')


_NPY_OUT = {}         # (dtype, shape) -> the .npy header NumPy writes for it


def npy(arr):
    """``arr`` as an ``.npy`` file (bytes).  The header is NumPy's own
    (``np.save``), written once per dtype and shape and then reused: answers
    of one model all have the same few shapes."""
    arr = np.ascontiguousarray(arr)
    key = (arr.dtype.str, arr.shape)
    header = _NPY_OUT.get(key)
    if header is None:
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        full = buf.getvalue()
        if len(_NPY_OUT) < 64:
            _NPY_OUT[key] = full[:len(full) - arr.nbytes]
        return full
    return header + arr.tobytes()


def encode(outs, single, accept):
    """``(body, content type)`` of the outputs of one request."""
    if single:
        outs = [o[0] for o in outs]
    if NPY in (accept or ''):
        if len(outs) != 1:
            raise BadInput(f'the model has {len(outs)} outputs; .npy holds one '
                           '(ask for JSON)')
        return npy(outs[0]), NPY
    data = outs[0].tolist() if len(outs) == 1 else [o.tolist() for o in outs]
    return json.dumps(data).encode(), 'application/json'


def _expire(future):
    if not future.done():
        future.set_exception(asyncio.TimeoutError())


class _Handler(tornado.web.RequestHandler):
    def initialize(self, server):
        self.server = server

    def fail(self, code, kind, message, finish=True, **headers):
        """Answer ``code`` with the JSON error; ``finish=False`` sends it
        now and leaves the request open (to be finished later)."""
        self.set_status(code)
        for k, v in headers.items():
            self.set_header(k, v)
        self.set_header('Content-Type', 'application/json')
        body = json.dumps({'code': code, 'type': kind, 'message': message})
        if finish:
            self.finish(body)
        else:
            self.set_header('Content-Length', len(body))
            self.write(body)
            self.flush()

    def write_error(self, status_code, **kwargs):       # tornado's own errors
        self.set_header('Content-Type', 'application/json')
        self.finish(json.dumps({'code': status_code, 'type': self._reason,
                                'message': self._reason}))

    def reply(self, obj, code=200):
        self.set_status(code)
        self.set_header('Content-Type', 'application/json')
        self.finish(json.dumps(obj, indent=2))


class _Body(_Handler):
    """A handler whose body streams in, refused past the size limit.

    The 413 goes out as soon as the body is known to be too large (from
    ``Content-Length``, or as it streams in), before the rest is read.  A
    body up to twice the limit is then read to its end and dropped before
    the connection closes: a client that sends its whole body before
    reading (``urllib``, ``requests``) would otherwise find its connection
    reset, and never see the answer.  Past that, tornado stops reading.
    """

    def prepare(self):
        self.started = time.monotonic()
        self.chunks, self.size, self.gone = [], 0, False
        self.refused = False
        limit = self.server.max_body
        length = self.request.headers.get('Content-Length')
        if length is not None and length.isdigit() and int(length) > limit:
            self.too_large(drain=int(length) <= 2 * limit)

    def too_large(self, drain=True):
        self.refused = True
        name = self.path_args[0] if self.path_args else ''
        self.server.count(name if name in self.server.batchers else '', 413,
                          time.monotonic() - self.started)
        # (sent now; when draining, finished once the body is read, else
        # at once: tornado closes a connection whose body is left unread)
        self.fail(413, 'PayloadTooLarge',
                  f'the body is over the limit of {self.server.max_body:,} bytes',
                  finish=not drain, Connection='close')

    def data_received(self, chunk):
        if self.refused:
            return                                      # (read, and dropped)
        self.size += len(chunk)
        if self.size > self.server.max_body:
            self.too_large()
            return
        self.chunks.append(chunk)

    def on_connection_close(self):
        self.gone = True

    @property
    def body(self):
        return b''.join(self.chunks)


@tornado.web.stream_request_body
class Predict(_Body):
    async def post(self, name):
        if self.refused:
            self.finish()                    # (the 413 went out already)
            return
        s = self.server
        s.waiting += 1           # (this connection sends nothing more meanwhile)
        try:
            code = await self._predict(s, name)
        finally:
            s.waiting -= 1
        s.count(name if name in s.batchers else '', code,   # (one series for
                time.monotonic() - self.started)            # every unknown name)

    async def _predict(self, s, name):
        batcher = s.batchers.get(name)
        if batcher is None:
            self.fail(404, 'ModelNotFoundException', f'Model not found: {name} '
                      f'(serving {", ".join(sorted(s.batchers))})')
            return 404
        try:
            x, single = decode(self.body, self.request.headers.get('Content-Type'),
                               s.models[name].input_shape)
            req = self.req = batcher.submit(x)
        except BadInput as e:
            self.fail(400, 'BadInput', str(e))
            return 400
        except QueueFull as e:
            self.fail(503, 'ServiceUnavailable', f'{e}; retry later',
                      **{'Retry-After': '1'})
            return 503
        late = asyncio.get_running_loop().call_later(
            s.timeout - (time.monotonic() - self.started), _expire, req.future)
        try:
            outs = await req.future
        except asyncio.CancelledError:
            return 499                           # the client went away
        except asyncio.TimeoutError:             # dropped if not yet running
            self.fail(504, 'Timeout', f'no answer within {s.timeout:g} s')
            return 504
        except Unavailable as e:
            self.fail(503, 'ServiceUnavailable', str(e), **{'Retry-After': '1'})
            return 503
        except WorkerError as e:
            self.fail(500, 'InternalServerError', f'the forward pass failed: {e}')
            return 500
        finally:
            late.cancel()
        if self.gone:
            return 499                           # (nginx's "client closed")
        try:
            body, ctype = encode(outs, single, self.request.headers.get('Accept'))
        except BadInput as e:
            self.fail(406, 'NotAcceptable', str(e))
            return 406
        self.set_header('Content-Type', ctype)
        try:
            self.finish(body)
        except tornado.iostream.StreamClosedError:
            return 499
        return 200

    def on_connection_close(self):
        super().on_connection_close()
        req = getattr(self, 'req', None)
        if req is not None and not req.future.done():
            req.future.cancel()                  # dropped if not yet running


@tornado.web.stream_request_body
class Echo(_Body):
    def post(self):
        if self.refused:
            self.finish()
        else:
            self.set_header('Content-Type', 'application/octet-stream')
            self.finish(self.body)


class Ping(_Handler):
    def get(self):
        if self.server.pool.ready_count():
            self.reply({'status': 'Healthy'})
        else:
            self.reply({'status': 'Unhealthy'}, 500)


class Models(_Handler):
    def get(self, name=None):
        s = self.server
        if name is None:
            self.reply({'models': [{'modelName': n, 'modelUrl': m.prefix}
                                   for n, m in s.models.items()]})
        elif name not in s.models:
            self.fail(404, 'ModelNotFoundException', f'Model not found: {name}')
        else:
            self.reply([s.describe(name)])


class Metrics(_Handler):
    def get(self):
        self.set_header('Content-Type', 'text/plain; version=0.0.4')
        self.finish(self.server.render_metrics())


class HTTPServer(tornado.httpserver.HTTPServer):
    """tornado's HTTP server, counting the connections open in the model
    server's ``connections`` (for :meth:`ModelServer.all_waiting`)."""

    def handle_stream(self, stream, address):
        self.request_callback.model_server.connections += 1
        super().handle_stream(stream, address)

    def on_close(self, server_conn):
        server = self.request_callback.model_server
        server.connections -= 1
        super().on_close(server_conn)
        if server.all_waiting():      # (the one left open may all wait now)
            for b in server.batchers.values():
                b.look_again()


def make_app(server):
    """The tornado ``Application`` of ``server`` (a ModelServer)."""
    kw = dict(server=server)
    app = tornado.web.Application([
        (r'/predictions/([^/]+)/?', Predict, kw),
        (r'/ping', Ping, kw),
        (r'/models/?', Models, kw),
        (r'/models/([^/]+)/?', Models, kw),
        (r'/metrics', Metrics, kw),
        (r'/echo', Echo, kw),
    ])
    app.model_server = server
    return app

