"""Pack images into a RecordIO file: MXNet's ``tools/im2rec.py``.

Two steps, with MXNet's arguments::

    # 1. list: one line "index<TAB>label<TAB>path" per image, one label per
    #    folder (--recursive), shuffled with MXNet's seed unless --no-shuffle
    python -m d2lmini.tools.im2rec --list --recursive data/pets data/pets/
    # 2. pack every data/pets*.lst into .rec + .idx, images re-encoded as
    #    JPEG with the shorter edge 256 (or --pass-through: the bytes as they are)
    python -m d2lmini.tools.im2rec --resize 256 --num-thread 2 data/pets data/pets/

``--train-ratio`` / ``--test-ratio`` (and ``--chunks``) split the list into
``_train``, ``_val``, ``_test`` lists, as MXNet does.  An image that cannot
be read is reported and left out; a malformed ``.lst`` line is an error.
Records are written in the order of the list whatever ``--num-thread`` is
(threads, where MXNet uses processes), to ``.tmp`` files renamed at the end,
so a failed run leaves no half-written ``.rec``.
"""
import argparse
import os
import random
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from .. import recordio
from ..base import MXNetError
from ..image.resize import resize_hwc

__all__ = ['list_image', 'write_list', 'make_list', 'read_list', 'pack_list', 'main']


def list_image(root, recursive, exts):
    """``(index, path relative to root, label)`` per image under ``root``;
    with ``recursive``, each folder (in sorted walk order) is one label."""
    i, labels = 0, {}
    if not recursive:
        walk = [(root, None, sorted(os.listdir(root)))]
    else:
        walk = os.walk(root, followlinks=True)
    for path, dirs, files in walk:
        if dirs is not None:
            dirs.sort()
        for fname in sorted(files):
            fpath = os.path.join(path, fname)
            if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                label = labels.setdefault(path, len(labels)) if recursive else 0
                yield i, os.path.relpath(fpath, root), label
                i += 1
    for path, label in labels.items():
        print(os.path.relpath(path, root), label)


def write_list(path_out, image_list):
    """Write ``(index, path, label, ...)`` items as MXNet's ``.lst`` lines."""
    with open(path_out, 'w') as f:
        for item in image_list:
            labels = ''.join(f'{x:f}\t' for x in item[2:])
            f.write(f'{item[0]}\t{labels}{item[1]}\n')


def make_list(prefix, root, recursive=False, exts=('.jpeg', '.jpg', '.png'),
              shuffle=True, chunks=1, train_ratio=1.0, test_ratio=0.0):
    """Write ``prefix.lst`` (or ``prefix[_i]_train/_val/_test.lst``) for the
    images under ``root``; returns the paths written."""
    image_list = list(list_image(root, recursive, tuple(exts)))
    if not image_list:
        raise MXNetError(f'im2rec: no images with extensions {list(exts)} in {root}'
                         + ('' if recursive else ' (its subfolders need --recursive)'))
    if shuffle:
        random.seed(100)                         # MXNet's, for the same order
        random.shuffle(image_list)
    size = (len(image_list) + chunks - 1) // chunks
    written = []
    for c in range(chunks):
        chunk = image_list[c * size:(c + 1) * size]
        base = prefix + (f'_{c}' if chunks > 1 else '')
        n_train, n_test = int(size * train_ratio), int(size * test_ratio)
        parts = [('', chunk)] if train_ratio == 1.0 else \
            [('_test', chunk[:n_test])] * bool(test_ratio) + \
            [('_val', chunk[n_test + n_train:])] * (train_ratio + test_ratio < 1.0) + \
            [('_train', chunk[n_test:n_test + n_train])]
        for suffix, items in parts:
            write_list(base + suffix + '.lst', items)
            written.append(base + suffix + '.lst')
    return written


def read_list(path):
    """``[index, path, label, ...]`` per line of the ``.lst`` file ``path``."""
    with open(path) as f:
        for number, line in enumerate(f, 1):
            fields = [x.strip() for x in line.strip().split('\t')]
            if fields == ['']:
                continue
            try:
                if len(fields) < 3:
                    raise ValueError('it has fewer than 3 fields')
                yield [int(fields[0]), fields[-1]] + [float(x) for x in fields[1:-1]]
            except ValueError as e:
                raise MXNetError(f"im2rec: {path}, line {number}: expected "
                                 f"'index<TAB>label(s)<TAB>path', got {line.strip()!r} "
                                 f'({e})') from None


def _encode(item, root, pass_through, resize, center_crop, quality, color,
            encoding, pack_label):
    """``(item, record or None, problem)`` for one ``.lst`` item."""
    label = item[2:] if len(item) > 3 and pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    path = os.path.join(root, item[1])
    try:
        with open(path, 'rb') as f:
            raw = f.read()
        if pass_through:
            return item, recordio.pack(header, raw), None
        img = recordio._imdecode(raw, color, path)
        h, w = img.shape[:2]
        if center_crop:
            m = abs(h - w) // 2
            img = img[m:m + w] if h > w else img[:, m:m + h]
            h, w = img.shape[:2]
        if resize:
            nw, nh = (resize, h * resize // w) if h > w else (w * resize // h, resize)
            img = resize_hwc(img if img.ndim == 3 else img[:, :, None], nw, nh, 1)
        return item, recordio.pack_img(header, img, quality, encoding), None
    except (OSError, ValueError, MXNetError) as e:
        return item, None, str(e)


def _in_order(fn, items, threads):
    """``map(fn, items)`` on ``threads`` threads, in order, a bounded window
    of work ahead."""
    if threads <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(threads) as pool:
        window = deque()
        for item in items:
            window.append(pool.submit(fn, item))
            if len(window) >= 4 * threads:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def _progress(total, name):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit='img', desc=name, disable=None)  # None: off unless a tty


def pack_list(lst_path, root, num_thread=1, **options):
    """Pack the images of ``lst_path`` into ``.rec`` + ``.idx`` beside it;
    returns ``(packed, skipped)`` counts.  ``options``: ``pass_through``,
    ``resize``, ``center_crop``, ``quality``, ``color``, ``encoding``,
    ``pack_label`` (the command line's)."""
    opts = dict(pass_through=False, resize=0, center_crop=False, quality=95,
                color=1, encoding='.jpg', pack_label=False)
    unknown = set(options) - set(opts)
    if unknown:
        raise TypeError(f'pack_list: unknown options {sorted(unknown)}')
    opts.update(options)
    items = list(read_list(lst_path))
    base = os.path.splitext(lst_path)[0]
    rec = recordio.MXIndexedRecordIO(base + '.idx.tmp', base + '.rec.tmp', 'w')
    bar = _progress(len(items), os.path.basename(base))
    packed = skipped = 0
    try:
        for item, record, problem in _in_order(
                lambda item: _encode(item, root, **opts), items, num_thread):
            if record is None:
                print(f'im2rec: skipping {item[1]}: {problem}', file=sys.stderr)
                skipped += 1
            else:
                rec.write_idx(item[0], record)
                packed += 1
            if bar is not None:
                bar.update()
    except BaseException:
        rec.close()
        for tmp in (base + '.idx.tmp', base + '.rec.tmp'):
            os.remove(tmp)
        raise
    finally:
        if bar is not None:
            bar.close()
    rec.close()
    os.replace(base + '.rec.tmp', base + '.rec')
    os.replace(base + '.idx.tmp', base + '.idx')
    return packed, skipped


def _parse(argv):
    p = argparse.ArgumentParser(
        prog='python -m d2lmini.tools.im2rec',
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description='Make an image list (--list), or pack the images of the '
                    'lists <prefix>*.lst into <prefix>*.rec + .idx.')
    p.add_argument('prefix', help='prefix of the .lst, .rec and .idx files')
    p.add_argument('root', help='folder holding the images')
    g = p.add_argument_group('making lists')
    g.add_argument('--list', action='store_true',
                   help='make <prefix>.lst from the images under root')
    g.add_argument('--exts', nargs='+', default=['.jpeg', '.jpg', '.png'],
                   help='image extensions to list')
    g.add_argument('--chunks', type=int, default=1, help='number of lists')
    g.add_argument('--train-ratio', type=float, default=1.0,
                   help='share of the images in the _train list')
    g.add_argument('--test-ratio', type=float, default=0.0,
                   help='share of the images in the _test list')
    g.add_argument('--recursive', action='store_true',
                   help='walk the subfolders, one label per folder')
    g.add_argument('--no-shuffle', dest='shuffle', action='store_false',
                   help='keep the sorted order')
    g = p.add_argument_group('packing')
    g.add_argument('--pass-through', action='store_true',
                   help='store the image files as they are')
    g.add_argument('--resize', type=int, default=0,
                   help='resize the shorter edge to this many pixels (0: keep)')
    g.add_argument('--center-crop', action='store_true',
                   help='crop the centred square first')
    g.add_argument('--quality', type=int, default=95,
                   help='JPEG quality 1-100, or PNG compression 0-9')
    g.add_argument('--num-thread', type=int, default=1,
                   help='threads that decode and encode')
    g.add_argument('--color', type=int, default=1, choices=[-1, 0, 1],
                   help='1: colour, 0: gray, -1: as stored (with alpha)')
    g.add_argument('--encoding', default='.jpg', choices=['.jpg', '.png'],
                   help='how to encode the images')
    g.add_argument('--pack-label', action='store_true',
                   help='store every label of a multi-label list')
    args = p.parse_args(argv)
    args.prefix, args.root = os.path.abspath(args.prefix), os.path.abspath(args.root)
    return p, args


def main(argv=None):
    """The command line; returns the exit status."""
    parser, args = _parse(argv)
    if not os.path.isdir(args.root):
        parser.error(f'root {args.root} is not a folder')
    try:
        if args.list:
            for path in make_list(args.prefix, args.root, args.recursive, args.exts,
                                  args.shuffle, args.chunks, args.train_ratio,
                                  args.test_ratio):
                print('wrote', path)
            return 0
        folder = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
        lists = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                       if os.path.join(folder, f).startswith(args.prefix) and f.endswith('.lst'))
        if not lists:
            parser.error(f'no list {args.prefix}*.lst: make one with --list first')
        for lst in lists:
            packed, skipped = pack_list(
                lst, args.root, args.num_thread, pass_through=args.pass_through,
                resize=args.resize, center_crop=args.center_crop,
                quality=args.quality, color=args.color, encoding=args.encoding,
                pack_label=args.pack_label)
            print(f'{os.path.splitext(lst)[0]}.rec: {packed} images'
                  + (f', {skipped} skipped (see above)' if skipped else ''))
    except (MXNetError, OSError) as e:
        print(f'im2rec: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
