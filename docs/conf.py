"""Sphinx configuration of the kernforge site: ``nox -s docs`` builds it into
docs/_build/html with warnings as errors. The API reference imports the
installed packages; the support matrix and the performance page are
rendered at build time from ci/matrix.toml and benchmarks/results/*.json
(docs/_ext/kernforge_pages.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "kernforge"
author = "the kernforge developers"
copyright = "2026, the kernforge developers"
release = re.search(
    r'^__version__ = "([^"]+)"$',
    (DOCS.parent / "packages/kernforge/src/kernforge/__init__.py").read_text(),
    re.M,
).group(1)

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "kernforge_pages"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# _generated/ holds what kernforge_pages renders; pages include it, it is no page itself.
exclude_patterns = ["_build", "_generated"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

autodoc_member_order = "bysource"
# nn.Module's own docstrings (forward's) are torch's, not kernforge's.
autodoc_inherit_docstrings = False
# Every kernforge name must resolve (-n); torch's and Python's cannot without
# their inventories, which a build with no network does not fetch.
nitpick_ignore = [
    ("py:class", name)
    for name in (
        "torch.Tensor",
        "os.PathLike",
        "pathlib.Path",
        "torch._ops.OpOverload",
        "collections.abc.Callable",
    )
]
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "furo"
html_title = f"kernforge {release}"
html_static_path = ["_static"]
html_css_files = ["tables.css"]
