"""Two GPUs: every op runs on its tensors' device whichever device is
current (the kernels' device guard), and inputs on two devices get a clear
error. DDP over two GPUs: test_ddp.py."""

from __future__ import annotations

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

import kernforge
from conftest import close
from every_op import OPS, forward_backward, inputs, leaves
from kernforge import reference

pytestmark = [pytest.mark.cuda, pytest.mark.multi_gpu]


def _our_kernels(fn) -> list[tuple[str, int]]:
    """(name, device index) of every kernforge kernel `fn` launches."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
    return [
        (e.name, e.device_index)
        for e in prof.events()
        if e.device_type == DeviceType.CUDA and ("kernforge" in e.name or "RoundSTE" in e.name)
    ]


@pytest.mark.parametrize("current,target", [(0, 1), (1, 0)])
@pytest.mark.parametrize("op", OPS)
def test_runs_on_the_tensors_device(op, current, target):
    gen = torch.Generator(device=f"cuda:{target}").manual_seed(0)
    args = inputs(op, gen, device=f"cuda:{target}")
    expected = forward_backward(reference, op, leaves(args))
    with torch.cuda.device(current):
        forward_backward(kernforge, op, leaves(args))  # warm-up: cuBLAS handles, profiler
        got = []
        kernels = _our_kernels(lambda: got.extend(forward_backward(kernforge, op, leaves(args))))
        assert torch.cuda.current_device() == current, "the op left another device current"
    assert kernels, "the profiler saw no kernforge kernel"
    assert {device for _, device in kernels} == {target}, kernels
    for g, e in zip(got, expected, strict=True):
        assert g.device == torch.device("cuda", target)
        close(g, e, rtol=1e-4, atol=1e-4)


MIXED = {
    "mul": lambda a, b: kernforge.mul(a, b),
    "add": lambda a, b: kernforge.add(a, b),
    "fused_relu_add": lambda a, b: kernforge.fused_relu_add(a, b),
    "fused_relu_add bias": lambda a, b: kernforge.fused_relu_add(a, a.clone(), b[0]),
}


@pytest.mark.parametrize("case", MIXED)
def test_mixed_devices_are_refused(case):
    a = torch.randn(4, 5, device="cuda:0")
    b = torch.randn(4, 5, device="cuda:1")
    with pytest.raises(RuntimeError, match="expected all tensors on one device") as info:
        MIXED[case](a, b)
    assert "cuda:0" in str(info.value) and "cuda:1" in str(info.value)


@pytest.mark.parametrize("moved", ["x", "W", "b", "h", "c"])
def test_lltm_mixed_devices_are_refused(moved):
    gen = torch.Generator(device="cuda:0").manual_seed(2)
    args = dict(zip("x W b h c".split(), inputs("lltm", gen, device="cuda:0"), strict=True))
    args[moved] = args[moved].to("cuda:1")
    with pytest.raises(RuntimeError, match="expected all tensors on one device") as info:
        kernforge.lltm(*args.values())
    assert "cuda:1" in str(info.value)
