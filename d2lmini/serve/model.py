"""What is served: an exported network and the shape of one example.

``HybridBlock.export(PREFIX)`` and ``mx.model.save_checkpoint(PREFIX, N,
...)`` (d2lmini's or MXNet 1.9.1's) write two files: ``PREFIX-symbol.json``,
the graph, and ``PREFIX-NNNN.params``, its parameters in MXNet's binary
format.  :func:`load` reads both into a :class:`ModelFiles` -- plain text
and NumPy arrays, which is also what the front end sends to a worker
process -- and :class:`Predictor` turns them back into a network on one
device.

The graph does not say what one example looks like: a LeNet takes
``(N, 1, 28, 28)`` for any ``N``.  The server needs that shape to tell one
example from a batch and to answer a wrong body with the shape expected.
It comes from ``--input-shape``, or, as MXNet Model Server keeps it, from a
signature file beside the model (``PREFIX-signature.json`` or
``signature.json``)::

    {"inputs": [{"data_name": "data", "data_shape": [0, 1, 28, 28]}]}

whose first dimension is the batch (any value).
"""
import glob
import json
import os
import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ['ModelFiles', 'Predictor', 'load', 'ModelError']


class ModelError(ValueError):
    """Model files that cannot be served: missing, unreadable or ambiguous."""


@dataclass
class ModelFiles:
    """An exported model, as text and arrays (nothing pickled)."""
    name: str
    symbol_json: str
    params: dict                  # 'arg:NAME' / 'aux:NAME' -> np.ndarray
    input_name: str
    input_shape: tuple            # one example, without the batch axis
    input_dtype: str = 'float32'
    prefix: str = None
    epoch: int = None
    outputs: list = field(default_factory=list)


def _latest_epoch(prefix):
    pat = re.compile(re.escape(os.path.basename(prefix)) + r'-(\d{4,})\.params\Z')
    found = [int(m.group(1)) for f in glob.glob(glob.escape(prefix) + '-*.params')
             if (m := pat.match(os.path.basename(f)))]
    if not found:
        raise ModelError(f'{prefix}: no {prefix}-NNNN.params file (written by '
                         f'HybridBlock.export or mx.model.save_checkpoint)')
    return max(found)


def _signature(prefix):
    """(input name, example shape) from a signature file beside ``prefix``, or None."""
    for path in (prefix + '-signature.json',
                 os.path.join(os.path.dirname(prefix) or '.', 'signature.json')):
        if not os.path.exists(path):
            continue
        try:
            with open(path) as f:
                sig = json.load(f)
            first = sig['inputs'][0]
            shape = tuple(int(d) for d in first['data_shape'])[1:]
            return first.get('data_name'), shape
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            raise ModelError(f'{path}: not a signature file ({type(e).__name__}: '
                             f'{e}); expected {{"inputs": [{{"data_name": "data", '
                             f'"data_shape": [0, 1, 28, 28]}}]}}') from None
    return None


def parse_shape(text):
    """``'1,28,28'`` -> ``(1, 28, 28)``."""
    try:
        shape = tuple(int(s) for s in str(text).replace('(', '').replace(')', '')
                      .split(',') if s.strip())
    except ValueError:
        raise ModelError(f'input shape {text!r}: expected numbers separated by '
                         f'commas, e.g. 1,28,28') from None
    if not shape or any(s <= 0 for s in shape):
        raise ModelError(f'input shape {text!r}: expected positive sizes, e.g. 1,28,28')
    return shape


def load(prefix, epoch=None, name=None, input_shape=None):
    """Read ``PREFIX-symbol.json`` and ``PREFIX-NNNN.params`` (the latest
    epoch unless ``epoch``) into a :class:`ModelFiles`."""
    from .. import symbol as sym_mod
    from ..ndarray import utils as nd_utils
    prefix = os.fspath(prefix)
    sym_file = prefix + '-symbol.json'
    if not os.path.exists(sym_file):
        raise ModelError(f'{sym_file}: no such file (export the model with '
                         f'net.export({prefix!r}))')
    epoch = _latest_epoch(prefix) if epoch is None else int(epoch)
    param_file = f'{prefix}-{epoch:04d}.params'
    if not os.path.exists(param_file):
        raise ModelError(f'{param_file}: no such file')
    with open(sym_file) as f:
        text = f.read()
    try:
        graph = sym_mod.load_json(text)
    except Exception as e:                       # noqa: BLE001 -- say which file
        raise ModelError(f'{sym_file}: not a symbol file ({e})') from None
    loaded = nd_utils.load(param_file)
    if not isinstance(loaded, dict):
        raise ModelError(f'{param_file}: holds a list of arrays, not named parameters')
    params = {k if k.startswith(('arg:', 'aux:')) else 'arg:' + k: v.asnumpy()
              for k, v in loaded.items()}
    known = {k[4:] for k in params}
    inputs = [a for a in graph.list_inputs() if a not in known]
    sig = _signature(prefix)
    if len(inputs) != 1:
        raise ModelError(f'{sym_file}: the graph has {len(inputs)} inputs without '
                         f'parameters ({inputs}); one input can be served')
    if input_shape is None and sig is not None:
        input_shape = sig[1]
    if input_shape is None:
        raise ModelError(f'{prefix}: the shape of one example is unknown: give '
                         f'--input-shape (e.g. 1,28,28) or write {prefix}'
                         f'-signature.json')
    if isinstance(input_shape, str):
        input_shape = parse_shape(input_shape)
    name = name or os.path.basename(prefix)
    return ModelFiles(name=name, symbol_json=text, params=params,
                      input_name=inputs[0], input_shape=tuple(input_shape),
                      prefix=prefix, epoch=epoch, outputs=graph.list_outputs())


class Predictor:
    """A model on one device: ``predictor(batch)`` -> list of NumPy outputs.

    The graph runs as a ``SymbolBlock`` (one engine operation per call once
    a shape has been seen); its parameters are this device's own copy.
    """

    def __init__(self, files, ctx):
        from .. import gluon, symbol as sym_mod
        from ..ndarray import ndarray as nd_mod
        self.files, self.ctx = files, ctx
        graph = sym_mod.load_json(files.symbol_json)
        self.block = gluon.SymbolBlock(graph, [sym_mod.var(files.input_name)])
        values = {k: nd_mod.array(v, ctx=ctx, dtype=v.dtype)
                  for k, v in files.params.items()}
        self.block.collect_params().load_dict(values, ctx=ctx, cast_dtype=True,
                                              dtype_source='saved')

    def __call__(self, batch):
        from ..ndarray import ndarray as nd_mod
        x = nd_mod.array(np.ascontiguousarray(batch), ctx=self.ctx,
                         dtype=self.files.input_dtype)
        out = self.block(x)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        return [o.asnumpy() for o in outs]
