"""The CPU loops (elementwise, the LLTM's gate passes, a few rows' steps) are compiled for
baseline x86-64, AVX2 and AVX-512, and the widest one the CPU has runs. As for
torch's own kernels, ATEN_CPU_CAPABILITY caps the choice ("default", "avx2").
The rest of the suite runs the widest; here the CPU tests that compare with
the references run again in a subprocess under each cap, so that every clone
this machine can run is checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
TESTS = [
    "test_elementwise.py::test_forward_matches_reference",
    "test_elementwise.py::test_add_integers",
    "test_elementwise.py::test_large_vectorized_with_tail",
    "test_elementwise.py::test_nan_propagates_like_torch",
    "test_elementwise.py::test_backward_matches_reference",
    "test_lltm.py::test_forward_and_gradients_match_reference",
    "test_lltm.py::test_non_contiguous_inputs",
    "test_lltm.py::test_backward_reads_strided_gradients_in_place",
    "test_lltm.py::test_cpu_bias_gradient_is_the_same_for_any_thread_count",
    "test_lltm_sequence.py::test_cpu_few_rows_equal_the_reference_on_any_number_of_threads",
]


@pytest.mark.parametrize("capability", ["default", "avx2"])
def test_reference_tests_pass_on_each_instruction_set(capability):
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "cpu"]
    run = subprocess.run(
        cmd + [str(HERE / t) for t in TESTS], cwd=HERE.parent, env=env, capture_output=True, text=True
    )
    tail = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, tail
    assert " passed" in run.stdout and "failed" not in run.stdout, tail
