"""Optimizer states on disk: one ``nd.save`` archive, no pickle.

Written by ``KVStore.save_optimizer_states`` and ``Trainer.save_states``
(one format, so either can read the other's file):

* ``state/<key>/<k>``: the arrays of the state of ``key``, flattened;
* ``__trainer__.json``: a uint8 array holding a JSON document: the
  optimizer's name, the layout of every state, the key type and, when the
  optimizer itself is saved, its hyperparameters and update counters.

A state is None, an NDArray, or a tuple of states (nested under
multi-precision: ``(weight32, (mean, var))``); its layout is None,
``'array'``, or a list of layouts.
"""
import json

import numpy as np

from .. import optimizer as opt

FORMAT = 'd2lmini-trainer-states'
META_KEY = '__trainer__.json'


def _layout(st):
    if st is None:
        return None
    if isinstance(st, (tuple, list)):
        return [_layout(s) for s in st]
    return 'array'


def _count(kind):
    if kind is None:
        return 0
    if kind == 'array':
        return 1
    if isinstance(kind, int):          # files written before nesting: n arrays
        return kind
    return sum(_count(k) for k in kind)


def _build(kind, arrays):
    if kind is None:
        return None
    if kind == 'array':
        return next(arrays)
    if isinstance(kind, int):
        return tuple(next(arrays) for _ in range(kind))
    return tuple(_build(k, arrays) for k in kind)


def update_counts(o):
    """Updates made per key, over all devices (each device counts its own)."""
    counts = {}
    for per_ctx in o._all_index_update_counts.values():
        for k, n in per_ctx.items():
            counts[k] = max(n, counts.get(k, 0))
    return counts


def save(fname, updater, dump_optimizer=True, extra=None):
    """Write ``updater``'s states (and optimizer, if ``dump_optimizer``)."""
    from .. import ndarray as nd
    o = updater.optimizer
    arrays, layout = {}, {}
    keys = sorted(updater.states, key=lambda k: (isinstance(k, str), k))
    for key in keys:
        st = updater.states[key]
        layout[str(key)] = _layout(st)
        for k, a in enumerate(opt._states(st)):
            arrays[f'state/{key}/{k}'] = a
    meta = {'format': FORMAT, 'version': 1,
            'optimizer': type(o).__name__.lower(), 'states': layout,
            'key_type': 'str' if any(isinstance(k, str) for k in keys) else 'int'}
    if dump_optimizer:
        meta.update(hyper=o._hyper(), num_update=o.num_update,
                    index_update_count={str(k): v for k, v in update_counts(o).items()})
    meta.update(extra or {})
    blob = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    arrays[META_KEY] = nd.array(blob, dtype='uint8')
    nd.save(fname, arrays)


def load(fname, targets, shape_of, contexts=(), num_params=None):
    """Read ``fname`` into ``targets``, a list of ``(updater, where)``.

    ``where`` is a Context, or a function of the key giving one: the device
    the states go to.  ``shape_of(key)`` is the weight's shape (None: not
    checked).  Everything is checked before anything changes.  Returns the
    file's JSON document.
    """
    from .. import ndarray as nd
    data = nd.load(fname)
    if not isinstance(data, dict) or META_KEY not in data:
        raise ValueError(f'{fname}: not an optimizer states file (written by '
                         f'Trainer.save_states or kv.save_optimizer_states)')
    meta = json.loads(data.pop(META_KEY).asnumpy().tobytes().decode())
    if meta.get('format') != FORMAT or meta.get('version') != 1:
        raise ValueError(f'{fname}: unsupported states format '
                         f'{meta.get("format")!r} v{meta.get("version")}')
    o = targets[0][0].optimizer
    name = type(o).__name__.lower()
    if meta['optimizer'] != name:
        raise ValueError(f"{fname} holds states of optimizer '{meta['optimizer']}', "
                         f"but this Trainer uses '{name}'")
    if num_params is not None and 'params' in meta and len(meta['params']) != num_params:
        raise ValueError(f'{fname} holds states for {len(meta["params"])} '
                         f'parameters, this Trainer has {num_params}')
    as_key = str if meta.get('key_type') == 'str' else int
    layout = {as_key(k): kind for k, kind in meta['states'].items()}
    for key, kind in layout.items():
        shape = shape_of(key)
        for k in range(_count(kind)):
            a = data.get(f'state/{key}/{k}')
            if a is None:
                raise ValueError(f'{fname}: state {k} of key {key!r} is missing')
            if shape is not None and a.shape != shape:
                raise ValueError(f'{fname}: state {k} of key {key!r} has shape '
                                 f'{a.shape}, the weight has shape {shape}')
    # -- checked: now change things
    if 'hyper' in meta:
        for k, v in meta['hyper'].items():
            setattr(o, k, v)
        o.num_update = meta['num_update']
        counts = {as_key(k): v for k, v in meta['index_update_count'].items()}
        for c in list(o._all_index_update_counts) + list(contexts):
            o._all_index_update_counts[c] = dict(counts)
        o._index_update_count = o._all_index_update_counts[None]
    for upd, where in targets:
        upd.states = {}
        for key, kind in layout.items():
            ctx = where(key) if callable(where) else where
            arrs = iter([data[f'state/{key}/{k}'].as_in_context(ctx).copy()
                         for k in range(_count(kind))])
            upd.states[key] = _build(kind, arrs)
    return meta
