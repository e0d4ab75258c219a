"""``scaleprobe fit``, ``project`` and ``report``: parse, call the models, print."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from ._cli_comm import (
    MODEL,
    add_fit_arguments,
    add_pattern_arguments,
    check_metrics_flag,
    fit_predictor,
    phase_model,
    project_phase,
)
from ._cli_inputs import (
    BAD_INPUT,
    FAILURE,
    OUTPUT_SUFFIXES,
    READABLE,
    BadInputError,
    check_figure_path,
    check_model_file,
    check_output_path,
    check_ppn,
    load_results,
    parse_cv,
    parse_percentages,
    parse_quantity,
    parse_values,
)
from ._cli_model_args import common_arguments, reported_warnings
from ._cli_profiles import (
    add_profile_arguments,
    fit_profile_command,
    project_profile_command,
    report_profile_command,
    takes_profile,
    takes_profile_models,
)
from ._progress import FitProgress

__all__ = ["parse_cv", "parse_values", "register"]


def _check_model_names(names):
    """Refuse an unknown ``--model`` before any data are read."""
    import difflib

    from scaleprobe.models import PRESETS

    allowed = sorted({*PRESETS, "pmnf", "traffic", "fim", "rbasp", MODEL})
    for name in names or ():
        if name not in allowed:
            close = difflib.get_close_matches(name, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise BadInputError(
                f"unknown model {name!r}; {hint}allowed: {', '.join(allowed)}"
            )


def _ensemble(names, X, s0):
    from scaleprobe.models import default_ensemble

    ensemble = default_ensemble(X, s0=s0)
    if not names:
        return ensemble
    from scaleprobe.models import PRESETS, ScalingLaw

    _check_model_names(names)
    over = "ranks" if "ranks" in X.columns else "nodes"
    chosen = {}
    for name in names:
        if name in ensemble:
            chosen[name] = ensemble[name]
        elif name in PRESETS:
            chosen[name] = ScalingLaw(form=name, over=over, s0=s0)
        elif name == "rbasp":
            from scaleprobe.models import RBASP

            chosen[name] = RBASP(over="ranks" if "ranks" in X.columns else over)
        else:
            needs = {
                "traffic": "the traffic model needs critical-path records of an "
                "emulated sweep",
                "fim": "FiM needs the records of an iterative.* or npb.* kernel",
                MODEL: f"fit it on its own: scaleprobe fit RESULTS --model {MODEL}",
            }
            raise BadInputError(
                f"model {name!r} does not apply to these data ({needs[name]})"
            )
    return chosen


@contextlib.contextmanager
def _client(args):
    if not (args.workers or args.address):
        yield None
        return
    from .cluster import cluster_client

    with cluster_client(
        address=args.address,
        workers=args.workers,
        dashboard_address=":0",
        announce=False,
    ) as client:
        yield client


def _features(args):
    from scaleprobe.models import make_features
    from scaleprobe.models.core.features import measurement_sets, nothing_measured

    check_ppn(args.ppn)
    dataset = load_results(args.results, args)
    if args.target not in dataset.data_vars and nothing_measured(dataset):
        raise BadInputError(
            f"{args.results}: {nothing_measured(dataset)}; `scaleprobe show "
            f"{args.results}` lists each point's error"
        )
    if args.target not in dataset.data_vars:
        raise BadInputError(
            f"{args.results} has no variable {args.target!r}; it has "
            f"{', '.join(sorted(map(str, dataset.data_vars)))}"
        )
    X, _ = make_features(
        dataset,
        target=args.target,
        s0=args.s0,
        ppn=args.ppn,
        **measurement_sets(dataset),
    )
    return dataset, X


def _fit(args) -> int:
    if takes_profile(args):  # every series of a profile: one model each
        return fit_profile_command(args, _client, reported_warnings)
    from scaleprobe.models import fit_ensemble, save_models

    check_output_path(args.output, "--output", OUTPUT_SUFFIXES["fit --output"])
    _check_model_names(args.model)
    check_metrics_flag(args)
    if args.model and MODEL in args.model:
        return fit_predictor(args, load_results(args.results, args))
    dataset, X = _features(args)
    column = "nodes" if "nodes" in X.columns else "ranks"
    models = _ensemble(args.model, X, args.s0)
    cv = parse_cv(args.cv, column) if args.cv else None
    with reported_warnings(), _client(args) as client, FitProgress():
        fit = fit_ensemble(
            dataset,
            models=models,
            cv=cv,
            target=args.target,
            level=args.level,
            s0=args.s0,
            ppn=args.ppn,
            client=client,
            groupby=args.groupby,
        )
    print(fit.describe())
    if args.output:
        save_models(args.output, fit)
        print(f"models: {args.output}")
    return 0


def _link(args):
    """The target network of ``project``: the unit parser, units required."""
    from .units import parse_bandwidth, parse_duration

    link = {
        "link_bandwidth": parse_quantity(
            args.link_bandwidth, "--link-bandwidth", parse_bandwidth
        ),
        "latency": parse_quantity(args.latency, "--latency", parse_duration),
    }
    return {key: value for key, value in link.items() if value is not None} or None


def _params(items, training):
    """``--param NAME=VALUES`` options, checked against the trained parameters."""
    trained = training.get("parameters") or {}
    params = {}
    for item in items or []:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise BadInputError(f"cannot read --param {item!r}: use NAME=VALUES")
        sizes = _class_sizes(training, name, text)
        if sizes is not None:  # NPB's class=A: the sizes it stands for
            params.update(sizes)
            continue
        if name not in trained:
            raise BadInputError(
                f"--param {name}: the models were not trained over {name!r}; their "
                f"application parameters: {', '.join(trained) or 'none'}"
            )
        params[name] = parse_values(text, option=f"--param {name}")
    return params


def _class_sizes(training, name, text):
    """``--param class=A`` of an ordered choice of the trained kernel: its sizes
    (:func:`~scaleprobe.models.core.ordered.class_sizes`), else None."""
    from scaleprobe.models.core.ordered import class_sizes, undeclared_sizes

    kernel = (training.get("provenance") or {}).get("kernel")
    values = [v.strip() for v in text.split(",") if v.strip()]
    try:
        sizes = class_sizes(kernel, name, values)
    except ValueError as error:
        raise BadInputError(str(error)) from None
    odd = undeclared_sizes(kernel, name, training.get("parameters") or {})
    if sizes is not None and odd:
        size, found = next(iter(odd.items()))
        raise BadInputError(
            f"--param {name}={text}: the models were trained on {size} no class "
            f"of {kernel} stands for ({found[0]:g}: points run at sizes of their "
            f"own, e.g. a step count of the user's), so a class's name would not "
            f"say what to project; give --param {size}=VALUE"
        )
    if sizes is not None and len(sizes) > 1 and len(values) > 1:
        raise BadInputError(
            f"--param {name}: one class at a time ({kernel}'s classes stand for "
            f"{', '.join(sizes)} together)"
        )
    return sizes


def _project_inputs(args):
    """Every argument of ``project`` parsed and checked, before the model file is
    read or anything is computed."""
    check_model_file(args.model_file)
    check_output_path(args.output, "--output", OUTPUT_SUFFIXES["project --output"])
    check_figure_path(args.plot)
    ranks = getattr(args, "ranks", None)
    if ranks and args.nodes:
        raise BadInputError("give --ranks or --nodes, not both")
    if not (ranks or args.nodes):
        raise BadInputError("give the counts to project to: --nodes or --ranks VALUES")
    asked = "ranks" if ranks else "nodes"
    return {
        asked: parse_values(ranks or args.nodes, integer=True, option=f"--{asked}"),
        "bandwidth": parse_percentages(args.bandwidth),
        "scale": None
        if args.scale is None
        else parse_values(args.scale, option="--scale"),
        "link": _link(args),
    }


def _project(args) -> int:
    check_model_file(args.model_file)
    check_ppn(args.ppn)
    if takes_profile_models(args):  # a profile's models: every series, ranked
        return project_profile_command(args)
    from scaleprobe.models import load_models

    inputs = _project_inputs(args)
    fit = load_models(args.model_file)
    name = _projected_name(args, fit)
    if name == MODEL:
        if "nodes" not in inputs:
            raise BadInputError(f"{MODEL} predicts at node counts: give --nodes")
        return project_phase(args, fit, name, inputs["nodes"])
    with reported_warnings():
        result = fit.project(
            # the trusted model unless one was named: it may then hand a size it
            # cannot reach to the next plausible model (which the output names)
            name if name != fit.selected or args.name else None,
            params=_params(args.param, fit.training),
            ppn=args.ppn,
            **inputs,
        )
    _print_projection(fit, result)
    _write_projection(args, result)
    return 0


def _projected_name(args, fit):
    """The model ``project`` projects: named, the phase predictor, or the trusted."""
    name = args.name or phase_model(args, fit) or fit.selected
    if name is None:
        raise BadInputError(
            f"{args.model_file} has no trusted model ({fit.verdict.reason}); choose "
            f"one with --name from {', '.join(fit.models)} if you still want its "
            "projection"
        )
    if name not in fit.models:
        raise BadInputError(
            f"model {name!r} is not in {args.model_file}; it has "
            f"{', '.join(fit.models)}"
        )
    return name


def _print_projection(fit, result):
    """The law, the table, where the data cannot tell, then the verdict."""
    from scaleprobe.models import render_verdict

    target = fit.training.get("target", "time")
    columns = [f"{target}_predicted", f"{target}_lower", f"{target}_upper"]
    columns += [c for c in (f"{target}_floor", "teps_predicted") if c in result]
    table = result[columns]
    ranges = fit.training.get("feature_ranges", {"bandwidth": None})
    if "bandwidth" not in ranges and "bandwidth" in table.dims:
        table = table.isel(bandwidth=0, drop=True)  # the data have no such axis
    print(f"{result.attrs['model_name']}: {result.attrs['law']}")
    print(
        table.to_dataframe()
        .reset_index()
        .to_string(index=False, float_format=lambda v: f"{v:.4g}")
    )
    for line in (fit.unchecked_message(result), fit.cannot_tell_message(result)):
        if line:
            print(line)
    print()
    print(render_verdict(fit.verdict))


def _write_projection(args, result):
    """The projection Dataset and its figure, where asked."""
    if args.output:
        output = Path(args.output)
        if output.suffix == ".zarr":
            result.to_zarr(output, mode="w")
        elif output.suffix == ".csv":
            table = result.drop_dims("term", errors="ignore").to_dataframe()
            table.to_csv(output)
        else:
            result.to_netcdf(output)
        print(f"projection: {output}")
    if args.plot:
        from scaleprobe.models.report.plots import plot_projection, save_figure

        title = f"{result.attrs['model_name']} projection"
        save_figure(plot_projection(result, title=title), args.plot)
        print(f"plot: {args.plot}")


def _report(args) -> int:
    if takes_profile(args):  # every series of a profile, ranked at scale
        return report_profile_command(args, _client, reported_warnings)
    from scaleprobe.models.report.document import write_report

    check_output_path(args.output, "--output", OUTPUT_SUFFIXES["report --output"])
    _check_model_names(args.model)
    dataset, X = _features(args)
    column = "nodes" if "nodes" in X.columns else "ranks"
    models = _ensemble(args.model, X, args.s0) if args.model else None
    with reported_warnings(), _client(args) as client, FitProgress():
        path = write_report(
            dataset,
            args.output,
            models=models,
            cv=parse_cv(args.cv, column) if args.cv else None,
            client=client,
            target=args.target,
            s0=args.s0,
            level=args.level,
            ppn=args.ppn,
            verdict_to=sys.stdout,
        )
    print(f"report: {path}")
    return 0


def _guarded(handler):
    def run(args) -> int:
        try:
            return handler(args)
        except (BadInputError, FileNotFoundError) as error:
            print(f"scaleprobe: error: {error}", file=sys.stderr)
            return BAD_INPUT
        except ValueError as error:  # invalid data or parameters named by the library
            print(f"scaleprobe: error: {str(error).splitlines()[0]}", file=sys.stderr)
            return BAD_INPUT
        except Exception as error:
            if getattr(args, "debug", False):
                raise
            print(
                f"scaleprobe: failed: {type(error).__name__}: {error}", file=sys.stderr
            )
            return FAILURE

    run.__doc__ = handler.__doc__
    return run


def register(subparsers):
    """Add the ``fit``, ``project`` and ``report`` subcommands.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``; each subcommand sets ``handler(args) -> int``.
    """
    _add_fit(subparsers)
    _add_project(subparsers)
    _add_report(subparsers)


def _add_fit(subparsers):
    fit = subparsers.add_parser(
        "fit",
        help="cross-validate the model ensemble and save the fitted models",
        description="Fit every model the data identify, print their extrapolation "
        "scores next to the naive baseline, say which one scaleprobe trusts (or "
        "that none can be trusted) and save them all as JSON.",
    )
    fit.add_argument(
        "results",
        help=f"what to fit: {READABLE}",
    )
    common_arguments(fit)
    fit.add_argument("--groupby", help="feature to evaluate separately (e.g. scale)")
    fit.add_argument("--output", help="model file to write (JSON)")
    add_fit_arguments(fit)
    add_profile_arguments(fit, "fit")
    fit.set_defaults(handler=_guarded(_fit))


def _add_project(subparsers):
    proj = subparsers.add_parser(
        "project",
        help="project a saved model to other node counts, bandwidths and networks",
        description="Predict completion time with its interval, the latency floor "
        "and TEPS over a grid of node counts, bandwidths and scales, on the "
        "training network or another one.",
    )
    proj.add_argument("model_file", metavar="MODEL", help="model file written by fit")
    proj.add_argument("--name", help="model in the file (default: the trusted one)")
    proj.add_argument(
        "--nodes",
        help="node counts: START:STOP (doublings), START:STOP:STEP or a list",
    )
    proj.add_argument(
        "--bandwidth",
        default="100",
        help="bandwidth percentages, same forms (default: 100)",
    )
    proj.add_argument("--scale", help="problem scales, same forms")
    proj.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUES",
        help="an application parameter the models were trained over (a sweep key "
        "such as points or msg_bytes), same forms (repeatable; default: its "
        "measured values)",
    )
    proj.add_argument(
        "--ppn", type=float, help="ranks per node (default: the trained one)"
    )
    proj.add_argument(
        "--link-bandwidth",
        help="bandwidth of the target network's links, e.g. '100 Gbit/s' "
        "(default: the training link)",
    )
    proj.add_argument(
        "--latency",
        help="latency of the target network, e.g. '1 us' (traffic model only)",
    )
    proj.add_argument("--output", help="write the projection Dataset (.nc or .zarr)")
    proj.add_argument("--plot", help="write the projection figure (.png or .svg)")
    add_pattern_arguments(proj)
    add_profile_arguments(proj, "project")
    proj.set_defaults(handler=_guarded(_project))


def _add_report(subparsers):
    rep = subparsers.add_parser(
        "report",
        help="write an HTML or Markdown report of the models of a sweep",
        description="Fit the ensemble, say which model is trusted and why, project "
        "it over measured points and write a self-contained report.",
    )
    rep.add_argument(
        "results",
        help=f"what to fit: {READABLE}",
    )
    common_arguments(rep)
    rep.add_argument(
        "--output",
        default="report.html",
        help="report file, .html (self-contained) or .md (default: report.html)",
    )
    add_profile_arguments(rep, "report")
    rep.set_defaults(handler=_guarded(_report))
