"""Sphinx directives that generate scaleprobe's references from the code itself.

Three references must never be typed out by hand, because they describe what the code
accepts:

``scaleprobe-cli``
    Every command of ``scaleprobe``, read from the argparse parser that
    :func:`scaleprobe.framework.cli.build_parser` returns: usage, description and each
    option with its default and choices.
``scaleprobe-spec``
    Every key of a campaign spec, read from ``scaleprobe.framework.spec.SPEC_SCHEMA``
    (entries with ``name``, ``type``, ``default``, ``required``, ``help``).
``scaleprobe-kernel NAME`` and ``scaleprobe-kernels``
    A kernel's parameters, minimum ranks and record fields, read from its declaration
    (``scaleprobe.kernels.registry.kernel_declaration(name)``), and the table of every
    registered kernel, which also checks that each has a page.

A generator whose source is missing fails the build with one error naming what it
needs: a reference that silently falls back to a hand-typed copy would drift from the
code it describes.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

#: The folder of the kernel pages, relative to the documentation's source folder.
KERNEL_PAGES = "kernels"

# ----------------------------------------------------------------------------- nodes


def _paragraph(text: str) -> nodes.paragraph:
    return nodes.paragraph(text, text)


def _cell(content) -> nodes.entry:
    entry = nodes.entry()
    if isinstance(content, nodes.Node):
        entry += content
    elif content not in (None, ""):
        entry += _paragraph(str(content))
    return entry


def _literal_cell(text: str) -> nodes.entry:
    paragraph = nodes.paragraph()
    paragraph += nodes.literal(text, text)
    return _cell(paragraph)


def table(headers: list[str], rows: list[list], widths: list[int]) -> nodes.table:
    """Return a docutils table; a cell is a string, a node, or ``None`` (empty)."""
    group = nodes.tgroup(cols=len(headers))
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head_row = nodes.row()
    for header in headers:
        head_row += _cell(header)
    head += head_row
    group += head
    body = nodes.tbody()
    for values in rows:
        row = nodes.row()
        for value in values:
            row += value if isinstance(value, nodes.entry) else _cell(value)
        body += row
    group += body
    result = nodes.table(classes=["scaleprobe-reference"])
    result += group
    return result


def _section(directive: SphinxDirective, title: str, ident: str) -> nodes.section:
    section = nodes.section(
        ids=[nodes.make_id(ident)], names=[nodes.fully_normalize_name(ident)]
    )
    section += nodes.title(title, title)
    directive.state.document.note_implicit_target(section, section)
    return section


def _missing(what: str, needed_for: str) -> ExtensionError:
    return ExtensionError(
        f"{what} is missing: the {needed_for} is generated from it and is never typed "
        "out by hand; add it to the code (see docs/_ext/scaleprobe_docs.py)"
    )


def _field(entry, name: str):
    """Read ``name`` from an entry that is an object or a mapping."""
    if isinstance(entry, dict):
        return entry.get(name)
    return getattr(entry, name, None)


def _shown(value) -> str:
    if value is None:
        return ""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown(item) for item in value)
    return str(value)


class _GeneratedDirective(SphinxDirective):
    """A directive whose content comes from the code; a missing source is an error."""

    def failed(self, error: Exception) -> list[nodes.Node]:
        """Log ``error`` at this directive's location (an error under ``-W``)."""
        from sphinx.util import logging

        logging.getLogger(__name__).error(
            f"{type(error).__name__}: {error}", location=self.get_location()
        )
        return []


# ------------------------------------------------------------------------------- cli


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, object]]:
    """The ``(name, help, parser)`` of every subcommand of ``parser``, in order."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            found += [
                (name, helps.get(name, ""), sub) for name, sub in action.choices.items()
            ]
    return found


def _option_rows(parser: argparse.ArgumentParser) -> list[list]:
    """One row per argument: the flags, what it takes, its default, its help."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flags = ", ".join(action.option_strings) or action.metavar or action.dest
        takes = ""
        if action.choices is not None:
            takes = " | ".join(str(choice) for choice in action.choices)
        elif action.nargs != 0 and action.option_strings:
            takes = action.metavar or action.dest.upper()
        default = action.default
        if default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
            default = ""
        help_text = formatter._expand_help(action) if action.help else ""
        rows.append([_literal_cell(flags), takes, _shown(default), help_text])
    return rows


def _command_section(directive, prog: str, parser, summary: str) -> nodes.section:
    section = _section(directive, prog, f"cli-{prog}")
    if summary:
        section += _paragraph(summary[0].upper() + summary[1:] + ".")
    usage = parser.format_usage().removeprefix("usage: ").strip()
    section += nodes.literal_block(usage, usage, language="text")
    if parser.description:
        section += _paragraph(parser.description)
    rows = _option_rows(parser)
    if rows:
        section += table(
            ["argument", "takes", "default", "meaning"], rows, [22, 18, 12, 48]
        )
    return section


class CliDirective(_GeneratedDirective):
    """Document ``scaleprobe`` and every subcommand from the argparse parser."""

    def run(self) -> list[nodes.Node]:
        """Build one section per command from ``build_parser()``."""
        import os

        try:
            cli = importlib.import_module("scaleprobe.framework.cli")
            build_parser = cli.build_parser
        except (ImportError, AttributeError):
            return self.failed(
                _missing("scaleprobe.framework.cli.build_parser", "CLI reference")
            )
        previous = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "88"  # argparse wraps the usage to the terminal
        try:
            parser = build_parser()
            result = [_command_section(self, parser.prog, parser, "")]
            for name, summary, sub in _subcommands(parser):
                result.append(
                    _command_section(self, f"{parser.prog} {name}", sub, summary)
                )
        finally:
            if previous is None:
                os.environ.pop("COLUMNS")
            else:
                os.environ["COLUMNS"] = previous
        return result


# ------------------------------------------------------------------------------ spec


def spec_schema():
    """Return ``scaleprobe.framework.spec.SPEC_SCHEMA``; raise naming it if missing."""
    spec = importlib.import_module("scaleprobe.framework.spec")
    schema = getattr(spec, "SPEC_SCHEMA", None)
    if schema is None:
        raise _missing("scaleprobe.framework.spec.SPEC_SCHEMA", "spec reference")
    return tuple(schema)


class SpecDirective(_GeneratedDirective):
    """Document every key of a campaign spec from ``SPEC_SCHEMA``, by top key."""

    def run(self) -> list[nodes.Node]:
        """Build one table per top-level key that has sub-keys, one for the rest."""
        try:
            schema = spec_schema()
        except ExtensionError as error:
            return self.failed(error)
        groups: dict[str, list] = {}
        for entry in schema:
            name = str(_field(entry, "name"))
            top = name.split(".", 1)[0] if "." in name else ""
            groups.setdefault(top, []).append(entry)
        result = []
        for top, entries in groups.items():
            title = f"{top}" if top else "top-level keys"
            section = _section(self, title, f"spec-{top or 'top-level'}")
            rows = [
                [
                    _literal_cell(str(_field(entry, "name"))),
                    _shown(_field(entry, "type")),
                    "yes" if _field(entry, "required") else "",
                    _shown(_field(entry, "default")),
                    _shown(_field(entry, "help")),
                ]
                for entry in entries
            ]
            section += table(
                ["key", "type", "required", "default", "meaning"],
                rows,
                [24, 12, 8, 14, 42],
            )
            result.append(section)
        return result


# --------------------------------------------------------------------------- kernels


def kernel_declaration(name: str):
    """Return kernel ``name``'s declaration, or raise naming what is missing."""
    registry = importlib.import_module("scaleprobe.kernels.registry")
    declare = getattr(registry, "kernel_declaration", None)
    if declare is None:
        raise _missing(
            "scaleprobe.kernels.registry.kernel_declaration", f"kernel page of {name!r}"
        )
    return declare(name)


def _range(parameter) -> str:
    choices = _field(parameter, "choices")
    if choices:
        return " | ".join(str(choice) for choice in choices)
    low, high = _field(parameter, "minimum"), _field(parameter, "maximum")
    if low is None and high is None:
        return ""
    return f"{'' if low is None else low} .. {'' if high is None else high}"


def _parameter_rows(declaration) -> list[list]:
    rows = []
    for parameter in _field(declaration, "parameters") or ():
        name = str(_field(parameter, "name"))
        rows.append(
            [
                _literal_cell(name),
                _literal_cell("--" + name.replace("_", "-")),
                _shown(_field(parameter, "kind")),
                _shown(_field(parameter, "default")),
                _shown(_field(parameter, "unit")),
                _range(parameter),
                _shown(_field(parameter, "help")),
            ]
        )
    return rows


def _metric_rows(declaration) -> list[list]:
    return [
        [
            _literal_cell(str(_field(metric, "name"))),
            _shown(_field(metric, "unit")),
            _shown(_field(metric, "long_name")),
        ]
        for metric in _field(declaration, "metrics") or ()
    ]


class KernelDirective(_GeneratedDirective):
    """Document one kernel's declaration: summary, how to run it, parameters, record."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        """Build the generated half of a kernel page."""
        name = self.arguments[0]
        try:
            declaration = kernel_declaration(name)
            module = importlib.import_module(
                "scaleprobe.kernels.registry"
            ).kernel_module(name)
        except Exception as error:
            return self.failed(error)
        result = [_paragraph(_shown(_field(declaration, "summary")))]
        for block in _shown(_field(declaration, "description")).split("\n\n"):
            if block.strip():
                result.append(_paragraph(" ".join(block.split())))
        min_ranks = _field(declaration, "min_ranks") or 1
        line = f"mpiexec -n {max(int(min_ranks), 1)} python -m {module} --help"
        result.append(_paragraph(f"Minimum ranks: {min_ranks}. Run it by hand:"))
        result.append(nodes.literal_block(line, line, language="text"))
        parameters = _section(self, "Parameters", f"{name}-parameters")
        parameters += _paragraph(
            "Set in a spec's params (or swept under sweep), by the key in the first "
            "column; the launch passes it as the flag in the second."
        )
        parameters += table(
            ["key", "flag", "kind", "default", "unit", "range", "meaning"],
            _parameter_rows(declaration),
            [14, 16, 8, 10, 8, 12, 32],
        )
        record = _section(self, "Record fields", f"{name}-record")
        record += _paragraph(
            "Besides the fields every record has, this kernel reports (one data "
            "variable each in the campaign's Dataset):"
        )
        record += table(
            ["field", "unit", "long name"], _metric_rows(declaration), [24, 12, 64]
        )
        return [*result, parameters, record]


def _doc_link(target: str, text: str):
    from sphinx import addnodes

    reference = addnodes.pending_xref(
        "", refdomain="std", reftype="doc", reftarget=target, refexplicit=True
    )
    reference += nodes.inline(text, text)
    paragraph = nodes.paragraph()
    paragraph += reference
    return paragraph


class KernelIndexDirective(_GeneratedDirective):
    """Tabulate every registered kernel and check that each has a page of its own."""

    def run(self) -> list[nodes.Node]:
        """Build the table; a kernel without a page (or the reverse) is an error."""
        registry = importlib.import_module("scaleprobe.kernels.registry")
        names = registry.kernel_names()
        folder = Path(self.env.srcdir) / KERNEL_PAGES
        pages = {path.stem for path in folder.glob("*.md")} - {"index", "external"}
        unpaged = sorted(set(names) - pages)
        stray = sorted(pages - set(names))
        if unpaged or stray:
            return self.failed(
                ValueError(
                    f"kernels without a page in docs/{KERNEL_PAGES}/: {unpaged}; pages "
                    f"without a registered kernel: {stray}"
                )
            )
        rows = []
        for name in names:
            try:
                declaration = kernel_declaration(name)
            except Exception as error:
                return self.failed(error)
            rows.append(
                [
                    _cell(_doc_link(f"/{KERNEL_PAGES}/{name}", name)),
                    _shown(_field(declaration, "min_ranks")),
                    _shown(_field(declaration, "summary")),
                ]
            )
        return [table(["kernel", "min. ranks", "what it measures"], rows, [22, 10, 68])]


def setup(app) -> dict:
    """Register the directives."""
    app.add_directive("scaleprobe-cli", CliDirective)
    app.add_directive("scaleprobe-spec", SpecDirective)
    app.add_directive("scaleprobe-kernel", KernelDirective)
    app.add_directive("scaleprobe-kernels", KernelIndexDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
