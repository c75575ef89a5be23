"""Two GPUs: every op runs on its tensors' device whichever device is
current (the kernels' device guard), inputs on two devices get a clear
error, and a model holding an LLTMSequence runs under nn.DataParallel. DDP
over two GPUs: test_ddp.py."""

from __future__ import annotations

import pytest
import torch
from torch.autograd import DeviceType
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
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


class _Tagger(torch.nn.Module):
    """As NLP code runs under nn.DataParallel: each replica packs its share
    of the batch (lengths scattered with it) and pads back to the batch's
    full length, which DataParallel's gather needs."""

    def __init__(self):
        super().__init__()
        self.rnn = kernforge.nn.LLTMSequence(6, 8, 2, batch_first=True, bidirectional=True)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h_n, _) = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
        return self.out(out), h_n.transpose(0, 1)  # h_n batch first, for the gather


def test_lltm_sequence_under_data_parallel_equals_one_device():
    torch.manual_seed(5)
    model = _Tagger().cuda()
    x = torch.randn(6, 9, 6, device="cuda")
    lengths = torch.tensor([9, 3, 7, 1, 9, 5], device="cuda")
    upstream = torch.randn(6, 9, 3, device="cuda")

    def step(run):
        model.zero_grad()
        out, h_n = run(x, lengths)
        (out * upstream).sum().add(h_n.sum()).backward()
        return out, h_n, *(p.grad.clone() for p in model.parameters())

    want = step(model)
    parallel = torch.nn.DataParallel(model, device_ids=[0, 1])
    got = []
    kernels = _our_kernels(lambda: got.extend(step(parallel)))
    assert {device for _, device in kernels} == {0, 1}, kernels
    for g, w in zip(got, want, strict=True):
        close(g, w, rtol=1e-4, atol=1e-5)
