"""``ParameterDict``: a Block's parameters by name, with the prefix that
names them, and the checked loading of a ``.params`` file into them
(``load_checked``: every problem reported at once, nothing changed unless
the whole file fits).

Examples
--------
>>> pd = gluon.ParameterDict('net_')
>>> pd.get('weight', shape=(2, 3)).name
'net_weight'
"""
import collections
import inspect

import numpy as np

from .. import initializer
from .. import ndarray as nd
from .parameter import Constant, Parameter, _brief

__all__ = ['ParameterDict']

_PARAMETER_KWARGS = frozenset(inspect.signature(Parameter.__init__).parameters) - {
    'self', 'name'}


class ParameterDict:
    """An ordered dict name -> :class:`Parameter`, with a name ``prefix``.

    ``get(name, ...)`` creates ``prefix + name`` (or returns the existing or
    shared one); ``initialize``, ``zero_grad``, ``reset_ctx`` and ``setattr``
    apply to every parameter in it.
    """

    def __init__(self, prefix='', shared=None):
        self._prefix = prefix
        self._params = collections.OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + ' ' if self._prefix else ''
        body = '\n'.join(f'  {v}' for v in self.values())
        return f'{name}(\n{body}\n)'

    def __getitem__(self, key):
        try:
            return self._params[key]
        except KeyError:
            raise KeyError(f'no parameter {key!r}; the dict holds '
                           f'{_brief(self._params)}') from None

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        """The ``(name, Parameter)`` pairs, in creation order."""
        return self._params.items()

    def keys(self):
        """The full parameter names, in creation order."""
        return self._params.keys()

    def values(self):
        """The Parameters, in creation order."""
        return self._params.values()

    @property
    def prefix(self):
        """The prefix that :meth:`get` puts before each new name."""
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter ``prefix + name``: found (here or shared) or created.

        Attributes in ``kwargs`` must agree with an existing parameter's;
        unknown (0) dimensions of its shape are filled in.
        """
        bad = sorted(set(kwargs) - _PARAMETER_KWARGS)
        if bad:
            raise TypeError(f'ParameterDict.get({name!r}): unknown argument(s) {bad}; '
                            f'a Parameter takes {sorted(_PARAMETER_KWARGS)}')
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if k in ('allow_deferred_init', 'differentiable', 'stype', 'grad_stype'):
                continue            # fixed when the Parameter was created
            existing = getattr(param, k, None)
            if existing is None:
                setattr(param, k, v)
                continue
            if k == 'shape':
                v = (v,) if isinstance(v, int) else tuple(v)
                if len(v) == len(existing) and all(
                        a == b or a <= 0 or b <= 0 for a, b in zip(v, existing)):
                    param._shape = tuple(b if a <= 0 else a for a, b in zip(v, existing))
                    continue
            elif k == 'dtype' and np.dtype(v) == np.dtype(existing):
                continue
            if v is not None and v != existing:
                raise ValueError(f'cannot retrieve Parameter {name!r}: {k}={v!r} was '
                                 f'asked but the stored one has {k}={existing!r}')
        return param

    def get_constant(self, name, value=None):
        """The Constant ``prefix + name`` (created from ``value`` if new)."""
        name = self._prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f'no constant {name!r}; give a value to create it')
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            if not isinstance(param, Constant):
                raise TypeError(f'{name!r} is a Parameter, not a Constant')
            value = value.asnumpy() if isinstance(value, nd.NDArray) else \
                np.asarray(value)
            if param.shape != value.shape or \
                    not (param.value.asnumpy() == value).all():
                raise ValueError(f'Constant {name!r} already exists with another '
                                 f'value (shape {param.shape}); give no value to '
                                 f'retrieve it')
        return param

    def update(self, other):
        """Add ``other``'s parameters; a name may not map to two different ones."""
        for k, v in other.items():
            if k in self._params and self._params[k] is not v:
                raise ValueError(f'cannot update: two different Parameters are named '
                                 f'{k!r}')
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialize every parameter (each one's own ``init`` wins over ``init``)."""
        init = initializer.create(init)
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        """Set the gradients of every parameter to 0."""
        for v in self.values():
            v.zero_grad()

    def reset_ctx(self, ctx):
        """Move every parameter's data to ``ctx`` (a Context or a list)."""
        for v in self.values():
            v.reset_ctx(ctx)

    def list_ctx(self):
        """Every context that some parameter lives on, each once."""
        out = []
        for v in self.values():
            out.extend(c for c in v.list_ctx() if c not in out)
        return out

    def setattr(self, name, value):
        """``setattr(p, name, value)`` for every parameter, e.g. grad_req."""
        for v in self.values():
            setattr(v, name, value)

    def save(self, filename, strip_prefix=''):
        """Save the values under their full names (less ``strip_prefix``)."""
        arrays = {}
        for p in self.values():
            if not p.name.startswith(strip_prefix):
                raise ValueError(f'cannot strip prefix {strip_prefix!r} from '
                                 f'parameter {p.name!r}')
            arrays[p.name[len(strip_prefix):]] = p._reduce()
        nd.save(filename, arrays)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix='', cast_dtype=False, dtype_source='current'):
        """Load what :meth:`save` (or MXNet's) wrote; names get ``restore_prefix``
        back.  With ``cast_dtype``, ``dtype_source='saved'`` gives the
        Parameters the file's dtypes, ``'current'`` keeps theirs."""
        for name in self.keys():
            if not name.startswith(restore_prefix):
                raise ValueError(f'restore_prefix {restore_prefix!r} does not match '
                                 f'parameter {name!r}')
        self.load_dict(_load_dict(filename), ctx, allow_missing, ignore_extra,
                       restore_prefix, filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix='', filename=None, cast_dtype=False,
                  dtype_source='current'):
        """Load a dict name -> NDArray (``arg:``/``aux:`` prefixes dropped).

        With ``cast_dtype=True`` the values are converted to the parameters'
        dtypes (``dtype_source='current'``) or the parameters take the
        values' dtypes (``'saved'``).
        """
        if dtype_source not in ('current', 'saved'):
            raise ValueError(f"dtype_source must be 'current' or 'saved', got "
                             f"{dtype_source!r}")
        loaded = {restore_prefix + (k[4:] if k.startswith(('arg:', 'aux:')) else k): v
                  for k, v in param_dict.items()}
        if cast_dtype and dtype_source == 'saved':
            for k, arr in loaded.items():
                if k in self._params:
                    self._params[k].cast(arr.dtype)
        load_checked(loaded, dict(self.items()), filename or 'param_dict', ctx,
                     allow_missing, ignore_extra, cast_dtype)


def _load_dict(filename):
    loaded = nd.load(filename)
    if isinstance(loaded, list) and not loaded:
        loaded = {}                         # MXNet's format: no arrays, no names
    if not isinstance(loaded, dict):
        raise ValueError(f'{filename}: holds a list of arrays, not named parameters')
    return loaded


def load_checked(loaded, params, source, ctx=None, allow_missing=False,
                 ignore_extra=False, cast_dtype=False):
    """Load ``loaded`` (name -> NDArray) into ``params`` (name -> Parameter).

    Everything is checked first and all problems are reported together
    (missing names, extra names, shape and dtype mismatches); nothing is
    changed unless the whole file fits.  A Parameter listed under several
    names (shared) counts as present if any of them is in the file.
    """
    names_of = collections.defaultdict(list)
    for k, p in params.items():
        names_of[id(p)].append(k)
    missing = [k for k, p in params.items()
               if not any(n in loaded for n in names_of[id(p)])]
    extra = [k for k in loaded if k not in params]
    shapes, dtypes = [], []
    for k, arr in loaded.items():
        p = params.get(k)
        if p is None:
            continue
        want = p.shape
        if want and not (len(want) == len(arr.shape) and all(
                w <= 0 or w == a for w, a in zip(want, arr.shape))):
            shapes.append(f'{k}: model {want} vs file {tuple(arr.shape)}')
        if not cast_dtype and np.dtype(arr.dtype) != np.dtype(p.dtype):
            dtypes.append(f'{k}: model {np.dtype(p.dtype).name} vs file '
                          f'{np.dtype(arr.dtype).name}')
    problems = []
    if missing and not allow_missing:
        problems.append(f'missing from the file: {_brief(missing)} '
                        f'(allow_missing=True keeps their current values)')
    if extra and not ignore_extra:
        problems.append(f'in the file but not in the model: {_brief(extra)} '
                        f'(ignore_extra=True skips them)')
    if shapes:
        problems.append('shape mismatches: ' + '; '.join(shapes))
    if dtypes:
        problems.append('dtype mismatches: ' + '; '.join(dtypes) +
                        ' (cast_dtype=True converts)')
    if problems:
        raise ValueError(f"cannot load parameters from '{source}':\n  - " +
                         '\n  - '.join(problems) +
                         f'\n  the model has {_brief(params)}; the file has '
                         f'{_brief(loaded)}')
    for k, arr in loaded.items():
        if k in params:
            params[k]._load_init(arr, ctx, cast_dtype=cast_dtype)

