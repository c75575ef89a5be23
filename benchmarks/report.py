"""Turns a pytest-benchmark JSON file into the table of speedups, checks the
performance targets, and writes the report: markdown and PNG plots named
after the device.

    python benchmarks/report.py RESULTS.json [--out DIR] [--baseline-out FILE]
    python benchmarks/report.py --device-slug      # e.g. nvidia-h100-80gb-hbm3, or cpu

``--out DIR`` writes DIR/<slug>.md (the table, the targets, the plots),
DIR/<slug>-bandwidth.png (each elementwise op's achieved bandwidth against
the copy ceiling, at each size) and DIR/<slug>-lltm.png (the LLTM step
against eager and torch.compile at each size). The docs' performance page
calls :func:`write_report` on the stored JSON of the latest H100 run.

Bandwidth counts each input read once and each output written once; "copy"
is the same run's device-to-device copy of the same dtype, the ceiling.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

# The regression gate: a row's fastest round may be this much slower than
# the baseline's (nox -s bench).
GATE = 0.10

# case, (case, size) or (case, dtype) -> checks; each check: (description, fn(row) -> bool)
CUDA_TARGETS = {
    "mul": [
        ("≥95% of copy bandwidth", lambda r: r["of_copy"] >= 0.95),
        ("within 3% of eager", lambda r: r["median"] <= 1.03 * r["eager"]),
    ],
    "add": [
        ("≥95% of copy bandwidth", lambda r: r["of_copy"] >= 0.95),
        ("within 3% of eager", lambda r: r["median"] <= 1.03 * r["eager"]),
    ],
    "fused_relu_add": [
        ("≥2.1x faster than eager", lambda r: r["eager"] / r["median"] >= 2.1),
        ("≥1.05x faster than torch.compile", lambda r: r["compile"] / r["median"] >= 1.05),
    ],
    "fused_relu_add_backward_bias": [("≥90% of copy bandwidth", lambda r: r["of_copy"] >= 0.90)],
    ("round_ste", "float32"): [
        ("≥95% of copy bandwidth", lambda r: r["of_copy"] >= 0.95),
        ("≥1.05x faster than torch.compile", lambda r: r["compile"] / r["median"] >= 1.05),
    ],
    "mul_call": [("≤1.5x eager's per-call cost", lambda r: r["median"] <= 1.5 * r["eager"])],
    "add_call": [("≤1.5x eager's per-call cost", lambda r: r["median"] <= 1.5 * r["eager"])],
    "fused_relu_add_call": [("≤1.5x eager's per-call cost", lambda r: r["median"] <= 1.5 * r["eager"])],
    "legacy_sgemm": [("within 5% of torch.mm", lambda r: r["median"] <= 1.05 * r["eager"])],
    "legacy_cadd": [("within 10% of torch.add", lambda r: r["median"] <= 1.10 * r["eager"])],
    ("lltm", "16x32x128"): [
        ("≥2x faster than eager and torch.compile", lambda r: _faster(r) >= 2.0),
    ],
    ("lltm", "1024x512x1024"): [
        ("≥1.1x faster than the faster of eager and torch.compile", lambda r: _faster(r) >= 1.1),
    ],
    ("lltm", "8192x1024x2048"): [
        ("no slower than the faster of eager and torch.compile", lambda r: _faster(r) >= 1.0),
    ],
    ("lltm_weights", "1024x512x1024"): [
        ("≥1.1x faster than the faster of eager and torch.compile", lambda r: _faster(r) >= 1.1),
    ],
    ("lltm_weights", "8192x1024x2048"): [
        ("no slower than the faster of eager and torch.compile", lambda r: _faster(r) >= 1.0),
    ],
    **{
        ("lltm_sequence_train", "float32", size): [
            (f"≥{x}x faster than cuDNN GRU", lambda r, x=x: r["gru"] / r["median"] >= x)
        ]
        for size, x in (("64x256x512xT64", 1.5), ("256x512x1024xT32", 1.0), ("8x64x256xT512", 3.0))
    },
    ("lltm_sequence_train", "float32", "16x32x128xT64"): [
        ("≥2x faster than cuDNN GRU", lambda r: r["gru"] / r["median"] >= 2.0),
        ("≥10x faster than the Python loop over the cell", lambda r: r["loop"] / r["median"] >= 10.0),
    ],
    ("lltm_sequence_train", "bfloat16"): [("no slower than cuDNN GRU", lambda r: r["median"] <= r["gru"])],
    "lltm_sequence_infer": [("no slower than cuDNN GRU", lambda r: r["median"] <= r["gru"])],
    "lltm_sequence_train": [
        ("peak memory of a step no more than cuDNN GRU's", lambda r: r["peak"] <= r["gru_peak"])
    ],
    **{
        case: [("≥1.5x faster than cuDNN LSTM", lambda r: r["lstm"] / r["median"] >= 1.5)]
        for case in (
            "lltm_sequence_packed_train",
            "lltm_sequence_packed_infer",
            "lltm_sequence_packed_bi_train",
            "lltm_sequence_packed_bi_infer",
        )
    },
    # a guard on the d2l-shaped row (benchmarks/test_lltm_sequence.py), which
    # ran 1.36x to 1.42x cuDNN's LSTM on an H200 once the backward split
    **{
        case: [("≥1.2x faster than cuDNN LSTM", lambda r: r["lstm"] / r["median"] >= 1.2)]
        for case in ("lltm_sequence_stacked_bi_train", "lltm_sequence_stacked_bi_infer")
    },
    "lltm_sequence_generate": [("≥2x faster than cuDNN LSTM", lambda r: r["lstm"] / r["median"] >= 2.0)],
}
CPU_TARGETS = {
    "mul": [("within 5% of eager", lambda r: r["median"] <= 1.05 * r["eager"])],
    "add": [("within 5% of eager", lambda r: r["median"] <= 1.05 * r["eager"])],
    "fused_relu_add": [("≥1.5x faster than eager", lambda r: r["eager"] / r["median"] >= 1.5)],
    "lltm": [("no slower than eager", lambda r: r["median"] <= r["eager"])],
    ("lltm_sequence_train", "float32", "16x32x128xT64"): [
        ("≥2x faster than the Python loop over the cell", lambda r: r["loop"] / r["median"] >= 2.0),
    ],
    "lltm_sequence_packed_train": [
        ("no slower than the same layer on the padded batch", lambda r: r["median"] <= r["padded"])
    ],
}

# A kernforge op inside compiled code, against the same code in plain torch
# compiled (same run), on any device: True for the chains, False for the model
# step, whose compiled kernels are the same as plain torch's (the profiler's
# names and times); 1% is the spread of such identical code between runs.
CHAIN_TARGETS = {
    True: [("within 5% of plain torch compiled", lambda r: r["median"] <= 1.05 * r["compile"])],
    False: [
        ("no slower than plain torch compiled (1%: noise)", lambda r: r["median"] <= 1.01 * r["compile"])
    ],
}


# The LLTM step's cases: every input needing a gradient, or only the weights.
LLTM_STEP = ("lltm", "lltm_weights")


def _faster(r) -> float:
    """The speedup over the faster of eager and torch.compile."""
    return min(r["eager"], r["compile"]) / r["median"]


def device_slug() -> str:
    import torch

    if not torch.cuda.is_available():
        return "cpu"
    return _slug(torch.cuda.get_device_name())


def rows(data: dict) -> list[dict]:
    """One row per kernforge benchmark, with the same run's medians of the
    others (eager, compile; for recurrent rows gru, lstm, loop, padded), their peak
    memory where measured (peak, <impl>_peak) and the copy's."""
    by_key = {}
    for b in data["benchmarks"]:
        info = b["extra_info"]
        by_key[(info["case"], info["dtype"], info["n"], info["impl"])] = (b["stats"]["median"], info)
    out = []
    for (case, dtype, n, impl), (median, info) in sorted(by_key.items()):
        if case == "copy" or impl != "kernforge":
            continue
        row = {"case": case, "dtype": dtype, "n": n, "median": median, "bytes": info["bytes"]}
        row["kind"] = info.get("kind", "op")  # "chain": a kernforge op inside compiled code
        row["size"] = info.get("size") or f"2^{n.bit_length() - 1}"
        row["peak"] = info.get("peak_bytes")
        for other in ("eager", "compile", "gru", "lstm", "loop", "padded"):
            hit = by_key.get((case, dtype, n, other))
            row[other] = hit[0] if hit else None
            row[f"{other}_peak"] = hit[1].get("peak_bytes") if hit else None
        copy = by_key.get(("copy", dtype, n, "eager"))
        row["gbps"] = info["bytes"] / median / 1e9 if info["bytes"] else None
        row["copy_gbps"] = copy[1]["bytes"] / copy[0] / 1e9 if copy else None
        row["of_copy"] = row["gbps"] / row["copy_gbps"] if copy and row["gbps"] else None
        out.append(row)
    return out


def _us(seconds):
    return "" if seconds is None else f"{seconds * 1e6:.1f}"


def table(data: dict) -> str:
    """What `nox -s bench` prints: the device, then the report's tables."""
    mi = data["machine_info"]
    header = f"device: {mi.get('device')}   torch {mi.get('torch')}   CUDA {mi.get('cuda')}   (medians in us)"
    return "\n".join([header, "", *report_tables(data)])


IMPL_STYLE = {  # label, color, line style
    "kernforge": ("kernforge", "#c0392b", "-"),
    "eager": ("eager PyTorch", "#2c7fb8", "--"),
    "compile": ("torch.compile", "#41ab5d", "-."),
}


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def plot_bandwidth(data: dict, path: Path) -> bool:
    """One panel per elementwise op: achieved GB/s of kernforge, eager and
    torch.compile at each size (fp32), the same run's copy as the ceiling.
    False when the run has no such rows."""
    by_case = {}
    for r in rows(data):
        if r["kind"] == "op" and r["dtype"] == "float32" and r["gbps"] and r["copy_gbps"] is not None:
            by_case.setdefault(r["case"], []).append(r)
    if not by_case:
        return False
    plt = _pyplot()
    cols = min(3, len(by_case))
    nrows = -(-len(by_case) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False, sharey=True)
    for ax, (case, rs) in zip(axes.flat, sorted(by_case.items()), strict=False):
        rs = sorted(rs, key=lambda r: r["n"])
        n = [r["n"] for r in rs]
        ax.plot(
            n, [r["copy_gbps"] for r in rs], color="black", ls=":", marker="_", label="device copy (ceiling)"
        )
        for impl, (label, color, ls) in IMPL_STYLE.items():
            pts = [(r["n"], r["bytes"] / (r["median"] if impl == "kernforge" else r[impl]) / 1e9) for r in rs
                   if impl == "kernforge" or r[impl] is not None]  # fmt: skip
            if pts:
                ax.plot(*zip(*pts, strict=True), color=color, ls=ls, marker="o", ms=4, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(n, [f"2^{x.bit_length() - 1}" for x in n])
        ax.set_title(case, fontsize=10)
        ax.set_xlabel("elements (fp32)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("GB/s (bytes that must move / median)")
    for ax in list(axes.flat)[len(by_case) :]:
        ax.axis("off")
    axes[0, 0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Elementwise bandwidth on {data['machine_info'].get('device')}", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_lltm(data: dict, path: Path) -> bool:
    """LLTM forward + backward medians of kernforge, eager and torch.compile
    at each size, one panel per dtype, each kernforge bar labelled with its
    speedup over the faster of the other two."""
    by_dtype = {}
    for r in rows(data):
        if r["case"] == "lltm":
            by_dtype.setdefault(r["dtype"], []).append(r)
    if not by_dtype:
        return False
    plt = _pyplot()
    from matplotlib import ticker

    fig, axes = plt.subplots(1, len(by_dtype), figsize=(5.5 * len(by_dtype), 3.6), squeeze=False)
    for ax, (dtype, rs) in zip(
        axes[0], sorted(by_dtype.items(), key=lambda kv: kv[0] != "float32"), strict=True
    ):
        rs = sorted(rs, key=lambda r: r["n"])
        width = 0.27
        for k, (impl, (label, color, _)) in enumerate(IMPL_STYLE.items()):
            times = [(r["median"] if impl == "kernforge" else r[impl] or 0) * 1e3 for r in rs]
            bars = ax.bar(
                [i + (k - 1) * width for i in range(len(rs))], times, width, color=color, label=label
            )
            if impl == "kernforge":
                for bar, r in zip(bars, rs, strict=True):
                    if r["eager"] and r["compile"]:
                        ax.annotate(f"{_faster(r):.2f}x", (bar.get_x() + width / 2, bar.get_height()),
                                    ha="center", va="bottom", fontsize=8)  # fmt: skip
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.margins(y=0.15)
        ax.set_xticks(range(len(rs)), [r["size"] for r in rs])
        ax.set_xlabel("(B, F, S)")
        ax.set_ylabel("ms per step, forward + backward")
        ax.set_title(f"LLTM step, {dtype}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"LLTM on {data['machine_info'].get('device')} (label: speedup over the faster)", fontsize=11
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def report_tables(data: dict) -> list[str]:
    """The markdown report's tables (narrower than :func:`table`'s): the
    elementwise cases, the LLTM step, then kernforge ops inside compiled code
    against the same code in plain torch; medians in microseconds."""

    def ratio(r, other):
        return "" if r[other] is None else f"{r[other] / r['median']:.2f}x"

    all_rows = rows(data)
    lines = [
        "| case | dtype | n | kernforge | eager | compile | vs eager | vs compile | GB/s | of copy |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in all_rows:
        if r["case"] in LLTM_STEP or r["kind"] != "op":
            continue
        # bandwidth where the run has the copy of that size (not for the per-call rows)
        gbps, of_copy = (
            ("", "") if r["of_copy"] is None else (f"{r['gbps']:.0f}", f"{100 * r['of_copy']:.1f}%")
        )
        lines.append(
            f"| {r['case']} | {r['dtype']} | {r['size']} | {_us(r['median'])} | {_us(r['eager'])} | "
            f"{_us(r['compile'])} | {ratio(r, 'eager')} | {ratio(r, 'compile')} | {gbps} | {of_copy} |"
        )
    lltm = [r for r in all_rows if r["case"] in LLTM_STEP]
    if lltm:
        lines += [
            "",
            "| LLTM step, forward + backward | dtype | kernforge | eager | compile | vs eager | vs compile |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in sorted(lltm, key=lambda r: (r["case"], r["dtype"] != "float32", r["n"])):
            only = ", only the weights' gradients" if r["case"] == "lltm_weights" else ""
            lines.append(
                f"| (B, F, S) = ({r['size'].replace('x', ', ')}){only} | {r['dtype']} | {_us(r['median'])} | "
                f"{_us(r['eager'])} | {_us(r['compile'])} | {ratio(r, 'eager')} | {ratio(r, 'compile')} |"
            )
    recurrent = [r for r in all_rows if r["kind"] == "recurrent"]
    rnn = _rnn_name(data)
    if recurrent:
        lines += [
            "",
            f"| LLTM sequence (B, F, S), T | mode | dtype | kernforge | {rnn} GRU | {rnn} LSTM | loop "
            "| padded | vs GRU | vs LSTM | vs loop | vs padded | peak MiB: kernforge / GRU |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in sorted(recurrent, key=_recurrent_order):
            peak = (
                f"{r['peak'] / 2**20:.1f} / {r['gru_peak'] / 2**20:.1f}"
                if r["peak"] is not None and r["gru_peak"] is not None
                else ""
            )
            b, f, s, t = r["size"].replace("T", "").split("x")
            lines.append(
                f"| ({b}, {f}, {s}), {t} | {r['case'].removeprefix('lltm_sequence_')} | {r['dtype']} | "
                f"{_us(r['median'])} | {_us(r['gru'])} | {_us(r['lstm'])} | {_us(r['loop'])} | "
                f"{_us(r['padded'])} | {ratio(r, 'gru')} | {ratio(r, 'lstm')} | {ratio(r, 'loop')} | "
                f"{ratio(r, 'padded')} | {peak} |"
            )
    chains = [r for r in all_rows if r["kind"] == "chain"]
    if chains:
        lines += [
            "",
            "| compiled code, with the kernforge op | dtype | kernforge | plain torch | plain / kernforge "
            "| of copy |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for r in sorted(chains, key=lambda r: (r["case"], r["dtype"] != "float32")):
            of_copy = "" if r["of_copy"] is None else f"{100 * r['of_copy']:.1f}%"
            lines.append(
                f"| {r['case']} | {r['dtype']} | {_us(r['median'])} | {_us(r['compile'])} | "
                f"{ratio(r, 'compile')} | {of_copy} |"
            )
    return lines


def _rnn_name(data: dict) -> str:
    """torch's RNNs run cuDNN on a GPU, its own kernels on the CPU."""
    return "torch" if data["machine_info"].get("device") == "cpu" else "cuDNN"


def _recurrent_order(r):
    return (r["case"] != "lltm_sequence_train", r["dtype"] != "float32", r["size"].split("x")[3], r["n"])


def plot_sequence(data: dict, path: Path) -> bool:
    """LLTM sequence medians of kernforge, cuDNN GRU and cuDNN LSTM at each
    size, one panel per (mode, dtype), each kernforge bar labelled with its
    speedup over the GRU. False when the run has no such rows."""
    panels = {}
    for r in rows(data):
        if r["kind"] == "recurrent":
            panels.setdefault((r["case"].removeprefix("lltm_sequence_"), r["dtype"]), []).append(r)
    if not panels:
        return False
    plt = _pyplot()
    from matplotlib import ticker

    rnn = _rnn_name(data)
    impls = {
        "kernforge": ("kernforge", "#c0392b"),
        "gru": (f"{rnn} GRU", "#2c7fb8"),
        "lstm": (f"{rnn} LSTM", "#41ab5d"),
    }
    cols = min(4, len(panels))
    nrows = -(-len(panels) // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.8 * cols, 3.8 * nrows), squeeze=False)
    order = sorted(panels.items(), key=lambda kv: (kv[0][0], kv[0][1] != "float32"))
    for ax in list(axes.flat)[len(order) :]:
        ax.axis("off")
    for ax, ((mode, dtype), rs) in zip(axes.flat, order, strict=False):
        rs = sorted(rs, key=lambda r: r["n"])
        width = 0.27
        for k, (impl, (label, color)) in enumerate(impls.items()):
            times = [(r["median"] if impl == "kernforge" else r[impl] or 0) * 1e3 for r in rs]
            xs = [i + (k - 1) * width for i in range(len(rs))]
            bars = ax.bar(xs, times, width, color=color, label=label)
            if impl == "kernforge":
                for bar, r in zip(bars, rs, strict=True):
                    if r["gru"]:
                        at = (bar.get_x() + width / 2, bar.get_height())
                        speedup = f"{r['gru'] / r['median']:.2f}x"
                        ax.annotate(speedup, at, ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.margins(y=0.15)
        ax.set_xticks(range(len(rs)), [r["size"].replace("xT", ", T") for r in rs], fontsize=7)
        ax.set_ylabel("ms")
        ax.set_title(f"{mode}, {dtype}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.suptitle(
        f"LLTM sequence on {data['machine_info'].get('device')} (label: speedup over {rnn} GRU)", fontsize=11
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_report(data: dict, out: Path) -> Path:
    """OUT/<slug>.md with the table, the targets and the plots it writes beside it."""
    mi = data["machine_info"]
    slug = _slug(str(mi.get("device")))
    out.mkdir(parents=True, exist_ok=True)
    images = []
    for what, plot in (("bandwidth", plot_bandwidth), ("lltm", plot_lltm), ("lltm-sequence", plot_sequence)):
        if plot(data, out / f"{slug}-{what}.png"):
            images.append(f"![{what}]({slug}-{what}.png)")
    lines = [
        f"# kernforge benchmarks: {mi.get('device')}",
        "",
        f"Run of {data.get('datetime', '?')[:16].replace('T', ' ')} UTC: torch {mi.get('torch')}, "
        f"CUDA {mi.get('cuda')}, Python {mi.get('python_version')}, {mi.get('torch_threads')} CPU threads. "
        "Medians of pytest-benchmark rounds; eager PyTorch, torch.compile and the device copy "
        "(the bandwidth ceiling) measured in the same process. Bandwidth counts each input read "
        "once and each output written once. Elementwise targets apply at the largest size"
        + (
            "; at 2^20 elements the tensors fit in the GPU's L2 cache and a kernel is shorter than a "
            "launch, so those rows show per-call cost."
            if mi.get("device") != "cpu"
            else "."
        ),
        "",
        "Medians in microseconds.",
        "",
        *report_tables(data),
        "",
        "Targets:",
        "",
        *(f"- {line}" for line in check_targets(data)),
        "",
        *(f"{img}\n" for img in images),
    ]
    path = out / f"{slug}.md"
    path.write_text("\n".join(lines).rstrip("\n") + "\n")
    return path


def check_targets(data: dict) -> list[str]:
    """One line per target: PASS or MISS with the figure. An elementwise case
    measured at several sizes is held to its targets at the largest (the
    streaming size); the smaller ones are cache-resident and as short as a
    launch, reported but not targets."""
    targets = CPU_TARGETS if data["machine_info"].get("device") == "cpu" else CUDA_TARGETS
    all_rows = rows(data)
    largest = {}
    sized = [r for r in all_rows if r["case"] not in LLTM_STEP and r["kind"] != "recurrent"]
    for r in sized:
        largest[r["case"], r["dtype"]] = max(largest.get((r["case"], r["dtype"]), 0), r["n"])
    out = []
    for r in all_rows:
        if r in sized and r["n"] < largest[r["case"], r["dtype"]]:
            continue
        checks = [
            *(CHAIN_TARGETS[r["case"].startswith("chain")] if r["kind"] == "chain" else []),
            *targets.get(r["case"], []),
            *targets.get((r["case"], r["size"]), []),
            *targets.get((r["case"], r["dtype"]), []),
            *targets.get((r["case"], r["dtype"], r["size"]), []),
        ]
        for what, ok in checks:
            try:
                passed = ok(r)
            except TypeError:  # a figure the check needs was not measured
                passed = None
            verdict = {True: "PASS", False: "MISS", None: "n/a "}[passed]
            out.append(f"{verdict}  {r['case']} {r['dtype']} {r['size']}: {what}")
    return out


def widen(old: list[dict], new: list[dict]) -> list[dict]:
    """The baseline's rows from two runs of the same kernels on two hosts of
    one GPU model: each row from the run whose fastest round was slower.
    GPU hosts of one name differ by more than the gate's 10% on some rows
    with the code unchanged (benchmarks/PERFORMANCE.md): a baseline from
    the fastest host alone fails the gate on the others. A row steady in
    only one run keeps that run's figure."""
    slower = {b["fullname"]: b for b in old}
    for b in new:
        if b["fullname"] not in slower or b["stats"]["min"] > slower[b["fullname"]]["stats"]["min"]:
            slower[b["fullname"]] = b
    return sorted(slower.values(), key=lambda b: b["fullname"])


def regressed(run: list[dict], baseline: list[dict], limit: float = GATE) -> list[str]:
    """The rows of `run` (pytest-benchmark's, by fullname) whose fastest
    round is more than `limit` slower than the same row's in `baseline`:
    the rule of `--benchmark-compare-fail=min:10%`. Rows the baseline
    lacks are not gated."""
    base = {b["fullname"]: b["stats"]["min"] for b in baseline}
    return [
        b["fullname"]
        for b in run
        if b["fullname"] in base and b["stats"]["min"] > (1 + limit) * base[b["fullname"]]
    ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="?")
    p.add_argument("--device-slug", action="store_true", help="print the device's slug and exit")
    p.add_argument(
        "--regressed",
        metavar="BASELINE",
        help=f"print the rows of RESULTS more than {round(GATE * 100)}%% slower than BASELINE's "
        "(fastest rounds), a line each, and exit",
    )
    p.add_argument("--out", type=Path, help="write the report (markdown and PNG plots) into this folder")
    p.add_argument(
        "--baseline-out", help="write the kernforge rows of RESULTS here (the regression baseline)"
    )
    p.add_argument(
        "--widen-baseline",
        action="store_true",
        help="with --baseline-out: keep each row the file has, as the slower of its and RESULTS' "
        "fastest rounds (a run of the same kernels on another host of the same GPU)",
    )
    args = p.parse_args()
    if args.device_slug:
        print(device_slug())
        return 0
    data = json.loads(Path(args.results).read_text())
    if args.regressed:
        print(
            "\n".join(
                regressed(data["benchmarks"], json.loads(Path(args.regressed).read_text())["benchmarks"])
            )
        )
        return 0
    print(table(data))
    print()
    print("targets:")
    print("\n".join(check_targets(data)))
    if args.out:
        print(f"\nreport written: {write_report(data, args.out)}")
    if args.baseline_out:
        # kernforge's own rows, but only those steady enough to gate on at 10%:
        # host-bound rows (per-call costs, the small LLTM step) moved by more
        # than that between runs on the GPU host, as did rows noisy in this run.
        rows_kept = [
            b
            for b in data["benchmarks"]
            if b["extra_info"]["impl"] == "kernforge"
            and not b["extra_info"].get("host_bound")
            and b["stats"]["iqr"] <= 0.05 * b["stats"]["median"]
        ]
        if args.widen_baseline:
            rows_kept = widen(json.loads(Path(args.baseline_out).read_text())["benchmarks"], rows_kept)
        keep = dict(data, benchmarks=rows_kept)
        Path(args.baseline_out).write_text(json.dumps(keep, indent=1) + "\n")
        print(f"\nbaseline written: {args.baseline_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
