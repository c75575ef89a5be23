"""kernforge: fast custom PyTorch operators in C++ and CUDA.

``kernforge.mul``, ``kernforge.add``, ``kernforge.fused_relu_add``,
``kernforge.lltm``, ``kernforge.lltm_sequence`` and ``kernforge.round_ste`` are the functional ops
(:mod:`kernforge.functional`); :mod:`kernforge.nn` has the modules and
:mod:`kernforge.reference` the pure-PyTorch implementations.
"""

from . import functional, nn, reference
from .functional import (
    add,
    fused_relu_add,
    lltm,
    lltm_sequence,
    mul,
    round_ste,
)

__version__ = "0.1.0"

__all__ = [
    "add",
    "functional",
    "fused_relu_add",
    "lltm",
    "lltm_sequence",
    "mul",
    "nn",
    "reference",
    "round_ste",
]
