"""Writes one PEP 503 simple index per build variant, for the release pages.

    python ci/make_index.py WHEELHOUSE SITE

WHEELHOUSE holds one folder per variant (cpu, cu12, cu13; a "wheelhouse-"
prefix, as the release workflow's artifacts have, is dropped). SITE/whl/VARIANT/
gets the index and the wheels, so that

    pip install kernforge --extra-index-url https://<pages>/whl/cu13/

picks kernforge-core 0.1.0+cu13 and kernforge-legacy 0.1.0+cu13 (and torch
from the default index).
"""

from __future__ import annotations

import hashlib
import html
import re
import shutil
import sys
from pathlib import Path


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def page(title: str, links: list[tuple[str, str]]) -> str:
    body = "\n".join(f'    <a href="{html.escape(href)}">{html.escape(text)}</a><br>' for href, text in links)
    head = f"<head><title>{html.escape(title)}</title></head>"
    return f"<!DOCTYPE html>\n<html>\n  {head}\n  <body>\n{body}\n  </body>\n</html>\n"


def write_variant(wheels: list[Path], out: Path, variant: str) -> None:
    projects: dict[str, list[Path]] = {}
    for whl in wheels:
        projects.setdefault(normalize(whl.name.split("-")[0]), []).append(whl)
    for project, files in projects.items():
        folder = out / project
        folder.mkdir(parents=True, exist_ok=True)
        links = []
        for whl in sorted(files):
            shutil.copy2(whl, folder / whl.name)
            digest = hashlib.sha256(whl.read_bytes()).hexdigest()
            links.append((f"{whl.name}#sha256={digest}", whl.name))
        (folder / "index.html").write_text(page(f"Links for {project}", links))
    root_links = [(f"{p}/", p) for p in sorted(projects)]
    (out / "index.html").write_text(page(f"kernforge {variant} wheels", root_links))


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    wheelhouse, site = Path(sys.argv[1]), Path(sys.argv[2])
    variants = [d for d in sorted(wheelhouse.iterdir()) if d.is_dir() and any(d.glob("*.whl"))]
    if not variants:
        print(f"no variant folders with wheels in {wheelhouse}", file=sys.stderr)
        return 1
    for folder in variants:
        variant = folder.name.removeprefix("wheelhouse-")
        write_variant(sorted(folder.glob("*.whl")), site / "whl" / variant, variant)
        print(f"{site / 'whl' / variant}: {len(list(folder.glob('*.whl')))} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
