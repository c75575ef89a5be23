"""Writes the list of the 2017 TH/THC C API, every function the public
headers declared, one per line as ``<header>\t<function>``, into
packages/kernforge-legacy/th_api_2017.tsv: the denominator of the coverage
table on the docs' porting page (docs/_ext/kernforge_pages.py).

    python ci/th_api_2017.py TORCH7 CUTORCH

TORCH7 and CUTORCH are checkouts of github.com/torch/torch7 at
89ede3ba90c906a8ec6b9a0f4bef188ba5bb2fd8 (2017-09-26) and
github.com/torch/cutorch at 5e9d86cb982a6048d3077aeb0e0cee19847b4c08
(2017-09-11): the lib/TH and lib/THC that PyTorch 0.2 vendored and
torch.utils.ffi extensions compiled against. Their TH.h and THC.h go through
the C preprocessor (cmake's configured headers written with every option on,
CUDA's library headers stubbed: only the declarations are wanted), so each
generic function is counted once per type it was instantiated for, as the
linker saw it. Needs a C compiler and CUDA's runtime headers (CUDA_HOME).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "packages" / "kernforge-legacy" / "th_api_2017.tsv"
STUBS = {  # CUDA libraries' headers: only their type names are needed
    "cublas_v2.h": "typedef struct cublasContext *cublasHandle_t;\n",
    "cusparse.h": "",
    "curand.h": "",
    "curand_kernel.h": "",
}


def declarations(preprocessed: str, lib: str) -> list[tuple[str, str]]:
    """(header, function) of every `extern` function declaration that comes
    from a header under lib/ (TH/ or THC/), in order, without repeats."""
    out, seen, header = [], set(), None
    text = []
    for line in preprocessed.splitlines():
        marker = re.match(r'# \d+ "([^"]+)"', line)
        if marker:
            path = marker.group(1)
            header = path[path.index(lib) :] if lib in path else None
            text.append(";")  # a file boundary ends any statement
            continue
        text.append(f"\x00{header}\x00{line}" if header else "")  # the header tags its lines
    for statement in " ".join(text).split(";"):
        where = re.findall(r"\x00([^\x00]+)\x00", statement)
        body = re.sub(r"\x00[^\x00]+\x00", " ", statement).strip()
        m = re.match(r"extern\s+[^(){}]*?\b([A-Za-z_]\w*)\s*\(", body)
        if not m or "(*" in body.split(m.group(1))[0] or "{" in body:
            continue
        name = m.group(1)
        if name not in seen:
            seen.add(name)
            out.append((where[0] if where else lib, name))
    return out


def main() -> int:
    torch7, cutorch = map(Path, sys.argv[1:3])
    cuda = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copytree(torch7 / "lib" / "TH", tmp / "TH")
        shutil.copytree(cutorch / "lib" / "THC", tmp / "THC")
        for d, name in (("TH", "THGeneral.h"), ("THC", "THCGeneral.h")):
            source = (tmp / d / f"{name}.in").read_text()
            (tmp / d / name).write_text(re.sub(r"#cmakedefine (\w+)", r"#define \1", source))
        (tmp / "stub").mkdir()
        for name, text in STUBS.items():
            (tmp / "stub" / name).write_text(text)
        flags = ["-E", "-x", "c", f"-I{tmp / 'stub'}", f"-I{tmp / 'TH'}", f"-I{tmp / 'THC'}", f"-I{tmp}",
                 f"-I{cuda}", "-DCUDA_HALF_TENSOR", "-"]  # fmt: skip
        rows = []
        for include, lib in (("TH.h", "TH/"), ("THC.h", "THC/")):
            pre = subprocess.run(["cc", *flags], input=f"#include <{include}>\n", capture_output=True,
                                 text=True, check=True).stdout  # fmt: skip
            rows += [row for row in declarations(pre, lib) if row[1] not in {r[1] for r in rows}]
    OUT.write_text("".join(f"{header}\t{name}\n" for header, name in rows))
    print(f"{len(rows)} functions -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
