"""``python -m d2lmini.serve.worker``: one worker of the model server.

A worker owns one device and a copy of every served model's parameters on
it.  It connects to the front end (a ZeroMQ DEALER to the front end's
ROUTER), says ``hello``, and then does what it is told, one message at a
time::

    front end -> worker             worker -> front end
    model  (graph + parameters)     loaded / failed
    batch  (id, model, examples)    result (id, outputs) / error (id, text)
    hb     (I am alive)             hb, every 0.1 s, from a second socket
    stop

Messages are the parameter server's (:mod:`d2lmini.kvstore.dist.wire`):
a JSON header and raw array frames, never pickled, signed when
``D2LMINI_PS_SECRET`` is set.  The worker needs no files: the graph and
the parameters arrive over the wire, so a worker on another host needs
only the package.  Operations run synchronously (the naive engine: a
worker runs one batch at a time, and handing each operation to a stream's
thread would only add a thread switch).  Heartbeats come from a thread of their own, so that a
long forward pass does not look like a dead worker.  A worker whose front
end falls silent (``--frontend-timeout``) or whose parent process dies
(``--parent-pid``, for the workers the front end starts itself) exits.

The front end's side of this conversation is :mod:`d2lmini.serve.workers`.
"""
import argparse
import logging
import os
import socket
import sys
import threading
import time

import zmq

from ..kvstore.dist import wire

from .workers import FRONTEND, HEARTBEAT_S, secret

log = logging.getLogger('d2lmini.serve')


def _heartbeats(zctx, address, name, secret, stop):
    sock = wire.limit(zctx.socket(zmq.DEALER))
    sock.linger = 0
    sock.connect(address)
    chan = wire.Channel(secret)
    try:
        while not stop.wait(HEARTBEAT_S):
            wire.send(sock, chan.pack('hb', dest=FRONTEND, node=name))
    finally:
        sock.close()


def _build(header, arrays, ctx):
    from .model import ModelFiles, Predictor
    names = header.get('names') or []
    if len(arrays) != len(names) + 1 or not isinstance(header.get('shape'), list):
        raise ValueError(f'a model message with {len(arrays)} arrays for '
                         f'{len(names)} names')
    files = ModelFiles(name=header['model'], symbol_json=bytes(arrays[0]).decode(),
                       params=dict(zip(names, arrays[1:])),
                       input_name=header.get('input') or 'data',
                       input_shape=tuple(header['shape']),
                       input_dtype=header.get('dtype') or 'float32')
    return Predictor(files, ctx)


def run(address, device, name=None, secret=None, frontend_timeout=5.0,
        parent_pid=None):
    """Serve ``address``'s batches on ``device`` until told to stop, or
    until the front end is gone.  Returns the exit status."""
    from ..context import _from_env
    from ..engine import stream
    ctx = _from_env(device)
    if not os.environ.get('D2LMINI_ENGINE'):
        stream.set_engine('naive')   # one batch at a time: asynchrony buys nothing
    name = name or f'{socket.gethostname()}-{os.getpid()}-{os.urandom(2).hex()}'
    zctx = zmq.Context()
    sock = wire.limit(zctx.socket(zmq.DEALER))
    sock.linger = 0
    sock.connect(address)
    chan = wire.Channel(secret)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeats, daemon=True,
                            args=(zctx, address, name, secret, stop))
    beat.start()
    models = {}

    def send(op, arrays=(), **meta):
        wire.send(sock, chan.pack(op, arrays, dest=FRONTEND, node=name, **meta))

    send('hello', device=str(ctx), pid=os.getpid(), host=socket.gethostname())
    last = time.monotonic()
    status = 0
    try:
        while True:
            if parent_pid and os.getppid() != parent_pid:
                log.warning('worker %s: the front end (pid %d) is gone', name,
                            parent_pid)
                break
            if not sock.poll(250):
                if time.monotonic() - last > frontend_timeout:
                    log.warning('worker %s: no word from %s for %.1f s; exiting',
                                name, address, frontend_timeout)
                    status = 1
                    break
                continue
            try:
                _, h, arrays = wire.recv(sock, chan)
            except wire.BadMessage as e:
                log.warning('worker %s: refused a message: %s', name, e)
                continue
            last = time.monotonic()
            op = h['op']
            if op == 'stop':
                break
            if op == 'model':
                try:
                    models[h['model']] = _build(h, arrays, ctx)
                    send('loaded', model=h['model'])
                except Exception as e:                 # noqa: BLE001 -- told back
                    send('failed', model=str(h.get('model')),
                         message=f'{type(e).__name__}: {e}')
            elif op == 'batch':
                try:
                    outs = models[h['model']](arrays[0])
                    send('result', outs, id=h['id'], model=h['model'])
                except Exception as e:                 # noqa: BLE001 -- told back
                    send('error', id=h.get('id') or 0,
                         message=f'{type(e).__name__}: {e}')
    finally:
        stop.set()
        beat.join(1.0)
        sock.close()
        zctx.term()
    return status


def main(argv=None):
    p = argparse.ArgumentParser(prog='python -m d2lmini.serve.worker',
                                description=__doc__.split('\n\n')[0])
    p.add_argument('--frontend', required=True,
                   help="the front end's worker address, tcp://HOST:PORT")
    p.add_argument('--device', default='cpu(0)', help='cpu(i) or gpu(i)')
    p.add_argument('--name', help='this worker\'s name (default host-pid-random)')
    p.add_argument('--frontend-timeout', type=float, default=5.0,
                   help='exit after this many seconds without word from the front end')
    p.add_argument('--parent-pid', type=int,
                   help='exit when this process (the front end) is gone')
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='[serve worker] %(message)s')
    return run(a.frontend, a.device, a.name, secret(), a.frontend_timeout,
               a.parent_pid)


if __name__ == '__main__':
    sys.exit(main())
