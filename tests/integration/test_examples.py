"""The examples run, small, on the CPU: examples/char_lltm.py trains both
models on its default text and on a given file, and learns."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMALL = ["--steps", "40", "--seq-len", "16", "--batch", "8", "--hidden", "32", "--embed", "8",
         "--lr", "1e-2", "--device", "cpu", "--log-every", "0"]  # fmt: skip


def test_char_lltm_learns_on_its_default_text(capsys):
    results = _load("char_lltm").main(SMALL)
    out = capsys.readouterr().out
    assert "argparse.py" in out and "LLTMSequence / nn.GRU tokens per second" in out
    for rnn in ("lltm", "gru"):
        r = results[rnn]
        assert r["last_loss"] < 0.8 * r["first_loss"], (rnn, r)
        assert r["tokens_per_second"] > 0
        assert f"{rnn}: loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}" in out


def test_char_lltm_takes_a_text_file(tmp_path, capsys):
    text = tmp_path / "abc.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 40, encoding="utf-8")
    results = _load("char_lltm").main([*SMALL, "--text", str(text), "--layers", "2"])
    assert "abc.txt: 1800 characters, 28 distinct" in capsys.readouterr().out
    assert results["lltm"]["last_loss"] < 0.8 * results["lltm"]["first_loss"]


def test_char_lltm_refuses_a_text_shorter_than_a_window(tmp_path, capsys):
    text = tmp_path / "short.txt"
    text.write_text("abc", encoding="utf-8")
    with pytest.raises(SystemExit):
        _load("char_lltm").main([*SMALL, "--text", str(text)])
    assert "has 3 characters; --seq-len 16 needs more" in capsys.readouterr().err
