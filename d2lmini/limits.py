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

Formats stored uncompressed need no such limit, because what a file
declares is checked against the bytes it really holds: an array in MXNet's
``.params`` format whose shape asks for more bytes than are left in the
file is refused, so a load never allocates much more than the file's own
size.  Symbol JSON files are bounded the same way (see
:func:`d2lmini.symbol.load_json`).

>>> check_load_size('bomb.npz', 800 * 10**6, 'its arrays')   # under 4 GiB: fine
"""
import os
import re

from .base import MXNetError

__all__ = ['MAX_LOAD_BYTES', 'ENV_VAR', 'LoadLimitError', 'max_load_bytes',
           'check_load_size']

MAX_LOAD_BYTES = 4 << 30        # 4 GiB: a Fashion-MNIST split is 47 MB
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


def check_load_size(source, declared, what, at_least=False):
    """Raise :class:`LoadLimitError` if ``declared`` bytes exceed the limit.

    ``source`` names the file, ``what`` the part of it that declares the
    size (``'its 3 arrays'``).  Call it before allocating.  A stream that
    declares no size is checked as it is read: ``at_least=True`` says that
    ``declared`` bytes were decoded so far.
    """
    limit = max_load_bytes()
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
