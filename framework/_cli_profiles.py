"""``scaleprobe fit``, ``project`` and ``report`` on profiles of many series.

A profile (Caliper, Hatchet, Score-P CUBE, Extra-P or CSV: every call path and
metric measured at several process counts) is fitted as a whole: one model per
series in one model file, fitted as one Dask graph. ``fit`` takes this path for a
profile given without the options that choose one series' ensemble (``--model``,
``--cv``, ``--callpath``, ``--select``, ``--groupby``); ``project`` and ``report``
for a profile's model file. The command only parses, calls the library and prints.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ._cli_inputs import (
    BadInputError,
    check_measurements,
    check_ppn,
    parse_values,
    writable,
)

__all__ = [
    "add_profile_arguments",
    "fit_profile_command",
    "project_profile_command",
    "report_profile_command",
    "takes_profile",
    "takes_profile_models",
]

# Options that ask for the ensemble of one series rather than a whole profile.
_SINGLE_SERIES = ("model", "cv", "callpath", "select", "groupby")


def add_profile_arguments(parser, command):
    """Add the options of a profile's commands to ``fit``, ``project`` or ``report``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    command : {"fit", "project", "report"}
    """
    group = parser.add_argument_group("profiles (many series: every call path)")
    group.add_argument(
        "--verbose",
        action="store_true",
        help="list every series and every series each warning concerns",
    )
    if command in ("project", "report"):
        group.add_argument(
            "--top",
            type=int,
            default=10,
            help="rows of each ranked table (default: 10)",
        )
    if command == "project":
        group.add_argument(
            "--ranks",
            help="rank counts to project to (same forms as --nodes); a model or "
            "profile measured over ranks needs no --ppn",
        )


def takes_profile(args):
    """Whether ``fit`` or ``report`` fits a whole profile rather than one series.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    bool
    """
    from scaleprobe.models.profiles import profile_format

    if any(getattr(args, name, None) for name in _SINGLE_SERIES):
        return False
    return Path(args.results).exists() and profile_format(args.results) is not None


def takes_profile_models(args):
    """Whether ``project`` reads a profile's model file."""
    from scaleprobe.models.profiles.result import is_profile_models

    return is_profile_models(args.model_file)


def _read(args):
    """The profile of ``args.results``, its metric chosen by ``--target``."""
    from scaleprobe.models.profiles import read_profile

    check_measurements(args.results)
    check_ppn(args.ppn)
    table = read_profile(
        args.results,
        ranks=args.ranks_from,
        nodes=args.nodes_from,
        ppn=args.ppn,
        units=args.units,
    )
    metrics = table.metrics
    if args.target in metrics:
        return table.select(metric=args.target)
    if args.target != "time":
        raise BadInputError(
            f"{args.results} has no metric {args.target!r}; its metrics: "
            f"{', '.join(metrics)}"
        )
    return table  # no metric named time: every metric is fitted


def _fit(args, client):
    from scaleprobe.models.profiles import fit_profile

    table = _read(args)
    return fit_profile(table, level=args.level, client=client)


def fit_profile_command(args, client_of, reported):
    """``scaleprobe fit PROFILE``: fit every series, print the verdicts, save.

    Parameters
    ----------
    args : argparse.Namespace
    client_of : callable
        ``client_of(args)``: the context manager of the Dask client (or None).
    reported : callable
        The context manager that prints the models' warnings once each.

    Returns
    -------
    int
    """
    from scaleprobe.models.profiles.summary import emit, render_fit

    writable(args.output, "--output")
    with reported(), client_of(args) as client:
        fit = _fit(args, client)
        emit(fit)
    print(render_fit(fit, verbose=args.verbose, warnings=False))
    if args.output:
        fit.save(args.output)
        print(f"models: {args.output} ({len(fit)} series)")
    return 0


# Options of one model's projection (``project`` of a sweep's models), with their
# defaults: a profile's projection has no scale, network, phase or figure.
_ONE_MODEL_OPTIONS = {
    "bandwidth": "100",
    "scale": None,
    "param": None,
    "link_bandwidth": None,
    "latency": None,
    "plot": None,
    "pattern": None,
    "stencil": None,
    "shape": None,
    "allocation": None,
    "machine_nodes": None,
    "allocation_seed": None,
    "nodes_per_switch": None,
    "switches_per_rack": None,
}


def _check_top(args):
    """``--top`` is a positive number of rows."""
    if args.top < 1:
        raise BadInputError(
            f"--top {args.top}: give the rows of each table as a positive integer"
        )


def _check_profile_options(args):
    """Refuse the options of one model's projection given for a profile's models."""
    given = [
        "--" + name.replace("_", "-")
        for name, default in _ONE_MODEL_OPTIONS.items()
        if getattr(args, name, default) != default
    ]
    if given:
        raise BadInputError(
            f"{', '.join(given)}: not for a profile's models ({args.model_file}); "
            "project a profile with --ranks or --nodes (with --ppn), --name, --top, "
            "--verbose and --output (.csv, .nc, .zarr)"
        )


def _counts(args, fit):
    """The counts of the profile's axis that ``--ranks`` or ``--nodes`` ask for."""
    ranks = getattr(args, "ranks", None)
    if ranks and args.nodes:
        raise BadInputError("give --ranks or --nodes, not both")
    if not (ranks or args.nodes):
        option = (
            fit.axis if fit.kind != "parameter" else f"ranks (values of {fit.axis})"
        )
        raise BadInputError(
            f"give the counts to project to: --{option} VALUES (START:STOP "
            "doublings, START:STOP:STEP or a list)"
        )
    values = parse_values(ranks or args.nodes)
    try:
        return fit.resolve(
            values, ranks=bool(ranks), nodes=bool(args.nodes), ppn=args.ppn
        )
    except ValueError as error:
        raise BadInputError(str(error)) from None


def project_profile_command(args):
    """``scaleprobe project MODELS`` for a profile: every series, ranked.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
    """
    from scaleprobe.models.profiles.result import load_profile_fit
    from scaleprobe.models.profiles.summary import render_ranking

    _check_profile_options(args)
    _check_top(args)
    writable(args.output, "--output")
    fit = load_profile_fit(args.model_file)
    at = _counts(args, fit)
    if args.name:
        fit.models = [fit.model(args.name)]
    projection = fit.project(at)
    print(render_ranking(projection, top=args.top, verbose=args.verbose))
    if args.output:
        _write(projection, Path(args.output))
    return 0


def _write(projection, output):
    if output.suffix in (".nc", ".zarr"):
        dataset = projection.to_dataset()
        if output.suffix == ".zarr":
            dataset.to_zarr(output, mode="w")
        else:
            dataset.to_netcdf(output)
    elif output.suffix == ".csv":
        projection.to_frame().to_csv(output, index=False)
    else:
        raise BadInputError(
            f"--output {output}: write a profile's projection as .csv, .nc or .zarr"
        )
    print(f"projection: {output}")


def report_profile_command(args, client_of, reported):
    """``scaleprobe report PROFILE``: fit, rank at the largest count times 8, and
    write a Markdown or HTML report.

    Returns
    -------
    int
    """
    from scaleprobe.models.profiles.report import write_profile_report
    from scaleprobe.models.profiles.summary import emit

    _check_top(args)
    if Path(args.output).suffix not in (".md", ".html"):
        raise BadInputError(
            f"--output {args.output}: write a profile's report as .md or .html"
        )
    writable(args.output, "--output")
    with reported(), client_of(args) as client:
        fit = _fit(args, client)
        emit(fit)
    path = write_profile_report(fit, args.output, top=args.top, verbose=args.verbose)
    print(f"report: {path}", file=sys.stdout)
    return 0
