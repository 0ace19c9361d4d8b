"""``d2lmini.serve``: put an exported model behind HTTP, as MXNet Model Server did.

::

    python -m d2lmini.serve lenet --input-shape 1,28,28 --devices 'cpu(0),cpu(1)'
    curl -X POST localhost:8080/predictions/lenet -T x.npy -H 'Content-Type: application/x-npy'

The parts, in the order a request meets them:

``api.py``
    the HTTP API (TorchServe's): bodies decoded and checked, answers and
    errors encoded, on tornado;
``batcher.py``
    dynamic batching: a bounded queue per model, emptied into one forward
    pass per batch, and split back per request;
``workers.py``
    the front end's side of the workers: a ZeroMQ socket, who is ready,
    who is busy, who died;
``worker.py``
    a worker process: one device, a copy of every model, batches in,
    outputs out (``python -m d2lmini.serve.worker``);
``model.py``
    an exported model's files, read; a network built from them on a device;
``metrics.py``
    ``GET /metrics`` in Prometheus' text format;
``server.py``
    all of it together (:class:`ModelServer`) and the command line;
``client.py``
    a client, and the load generator of the chapter and the benchmark.
"""
from .model import ModelError, ModelFiles, Predictor, load
from .server import ModelServer, main

__all__ = ['ModelServer', 'ModelFiles', 'ModelError', 'Predictor', 'load', 'main']
