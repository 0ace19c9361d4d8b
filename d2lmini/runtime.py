"""``mx.runtime``: which of MXNet's build features this d2lmini has.

MXNet reports the options its native library was compiled with; d2lmini
has no native library, so each answer says what the package can do here.

>>> mx.runtime.Features().is_enabled('INT64_TENSOR_SIZE')
True
"""
import collections

from . import backend

__all__ = ['Feature', 'Features', 'feature_list']

# MXNet 1.9.1's feature names, in its order.
_NAMES = ('CUDA', 'CUDNN', 'NCCL', 'CUDA_RTC', 'TENSORRT', 'CPU_SSE', 'CPU_SSE2',
          'CPU_SSE3', 'CPU_SSE4_1', 'CPU_SSE4_2', 'CPU_SSE4A', 'CPU_AVX', 'CPU_AVX2',
          'OPENMP', 'SSE', 'F16C', 'JEMALLOC', 'BLAS_OPEN', 'BLAS_ATLAS', 'BLAS_MKL',
          'BLAS_APPLE', 'LAPACK', 'MKLDNN', 'OPENCV', 'CAFFE', 'PROFILER',
          'DIST_KVSTORE', 'CXX14', 'INT64_TENSOR_SIZE', 'SIGNAL_HANDLER', 'DEBUG',
          'TVM_OP')


class Feature(collections.namedtuple('Feature', ['name', 'enabled'])):
    """One feature: its ``name`` and whether it is ``enabled``."""

    def __repr__(self):
        return ('✔ ' if self.enabled else '✖ ') + self.name


def _enabled(name):
    if name == 'CUDA':
        return backend.num_gpus() > 0         # CuPy installed and a GPU present
    # NumPy indexes with 64-bit integers: arrays may exceed 2**31 elements.
    return name == 'INT64_TENSOR_SIZE'


def feature_list():
    """Every feature, as a list of :class:`Feature`."""
    return [Feature(n, _enabled(n)) for n in _NAMES]


class Features(collections.OrderedDict):
    """The features by name (``Features()['CUDA'].enabled``)."""

    def __init__(self):
        super().__init__((f.name, f) for f in feature_list())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` is enabled; an unknown name raises."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{feature_name}' is unknown, known features "
                               f"are: {list(self.keys())}")
        return self[name].enabled
