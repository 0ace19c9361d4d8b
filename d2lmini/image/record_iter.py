"""``mx.io.ImageRecordIter``: batches of images from a RecordIO file.

MXNet's native image iterator (``src/io/iter_image_recordio_2.cc``) with
its main keywords, reached as ``mx.io.ImageRecordIter``.  The records of
``path_imgrec`` (located through ``path_imgidx``, or by reading the record
headers) are cut into ``num_parts`` contiguous shares by
:func:`~d2lmini.gluon.data.dataset.part_range`, as every sharded iterator
here is; the iterator reads share ``part_index`` only, so the workers of a
job (``num_parts=kv.num_workers, part_index=kv.rank``) read every record
exactly once between them.

Batches are decoded on ``preprocess_threads`` threads, up to
``prefetch_buffer`` batches ahead of the caller: Pillow decodes with the
GIL released, the rest is NumPy.  Each image goes through MXNet's default
augmenter, in its order:

1. decode: gray for ``data_shape[0] == 1``, RGB for 3;
2. ``resize``: the shorter edge to ``resize`` pixels (``inter_method``);
3. crop ``data_shape[1:]``, centred or, with ``rand_crop``, anywhere; an
   image smaller than that is first enlarged to cover it;
4. mirror left-right: always (``mirror``) or with probability 1/2
   (``rand_mirror``);
5. ``(pixel - mean) * scale / std`` per channel (``mean_r/g/b``,
   ``std_r/g/b``; ``dtype='uint8'`` skips this step).

The random choices (``shuffle``, ``rand_crop``, ``rand_mirror``) come from
``seed`` (``seed_aug`` for the augmenter, if given) and the batch's place in
the run, so a run repeats exactly whatever the number of threads (MXNet's
draws depend on which thread decoded which image).

``round_batch=True`` (the default) fills the last batch of an epoch from
the start of the next pass over the records (``pad`` counts those), and the
next epoch goes on after them, so every record is seen equally often.
With ``round_batch=False`` the last batch's final ``pad`` slots are zeros
(MXNet 1.9.1 reports ``pad=0`` there and leaves stale data).
``batch.index`` holds each record's ``IRHeader.id`` (-1 for a zero slot).

>>> it = mx.io.ImageRecordIter(path_imgrec='train.rec', data_shape=(3, 224, 224),
...                            batch_size=32, resize=256, rand_crop=True,
...                            rand_mirror=True, mean_r=123.68, mean_g=116.78,
...                            mean_b=103.94, num_parts=kv.num_workers,
...                            part_index=kv.rank)      # doctest: +SKIP
"""
import os
import weakref
from collections import deque, namedtuple
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..data_iter import DataBatch, DataDesc, DataIter, _check_batch_size
from ..ndarray.ndarray import from_numpy
from ..recordio import RecordIOError, _offsets, _read_index, _read_record, unpack
from .image import _decode, _get_interp_method
from .resize import resize_hwc

__all__ = ['ImageRecordIter']

# Keywords of MXNet's that change nothing here (devices, logging, chunking).
_NO_EFFECT = {'ctx', 'verbose', 'device_id', 'shuffle_chunk_size',
              'shuffle_chunk_seed'}

# What a worker thread needs to make a batch (nothing mutable).
_Spec = namedtuple('_Spec', 'path offsets data_shape label_width resize '
                   'inter_method rand_crop mirror rand_mirror mean mult dtype')


class ImageRecordIter(DataIter):
    """Batches of images and labels from a ``.rec`` file of packed images
    (see the module docstring for the steps and keywords).

    ``getdata()`` and ``getlabel()`` return one NDArray each, as for MXNet's
    native iterators; the labels are ``(batch_size,)``, or
    ``(batch_size, label_width)`` for records packed with label arrays.
    ``close()`` (or dropping the iterator) stops its threads.
    """

    def __init__(self, path_imgrec, data_shape, batch_size, path_imgidx='',
                 label_width=1, shuffle=False, seed=0, seed_aug=None,
                 rand_crop=False, rand_mirror=False, mirror=False, resize=-1,
                 inter_method=1, mean_r=0.0, mean_g=0.0, mean_b=0.0,
                 std_r=1.0, std_g=1.0, std_b=1.0, scale=1.0, round_batch=True,
                 num_parts=1, part_index=0, preprocess_threads=4,
                 prefetch_buffer=4, dtype='float32', data_name='data',
                 label_name='softmax_label', **kwargs):
        unknown = set(kwargs) - _NO_EFFECT
        if unknown:
            raise TypeError(f'ImageRecordIter: unknown or unsupported arguments '
                            f'{sorted(unknown)}')
        _check_batch_size('ImageRecordIter', batch_size)
        super().__init__(int(batch_size))
        data_shape = tuple(int(d) for d in data_shape)
        if len(data_shape) != 3 or data_shape[0] not in (1, 3) or min(data_shape) < 1:
            raise ValueError(f'ImageRecordIter: data_shape must be (channels, '
                             f'height, width) with 1 or 3 channels, got {data_shape}')
        if np.dtype(dtype) not in (np.float32, np.uint8):
            raise ValueError(f"ImageRecordIter: dtype must be 'float32' or "
                             f"'uint8', got {dtype!r}")
        if int(preprocess_threads) < 1:
            raise ValueError(f'ImageRecordIter: preprocess_threads must be at '
                             f'least 1, got {preprocess_threads}')
        from ..gluon.data.dataset import part_range  # loads gluon: not at import
        path = os.fspath(path_imgrec)
        offsets = sorted(_read_index(path_imgidx)[1].values()) if path_imgidx \
            else _offsets(path)
        start, end = part_range(len(offsets), num_parts, part_index)
        if start == end:
            raise ValueError(f'ImageRecordIter: {path} has {len(offsets)} records, '
                             f'so part {part_index} of {num_parts} gets none')
        c = data_shape[0]
        self._spec = _Spec(
            path, np.asarray(offsets[start:end], np.int64), data_shape,
            int(label_width), int(resize), int(inter_method), bool(rand_crop),
            bool(mirror), bool(rand_mirror),
            np.float32([mean_r, mean_g, mean_b][:c]).reshape(c, 1, 1),
            (np.float32(scale) / np.float32([std_r, std_g, std_b][:c])).reshape(c, 1, 1),
            np.dtype(dtype))
        self.shuffle, self.round_batch = bool(shuffle), bool(round_batch)
        self._seed = int(seed)
        self._seed_aug = int(seed if seed_aug is None else seed_aug)
        bs = self.batch_size
        label_shape = (bs,) if label_width == 1 else (bs, int(label_width))
        self.provide_data = [DataDesc(data_name, (bs,) + data_shape, np.dtype(dtype).type)]
        self.provide_label = [DataDesc(label_name, label_shape, np.float32)]
        self._pool = ThreadPoolExecutor(int(preprocess_threads),
                                        thread_name_prefix='ImageRecordIter')
        self._finalizer = weakref.finalize(self, self._pool.shutdown, wait=False,
                                           cancel_futures=True)
        self._depth = max(int(prefetch_buffer), int(preprocess_threads))
        self._pending = deque()
        self._epoch = -1
        self._current = None
        self._start_epoch(0, 0)

    # --- which records each batch holds ----------------------------------------

    def _order(self, k):
        """The order of the records in pass ``k`` over this part."""
        n = len(self._spec.offsets)
        return np.random.default_rng([self._seed, k]).permutation(n) \
            if self.shuffle else np.arange(n)

    def _start_epoch(self, k, pos):
        """Plan the epoch that begins at record ``pos`` of pass ``k``."""
        n, bs = len(self._spec.offsets), self.batch_size
        num_batches = -(-(n - pos) // bs)
        short = num_batches * bs - (n - pos)    # slots past this pass's end
        self._pass = k
        pieces, self._after = [self._order(k)[pos:]], (k + 1, 0)
        need = short if self.round_batch else 0
        while need:                             # from the next pass(es)
            k += 1
            pieces.append(self._order(k)[:need])
            need -= len(pieces[-1])
            self._after = (k, len(pieces[-1])) if len(pieces[-1]) < n else (k + 1, 0)
        if not self.round_batch:
            pieces.append(np.full(short, -1))
        self._rows = np.concatenate(pieces).reshape(num_batches, bs)
        self._pad = short
        self._epoch += 1
        self._submitted = self._served = 0
        self._submit()                          # decoding starts now

    def reset(self):
        if self._served == 0:
            return                              # this epoch has not begun
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._served == len(self._rows):
            self._start_epoch(*self._after)     # round_batch goes on from there
        else:                                   # stopped half way: a new pass
            self._start_epoch(self._pass + 1, 0)

    # --- reading ----------------------------------------------------------------

    def _submit(self):
        while len(self._pending) < self._depth and self._submitted < len(self._rows):
            b = self._submitted
            seed = [self._seed_aug, self._epoch, b]
            self._pending.append(self._pool.submit(_load_batch, self._spec,
                                                   self._rows[b], seed))
            self._submitted += 1

    def iter_next(self):
        if self._served == len(self._rows):
            return False
        future = self._pending.popleft()
        self._served += 1
        self._submit()
        data, label, ids = future.result()      # a damaged record raises here
        last = self._served == len(self._rows)
        self._current = DataBatch(
            data=[from_numpy(data)], label=[from_numpy(label)],
            pad=self._pad if last else 0, index=ids,
            provide_data=self.provide_data, provide_label=self.provide_label)
        return True

    def next(self):
        if not self.iter_next():
            raise StopIteration
        return self._current

    def _batch(self):
        if self._current is None:
            raise RuntimeError('ImageRecordIter: no current batch; call '
                               'iter_next() (or next()) first')
        return self._current

    def getdata(self):
        return self._batch().data[0]

    def getlabel(self):
        return self._batch().label[0]

    def getpad(self):
        return self._batch().pad

    def getindex(self):
        return self._batch().index

    def close(self):
        """Stop the decoding threads (the iterator is unusable afterwards)."""
        self._finalizer()


# === the worker's side: NumPy only ==============================================

def _load_batch(spec, rows, seed):
    """``(data, label, ids)`` as NumPy arrays for the records at ``rows``
    (indices into ``spec.offsets``; -1: a zero slot)."""
    rng = np.random.default_rng(seed)
    c, h, w = spec.data_shape
    pixels = np.zeros((len(rows), h, w, c), np.uint8)
    labels = np.zeros((len(rows), spec.label_width), np.float32)
    ids = np.full(len(rows), -1, np.int64)
    with open(spec.path, 'rb') as f:
        for j, row in enumerate(rows):
            if row >= 0:
                where = f'{spec.path}: the record at byte {spec.offsets[row]}'
                f.seek(spec.offsets[row])
                record = _read_record(f, spec.path)
                if record is None:
                    raise RecordIOError(f'{where}: the file ends there')
                try:
                    header, encoded = unpack(record)
                except RecordIOError as e:
                    raise RecordIOError(f'{where}: {e}') from None
                labels[j] = _label(header, spec.label_width, where)
                ids[j] = header.id
                pixels[j] = _augment(_decode(encoded, int(c == 3), 1, where), spec, rng)
    data = pixels.transpose(0, 3, 1, 2).astype(spec.dtype, order='C')
    if spec.dtype == np.float32:
        data -= spec.mean
        data *= spec.mult
        data[rows < 0] = 0
    return data, labels[:, 0] if spec.label_width == 1 else labels, ids


def _label(header, width, where):
    if header.flag > 0:
        if header.flag != width:
            raise ValueError(f'{where} holds {header.flag} labels but '
                             f'label_width is {width}')
        return header.label
    if width != 1:
        raise ValueError(f'{where} holds one label (in its header) but '
                         f'label_width is {width}')
    return header.label


def _interp(method, old_h, old_w, new_h, new_w, rng):
    if method == 10:                    # random, from this batch's generator
        return int(rng.integers(0, 5))
    return _get_interp_method(method, (old_h, old_w, new_h, new_w))


def _augment(img, spec, rng):
    """MXNet's default augmenter: resize, (enlarge,) crop, mirror."""
    _, h, w = spec.data_shape
    ih, iw = img.shape[:2]
    if spec.resize > 0:
        r = spec.resize
        nh, nw = (r * ih // iw, r) if ih > iw else (r, r * iw // ih)
        img = resize_hwc(img, nw, nh, _interp(spec.inter_method, ih, iw, nh, nw, rng))
        ih, iw = nh, nw
    method = _interp(spec.inter_method, ih, iw, h, w, rng)
    if ih < h:                          # enlarge to cover the crop, in float32
        ih, iw = h, int(np.float32(h) / np.float32(ih) * np.float32(iw))
        img = resize_hwc(img, iw, ih, method)
    if iw < w:
        ih, iw = int(np.float32(w) / np.float32(iw) * np.float32(ih)), w
        img = resize_hwc(img, iw, ih, method)
    y, x = ih - h, iw - w
    if spec.rand_crop:
        y, x = int(rng.integers(0, y + 1)), int(rng.integers(0, x + 1))
    else:
        y, x = y // 2, x // 2
    img = img[y:y + h, x:x + w]
    if spec.mirror or spec.rand_mirror and rng.random() < 0.5:
        img = img[:, ::-1]
    return img
