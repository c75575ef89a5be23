"""Train a character-level language model with kernforge.nn.LLTMSequence,
and the same model with torch.nn.GRU in its place, on one text file; print
the loss and the tokens per second of both.

    python examples/char_lltm.py [--text FILE] [--steps 200] [--device cuda]

The model: an embedding of the characters, the recurrent layers, a linear
readout to the next character's logits; Adam, cross-entropy, batches of
random windows of the text. The default text is the source of Python's own
``argparse`` module, so that the example runs anywhere kernforge does.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import torch

import kernforge


class CharModel(torch.nn.Module):
    """Characters [T, B] (int64) -> next-character logits [T, B, vocab]."""

    def __init__(self, rnn: str, vocab: int, embed: int, hidden: int, layers: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, embed)
        cls = {"lltm": kernforge.nn.LLTMSequence, "gru": torch.nn.GRU}[rnn]
        self.rnn = cls(embed, hidden, num_layers=layers)
        self.readout = torch.nn.Linear(hidden, vocab)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.embed(chars))
        return self.readout(out)


def batches(data: torch.Tensor, steps: int, seq_len: int, batch: int, seed: int):
    """`steps` batches of (input [T, B], target [T, B]): random windows."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        starts = torch.randint(0, len(data) - seq_len - 1, (batch,), generator=gen)
        window = torch.stack([data[s : s + seq_len + 1] for s in starts.tolist()], dim=1)
        yield window[:-1], window[1:]


def train(rnn: str, data: torch.Tensor, vocab: int, args) -> dict:
    """Trains one model; returns its first and last loss (mean over the
    first and last tenth of the steps) and its tokens per second."""
    torch.manual_seed(args.seed)
    model = CharModel(rnn, vocab, args.embed, args.hidden, args.layers).to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    losses = []
    tokens = 0
    start = None
    for step, (x, y) in enumerate(batches(data, args.steps, args.seq_len, args.batch, args.seed)):
        if step == 1:  # the first step pays for cuDNN plans, allocations, kernel loading
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            start, tokens = time.perf_counter(), 0
        x, y = x.to(args.device), y.to(args.device)
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        tokens += x.numel()
        if args.log_every and (step + 1) % args.log_every == 0:
            print(f"  {rnn:>4} step {step + 1:4d}  loss {losses[-1]:.3f}", flush=True)
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tenth = max(1, len(losses) // 10)
    return {
        "first_loss": sum(losses[:tenth]) / tenth,
        "last_loss": sum(losses[-tenth:]) / tenth,
        "tokens_per_second": tokens / seconds,
    }


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--text", type=Path, default=Path(argparse.__file__), help="a UTF-8 text file")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=50, help="0: only the summary")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args(argv)
    if args.steps < 2:
        p.error("--steps must be at least 2 (the first step is not timed)")
    text = args.text.read_text(encoding="utf-8")
    if len(text) <= args.seq_len + 1:
        p.error(f"--text {args.text} has {len(text)} characters; --seq-len {args.seq_len} needs more")
    alphabet = sorted(set(text))
    index = {ch: i for i, ch in enumerate(alphabet)}
    data = torch.tensor([index[ch] for ch in text], dtype=torch.int64)
    print(
        f"{args.text.name}: {len(text)} characters, {len(alphabet)} distinct; "
        f"{args.steps} steps of {args.batch} x {args.seq_len} on {args.device}; "
        f"chance: loss {math.log(len(alphabet)):.3f}"
    )
    results = {}
    for rnn in ("lltm", "gru"):
        results[rnn] = r = train(rnn, data, len(alphabet), args)
        print(
            f"{rnn:>4}: loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}, "
            f"{r['tokens_per_second']:,.0f} tokens/s",
            flush=True,
        )
    ratio = results["lltm"]["tokens_per_second"] / results["gru"]["tokens_per_second"]
    print(f"LLTMSequence / nn.GRU tokens per second: {ratio:.2f}x")
    return results


if __name__ == "__main__":
    main()
