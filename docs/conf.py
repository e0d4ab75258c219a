"""Sphinx configuration of scaleprobe's documentation.

Build it with warnings as errors, as CI does::

    pip install -e ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import sys
from pathlib import Path

import scaleprobe

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "scaleprobe"
copyright = "the scaleprobe authors"
release = scaleprobe.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "scaleprobe_docs",
]

# command lines keep their "--" (no smart dashes or quotes)
smartquotes = False

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
root_doc = "index"

# MyST: $...$ and $$...$$ math, ::: fences, definition lists, header anchors.
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# The API reference: one generated page per public name. The class template leaves
# out the set_*_request methods scikit-learn adds to every estimator (metadata routing).
autosummary_generate = True
templates_path = ["_templates"]
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
autodoc_default_options = {"members": True, "inherited-members": False}

# numpydoc renders the docstrings; it validates only the checks every public object
# passes today (GL08: it has a docstring; SS03: its summary ends with a period; ...).
# Turn more on as the code base passes them: ES01, EX01, PR01, PR07, RT01-RT03, SA01,
# SS01, SS05 and SS06 fail somewhere.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = {
    # GL01 is left out: the code base starts summaries on the quotes' line (PEP 257),
    # which numpydoc 1.8 (the docs extra's floor) reports and later releases accept
    *("GL03", "GL05", "GL06", "GL07", "GL08", "GL09", "GL10"),
    *("PR02", "PR05", "PR06", "PR08", "PR09", "PR10"),
    *("RT04", "SA02", "SA04", "SS02", "SS03", "SS04"),
}
numpydoc_validation_exclude = {
    r"\.__init__$",  # dataclasses' generated __init__
    # constants: their docstring is their type's (str, tuple); RBASP is a class
    r"\.(?!RBASP$)[A-Z][A-Z0-9_]*$",
    # fitted attributes (scikit-learn's trailing underscore): their class's
    # Attributes section documents them
    r"\.[a-z][a-z0-9_]*[a-z0-9]_$",
}

# The deployment READMEs are included as they are, written for a repository browser
# that does not mind a heading level skipped.
suppress_warnings = ["myst.header"]
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"scaleprobe {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
