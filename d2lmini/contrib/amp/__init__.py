"""``mx.contrib.amp``: automatic mixed precision (MXNet's ``contrib/amp``).

* :mod:`.amp`: ``init``, ``init_trainer``, ``scale_loss``, ``unscale`` and
  the ``list_*`` functions: training in mixed precision;
* :mod:`.loss_scaler`: dynamic loss scaling;
* :mod:`.wrap`: how ``init`` makes the operators cast their inputs;
* :mod:`.convert`: ``convert_symbol``, ``convert_model``,
  ``convert_hybrid_block``: a trained network rewritten for inference;
* :mod:`.lists`: which operators are float16, float32 or widest-type.
"""
from . import lists
from .amp import *                    # noqa: F401,F403
from .amp import __all__ as _amp_all
from .amp import _reset              # noqa: F401 - for tests: undo init()
from .convert import AMPError, convert_hybrid_block, convert_model, convert_symbol
from .loss_scaler import LossScaler

__all__ = _amp_all + ['convert_hybrid_block', 'convert_model', 'convert_symbol',
                      'LossScaler', 'AMPError', 'lists']
