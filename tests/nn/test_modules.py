"""kernforge.nn modules against the same computation in plain PyTorch."""

from __future__ import annotations

import pytest
import torch

import kernforge
from conftest import close, random


def test_fused_relu_add_module(device):
    gen = torch.Generator().manual_seed(29)
    m = kernforge.nn.FusedReLUAdd(24, device=device)
    with torch.no_grad():
        m.bias.copy_(random((24,), torch.float32, device, gen))
    x = random((5, 7, 24), torch.float32, device, gen).requires_grad_()
    y = random((5, 7, 24), torch.float32, device, gen).requires_grad_()
    bias = m.bias.detach().clone().requires_grad_()
    xr, yr = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    out = m(x, y)
    expected = torch.relu(xr) + yr + bias
    close(out, expected)
    out.square().sum().backward()
    expected.square().sum().backward()
    close(m.bias.grad, bias.grad, rtol=1e-5, atol=1e-4)
    close(x.grad, xr.grad)
    close(y.grad, yr.grad)
    assert repr(m) == "FusedReLUAdd(features=24)"


def test_fused_relu_add_module_rejects_bad_features():
    with pytest.raises(ValueError, match="features must be positive, got 0"):
        kernforge.nn.FusedReLUAdd(0)


def test_fused_relu_add_module_trains():
    torch.manual_seed(0)
    m = kernforge.nn.FusedReLUAdd(8)
    target = torch.randn(8)
    opt = torch.optim.SGD(m.parameters(), lr=2.0)
    for _ in range(50):
        x, y = torch.randn(16, 8), torch.randn(16, 8)
        loss = (m(x, y) - (torch.relu(x) + y + target)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    close(m.bias.detach(), target, rtol=0, atol=1e-3)
