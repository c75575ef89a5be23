"""Every op's forward and backward give bitwise identical results run to
run (docs/hardening.md, "Determinism", says what that rests on); on the CPU
the elementwise ops also do not depend on the number of threads."""

from __future__ import annotations

import pytest
import torch

import kernforge
from conftest import DEVICES
from every_op import OPS, forward_backward, inputs, leaves

DTYPES = [torch.float32, torch.bfloat16]


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The raw bits of `t` (so that equal NaNs, and only they, compare equal)."""
    return t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)


def _assert_bitwise_equal(first: list[torch.Tensor], again: list[torch.Tensor]) -> None:
    for index, (a, b) in enumerate(zip(first, again, strict=True)):
        assert torch.equal(_bits(a), _bits(b)), f"result {index} differs between two identical runs"


@pytest.mark.parametrize("device", DEVICES)
# Under nox -s sanitize: the small sizes (the LLTM's fused kernels, one block
# of bias partials); the large ones are cuBLAS's GEMMs and many partial sums.
@pytest.mark.parametrize(
    "large", [pytest.param(False, marks=pytest.mark.sanitize), True], ids=["small", "large"]
)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).removeprefix("torch."))
# racecheck reads every shared-memory access: minutes for a sequence op's
# four runs, which the other tools and its own three-step tests cover
@pytest.mark.parametrize(
    "op", [pytest.param(op, marks=pytest.mark.long_for_racecheck) if "sequence" in op else op for op in OPS]
)
def test_run_to_run_bitwise(device, op, dtype, large):
    gen = torch.Generator(device=device).manual_seed(0)
    args = inputs(op, gen, device=device, dtype=dtype, large=large)
    first = forward_backward(kernforge, op, leaves(args))
    for _ in range(3):
        _assert_bitwise_equal(first, forward_backward(kernforge, op, leaves(args)))


@pytest.mark.parametrize("op", [op for op in OPS if not op.startswith("lltm")])  # the LLTMs' GEMMs are BLAS's
def test_cpu_results_do_not_depend_on_thread_count(op):
    gen = torch.Generator().manual_seed(1)
    args = inputs(op, gen, device="cpu", large=True)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = forward_backward(kernforge, op, leaves(args))
    finally:
        torch.set_num_threads(threads)
    torch.set_num_threads(max(threads, 2))
    try:
        _assert_bitwise_equal(one, forward_backward(kernforge, op, leaves(args)))
    finally:
        torch.set_num_threads(threads)
