"""A report of a profile's fit: verdicts, findings and the series ranked at scale.

:func:`write_profile_report` writes Markdown (``.md``) or a self-contained HTML page
(``.html``): what was read and fitted, one line per finding, the series ranked at
:data:`REPORT_FACTOR` times the largest measured count (those that will dominate,
grow fastest, and those the data cannot tell, with the measurement that would), and
every series' law and verdict.
"""

from __future__ import annotations

import html
from pathlib import Path

from .nesting import describe
from .summary import (
    breaks_left_out,
    few_errors,
    findings,
    rank,
    reach_words,
    scale_words,
    series_count,
    verdict_words,
)

__all__ = ["REPORT_FACTOR", "write_profile_report"]

#: The report ranks the series this many times beyond the largest measured count.
REPORT_FACTOR = 8.0


def _markdown_table(headers, rows):
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        cells = [str(c).replace("|", "\\|") for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _html_table(headers, rows):
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
        for row in rows
    )
    return [f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"]


def _sections(fit, top, verbose):
    """The report as ``(heading, paragraphs, (headers, rows) or None)`` triples."""
    largest = max(float(m.x[-1]) for m in fit.models)
    target = REPORT_FACTOR * largest
    projection = fit.project([target])
    ranked = rank(projection, top=len(fit.models) if verbose else top)
    intro = [
        f"Source: {fit.source.get('path', '')} ({fit.source.get('format', '')}); "
        f"{series_count(fit)} series over {fit.axis}, fitted in {fit.seconds:.2f} s.",
        f"Verdicts: {verdict_words(fit)}.",
        f"{fit.level:.0%} intervals: {fit.calibration.get('kappa', 0):.3g} times "
        f"{scale_words(fit.calibration)}, from {fit.calibration.get('residuals', 0)} "
        "held-out errors over the profile"
        + reach_words(fit.calibration)
        + breaks_left_out(fit.calibration)
        + few_errors(fit.calibration)
        + ".",
    ]
    notes = [f.summary for f in findings(fit)] + list(fit.notes)
    found = projection.conflicts()
    if found:
        notes.append(describe(found, fit.axis, limit=len(found) if verbose else 3))
    value = ["series", "predicted", "lower", "upper", "growth", "status"]

    def values(rows):
        return [
            [
                r["series"],
                f"{r['predicted']:.4g}",
                f"{r['lower']:.4g}",
                f"{r['upper']:.4g}",
                f"{r['growth']:.3g}x",
                r["status"],
            ]
            for r in rows
        ]

    every = [
        [
            m.name,
            m.law.describe(m.coef),
            m.status,
            "-" if m.held_out is None else f"{m.held_out:.3g} %",
            m.reason,
        ]
        for m in fit.models
    ]
    unclear = ranked["cannot_tell"][: len(fit.models) if verbose else top]
    wide = (
        f"{len(ranked['cannot_tell'])} series: interval wider than 10x, or refused "
        "(not ranked above)."
    )
    return [
        ("Profile", intro, None),
        ("Findings", notes or ["Nothing to report."], None),
        (
            f"Will dominate at {target:g} {fit.axis}",
            [],
            (value, values(ranked["dominant"])),
        ),
        (
            f"Grow fastest up to {target:g} {fit.axis}",
            [],
            (value, values(ranked["fastest"])),
        ),
        (
            "The data cannot tell",
            [wide],
            (
                ["series", "what would tell"],
                [[r["series"], r["advice"]] for r in unclear],
            ),
        ),
        (
            "Every series",
            [],
            (["series", "law", "status", "held-out SMAPE", "why"], every),
        ),
    ]


def write_profile_report(fit, path, *, top=10, verbose=False):
    """Write the report of a profile's fit.

    Parameters
    ----------
    fit : ProfileFit
    path : str or Path
        ``.md`` for Markdown, ``.html`` for a self-contained page.
    top : int, default=10
        Rows of each ranked table.
    verbose : bool, default=False
        Every series in the ranked tables.

    Returns
    -------
    Path
    """
    path = Path(path)
    if path.suffix not in (".md", ".html"):
        raise ValueError(f"write the report as .md or .html; got {path.name!r}")
    as_html = path.suffix == ".html"
    lines = []
    title = f"Profile models: {Path(fit.source.get('path', 'profile')).name}"
    lines.append(f"<h1>{html.escape(title)}</h1>" if as_html else f"# {title}")
    for heading, paragraphs, table in _sections(fit, top, verbose):
        lines.append(
            f"<h2>{html.escape(heading)}</h2>" if as_html else f"\n## {heading}\n"
        )
        for text in paragraphs:
            lines.append(f"<p>{html.escape(text)}</p>" if as_html else f"{text}\n")
        if table is not None:
            lines += (_html_table if as_html else _markdown_table)(*table)
    text = "\n".join(lines) + "\n"
    if as_html:
        text = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(title)}</title><style>body{{font-family:sans-serif}}"
            "table{border-collapse:collapse}td,th{border:1px solid #ccc;"
            "padding:2px 6px}</style></head><body>\n" + text + "</body></html>\n"
        )
    path.write_text(text, encoding="utf-8")
    return path
