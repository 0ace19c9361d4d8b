"""How many bytes a file may make d2lmini allocate when it is loaded.

A compressed file can hold far more than its size: 796 KiB of deflated
zeros are 800 MB once inflated (a "zip bomb").  So every loader that
decompresses reads the size the file *declares* first, and refuses a file
that would decode to more than the load limit, before it allocates
anything:

* ``nd.load`` of d2lmini's legacy ``.npz`` files (and so
  ``load_parameters``, ``Trainer.load_states``, checkpoints): the zip
  members' declared sizes, and each ``.npy`` header's shape and dtype;
* the gzip-compressed IDX files of Fashion-MNIST: the IDX header's
  dimensions;
* ``mx.io.CSVIter`` on a ``.gz``, ``.bz2`` or ``.xz`` file (which NumPy
  inflates by its extension): compressed text declares no size, so it is
  counted as it is read, and reading stops at the limit.

The limit is ``MAX_LOAD_BYTES`` (4 GiB), or the environment variable
``D2LMINI_MAX_LOAD_BYTES`` when it is set (a number of bytes, or with a
binary suffix: ``16G``, ``512M``)::

    $ D2LMINI_MAX_LOAD_BYTES=16G python train.py

A file far under that limit can still be a bomb: the issue that brought
this module in found an 800 MB one of 796 KiB.  So while
``D2LMINI_MAX_LOAD_BYTES`` is unset, a compressed input that declares more
than ``BOMB_FLOOR`` (256 MiB) must also declare at most ``BOMB_RATIO``
(100) times its compressed size.  Real weights hardly compress (float32
noise: about 1.1 times); only long runs of one value, such as zeros, reach
the hundreds.  Setting the variable says how much you trust your files,
and turns this second rule off.

Formats stored uncompressed need no such limit, because what a file
declares is checked against the bytes it really holds: an array in MXNet's
``.params`` format whose shape asks for more bytes than are left in the
file is refused, so a load never allocates much more than the file's own
size.  Symbol JSON files are bounded the same way (see
:func:`d2lmini.symbol.load_json`).

>>> check_load_size('big.npz', 800 * 10**6, 'its arrays')   # under 4 GiB: fine
>>> check_load_size('bomb.npz', 800 * 10**6, 'its arrays', stored=815_000)
Traceback (most recent call last):
...
d2lmini.limits.LoadLimitError: bomb.npz: its arrays would decode to 800,000,000 bytes (762.9 MiB) from 815,000 compressed bytes, 982 times more; ...
"""
import os
import re

from .base import MXNetError

__all__ = ['MAX_LOAD_BYTES', 'BOMB_FLOOR', 'BOMB_RATIO', 'ENV_VAR', 'LoadLimitError', 'max_load_bytes',
           'check_load_size']

MAX_LOAD_BYTES = 4 << 30        # 4 GiB: a Fashion-MNIST split is 47 MB
BOMB_FLOOR = 256 << 20          # beyond this, a compressed input must not
BOMB_RATIO = 100                # declare more than 100 x its stored size
ENV_VAR = 'D2LMINI_MAX_LOAD_BYTES'
_SUFFIX = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}


class LoadLimitError(MXNetError, ValueError):
    """A file that would decode to more bytes than the load limit allows."""


def max_load_bytes():
    """The limit now: ``$D2LMINI_MAX_LOAD_BYTES`` if set, else ``MAX_LOAD_BYTES``."""
    value = os.environ.get(ENV_VAR, '').strip()
    if not value:
        return MAX_LOAD_BYTES
    m = re.fullmatch(r'(\d+)\s*([KMGT]?)(?:i?B)?', value, re.IGNORECASE)
    if m is None:
        raise ValueError(f'{ENV_VAR}={value!r}: use a number of bytes, such as '
                         f'8589934592 or 8G (binary suffixes K, M, G, T)')
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def _human(n):
    for unit, size in (('TiB', 1 << 40), ('GiB', 1 << 30), ('MiB', 1 << 20),
                       ('KiB', 1 << 10)):
        if n >= size:
            return f'{n / size:.1f} {unit}'
    return f'{n} bytes'


def check_load_size(source, declared, what, at_least=False, stored=None):
    """Raise :class:`LoadLimitError` if ``declared`` bytes exceed the limit.

    ``source`` names the file, ``what`` the part of it that declares the
    size (``'its 3 arrays'``).  Call it before allocating.  A stream that
    declares no size is checked as it is read: ``at_least=True`` says that
    ``declared`` bytes were decoded so far.  ``stored``: the compressed
    bytes that decode to ``declared`` (for the ratio rule).
    """
    limit = max_load_bytes()
    if stored is not None and not os.environ.get(ENV_VAR, '').strip() and \
            declared > BOMB_FLOOR and declared > BOMB_RATIO * max(stored, 1):
        raise LoadLimitError(
            f'{source}: {what} would decode to {declared:,} bytes '
            f'({_human(declared)}) from {stored:,} compressed bytes, '
            f'{declared / max(stored, 1):,.0f} times more; beyond '
            f'{_human(BOMB_FLOOR)} at most {BOMB_RATIO} times is allowed, '
            f'so nothing was loaded. Real weights hardly compress: this file '
            f'is likely damaged or malicious. If you trust it, set '
            f'{ENV_VAR} (e.g. {ENV_VAR}={-(-declared // (1 << 30))}G), which '
            f'also turns this check off.')
    if declared <= limit:
        return
    need = -(-declared // (1 << 30))                 # whole GiB, rounded up
    more = 'at least ' if at_least else ''
    raise LoadLimitError(
        f'{source}: {what} would decode to {more}{declared:,} bytes '
        f'({_human(declared)}), '
        f'more than the load limit of {limit:,} bytes ({_human(limit)}); nothing '
        f'was loaded. A small compressed file that declares that much is '
        f'likely damaged or malicious. If you trust this file, raise the limit: '
        f'set the environment variable {ENV_VAR} (e.g. {ENV_VAR}={need}G), or '
        f'd2lmini.limits.MAX_LOAD_BYTES in your program.')
