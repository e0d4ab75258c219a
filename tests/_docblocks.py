"""Find the code blocks of Markdown pages and the markers that say how to run them.

A code block is a fenced block (three or more backticks or tildes) whose info string
names a language; MyST directives (an info string in braces, ``{math}``, ``{include}``,
...) are not code, except ``{code-block} LANG`` and ``{code} LANG``. An HTML comment on
the line before a block, after blank lines at most, says how the tests treat it::

    <!-- docs-test: file tour.yaml -->      write the block to tour.yaml first
    <!-- docs-test: script -->              run a Python block as a script
    <!-- docs-test: skip install: CI runs it -->   do not run it, for this reason

Inline code spans outside blocks are found too: the tests check that every
``scaleprobe ...`` command they spell parses, and that every benchmark they name exists
with the options they give it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(
    r"^\s*<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?P<arg>.*?)\s*-->\s*$"
)
_INLINE = re.compile(r"(?<!`)`(?!`)([^`\n]+)`(?!`)")

#: The markers a block may carry.
MARKERS = ("file", "script", "skip")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block of a page.

    Attributes
    ----------
    path : Path
        The page.
    line : int
        The line of the opening fence (1-based).
    language : str
        The language of the info string, lower case (``""`` when there is none).
    text : str
        The block's content.
    marker : str
        The kind of the marker before the block, ``""`` when there is none.
    argument : str
        The rest of the marker (a file name, a reason).
    """

    path: Path
    line: int
    language: str
    text: str
    marker: str = ""
    argument: str = ""

    @property
    def where(self) -> str:
        """``path:line`` of the block, for messages."""
        return f"{self.path.name}:{self.line}"


def _language(info: str) -> str | None:
    """The language of an info string; None for a MyST directive that is not code."""
    info = info.strip()
    if info.startswith("{"):
        name, _, rest = info[1:].partition("}")
        if name in ("code-block", "code", "sourcecode"):
            return rest.strip().split(" ")[0].lower()
        return None
    return info.split(" ")[0].lower()


def blocks(path: Path) -> list[Block]:
    """Return the code blocks of the Markdown page ``path``, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    marker = None
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _FENCE.match(line)
        if match is None:
            marked = _MARKER.match(line)
            if marked is not None:
                marker = (marked["kind"], marked["arg"], index + 1)
            elif line.strip():
                marker = None
            index += 1
            continue
        fence = match["fence"]
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        language = _language(match["info"])
        if language is not None:
            kind, argument = (marker or ("", ""))[:2]
            text = "\n".join(lines[index + 1 : end]) + "\n"
            found.append(Block(path, index + 1, language, text, kind, argument))
        marker = None
        index = end + 1
    return found


def inline_code(path: Path) -> list[tuple[int, str]]:
    """Return ``(line, text)`` of every inline code span outside fenced blocks."""
    spans = []
    inside = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _FENCE.match(line)
        if inside is None and match is not None:
            inside = match["fence"]
            continue
        if inside is not None:
            if line.strip().startswith(inside):
                inside = None
            continue
        spans += [(number, span.strip()) for span in _INLINE.findall(line)]
    return spans
