"""What several test files share: the optional PyTorch oracle and the
NumPy form of MXNet's gradient clipping.

Test files import from here (``from oracles import needs_torch, torch``);
pytest puts ``tests/`` on ``sys.path``, as this folder is no package.
"""
import numpy as np
import pytest

try:
    import torch
    import torch.nn.functional as tF
except ImportError:                       # pragma: no cover - optional oracle
    torch = tF = None

needs_torch = pytest.mark.skipif(torch is None, reason='PyTorch is not installed')


def clip(g, c):
    """``g`` clipped to ``[-c, c]`` (MXNet's ``clip_gradient``); None: as is."""
    return g if c is None else np.clip(g, -c, c)
