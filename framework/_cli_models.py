"""``scaleprobe fit``, ``project`` and ``report``: parse, call the models, print."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np

__all__ = ["parse_cv", "parse_values", "register"]

BAD_INPUT = 2
FAILURE = 1


class _BadInputError(ValueError):
    """A user error reported as one line with exit code 2."""


def parse_values(text, *, integer=False):
    """Parse ``"4:1024"`` (doublings), ``"10:100:10"`` (a range) or ``"100,50,25"``.

    Examples
    --------
    >>> parse_values("4:32", integer=True).tolist()
    [4, 8, 16, 32]
    >>> parse_values("100,50").tolist()
    [100.0, 50.0]
    """
    try:
        if ":" in text:
            parts = [float(x) for x in text.split(":")]
            if len(parts) == 2:
                start, stop = parts
                if not 0 < start <= stop:
                    raise ValueError
                values = start * 2.0 ** np.arange(
                    int(np.floor(np.log2(stop / start))) + 1
                )
            elif len(parts) == 3:
                start, stop, step = parts
                if step <= 0:
                    raise ValueError
                values = np.arange(start, stop + step / 2, step)
            else:
                raise ValueError
        else:
            values = np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise _BadInputError(
            f"cannot read {text!r}: use START:STOP (doublings), "
            "START:STOP:STEP or a comma list"
        ) from None
    return values.round().astype(int) if integer else values


def parse_cv(specs):
    """Splitters from ``kfold[:K]``, ``extrapolation[:MAX]``, ``scale``, ``bandwidth``.

    Examples
    --------
    >>> sorted(parse_cv(["kfold:5", "extrapolation:8"]))
    ['extrapolation', 'kfold']
    """
    from scaleprobe.models import (
        ExtrapolationSplit,
        LeaveOneBandwidthOut,
        LeaveOneScaleOut,
    )
    from sklearn.model_selection import KFold

    out = {}
    for spec in specs:
        name, _, arg = spec.partition(":")
        try:
            if name == "kfold":
                out[name] = KFold(int(arg or 5), shuffle=True, random_state=0)
            elif name == "extrapolation":
                out[name] = ExtrapolationSplit(
                    "nodes", n_splits=2, train_max=float(arg) if arg else None
                )
            elif name == "scale":
                out[name] = LeaveOneScaleOut()
            elif name == "bandwidth":
                out[name] = LeaveOneBandwidthOut()
            else:
                raise ValueError
        except ValueError:
            raise _BadInputError(
                f"unknown cross-validation {spec!r}: use kfold[:K], "
                "extrapolation[:MAX_TRAIN_NODES], scale or bandwidth"
            ) from None
    return out


def _load(path):
    from .store import open_results

    if not Path(path).exists():
        raise _BadInputError(f"no results at {path}")
    return open_results(path)


def _ensemble(names, X, s0):
    from scaleprobe.models import PRESETS, PMNFSearch, ScalingLaw
    from scaleprobe.models.ensemble import default_ensemble

    if not names:
        return default_ensemble(X, s0=s0)
    allowed = [*sorted(PRESETS), "pmnf"]
    unknown = [n for n in names if n not in allowed]
    if unknown:
        raise _BadInputError(
            f"unknown model {unknown[0]!r}; allowed: {', '.join(allowed)}"
        )
    return {
        n: PMNFSearch(
            parameter="ranks",
            s0=s0,
            data="scale" in X and X["scale"].nunique() > 1,
            bandwidth=X["bandwidth"].nunique() > 1,
        )
        if n == "pmnf"
        else ScalingLaw(form=n, over="ranks", s0=s0)
        for n in names
    }


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


def _fit(args) -> int:
    from scaleprobe.models import make_features
    from scaleprobe.models.evaluation import evaluate, select_model, summarize
    from scaleprobe.models.intervals import conformal_interval
    from scaleprobe.models.serialization import save_models
    from sklearn.base import clone

    X, y = make_features(_load(args.results), target=args.target, s0=args.s0)
    models = _ensemble(args.model, X, args.s0)
    cv = parse_cv(args.cv or ["kfold:5", "extrapolation"])
    with _client(args) as client:
        scores = evaluate(
            models, (X, y), cv=cv, groupby=args.groupby, client=client, level=args.level
        )
    table = summarize(scores)
    print(
        table[
            ["model", "cv", "smape", "mape", "r2", "within_10", "coverage"]
        ].to_string(index=False, float_format=lambda v: f"{v:.4g}")
    )
    selected = select_model(
        scores, cv="extrapolation" if "extrapolation" in cv else next(iter(cv))
    )
    fitted = {name: clone(m).fit(X, y) for name, m in models.items()}
    intervals = {}
    if X["nodes"].nunique() >= 3:
        intervals = {
            name: conformal_interval(m, X, y, level=args.level)
            for name, m in models.items()
        }
    print(f"selected: {selected} ({' + '.join(_terms(fitted[selected]))})")
    if args.output:
        save_models(
            args.output,
            fitted,
            intervals=intervals,
            selected=selected,
            target=args.target,
        )
        print(f"models: {args.output}")
    return 0


def _terms(model):
    return getattr(model, "best_estimator_", model).terms_


def _project(args) -> int:
    from scaleprobe.models.plots import plot_projection, save_figure
    from scaleprobe.models.projection import project
    from scaleprobe.models.serialization import load_models

    if not Path(args.model_file).exists():
        raise _BadInputError(f"no model file at {args.model_file}")
    models, intervals, selected = load_models(args.model_file)
    name = args.name or selected
    if name not in models:
        raise _BadInputError(
            f"model {name!r} is not in {args.model_file}; it has {', '.join(models)}"
        )
    nodes = parse_values(args.nodes, integer=True)
    bandwidth = parse_values(args.bandwidth)
    scale = None if args.scale is None else parse_values(args.scale)
    result = project(
        models[name],
        nodes=nodes,
        bandwidth=bandwidth,
        scale=scale,
        ppn=args.ppn,
        interval=intervals.get(name),
    )
    view = result[["time_predicted", "time_lower", "time_upper", "teps_predicted"]]
    print(
        view.to_dataframe()
        .reset_index()
        .to_string(index=False, float_format=lambda v: f"{v:.4g}")
    )
    if args.output:
        output = Path(args.output)
        if output.suffix == ".zarr":
            result.to_zarr(output, mode="w")
        else:
            result.to_netcdf(output)
        print(f"projection: {output}")
    if args.plot:
        save_figure(plot_projection(result, title=f"{name} projection"), args.plot)
        print(f"plot: {args.plot}")
    return 0


def _report(args) -> int:
    from scaleprobe.models.report import write_report

    dataset = _load(args.results)
    from scaleprobe.models import make_features

    X, _ = make_features(dataset, target=args.target, s0=args.s0)
    models = _ensemble(args.model, X, args.s0) if args.model else None
    with _client(args) as client:
        path = write_report(
            dataset,
            args.output,
            models=models,
            cv=parse_cv(args.cv) if args.cv else None,
            client=client,
            target=args.target,
            s0=args.s0,
            level=args.level,
        )
    print(f"report: {path}")
    return 0


def _guarded(handler):
    def run(args) -> int:
        try:
            return handler(args)
        except (_BadInputError, FileNotFoundError) as error:
            print(f"scaleprobe: error: {error}", file=sys.stderr)
            return BAD_INPUT
        except ValueError as error:  # invalid data or parameters named by the library
            print(f"scaleprobe: error: {str(error).splitlines()[0]}", file=sys.stderr)
            return BAD_INPUT
        except Exception as error:
            print(
                f"scaleprobe: failed: {type(error).__name__}: {error}", file=sys.stderr
            )
            return FAILURE

    run.__doc__ = handler.__doc__
    return run


def _common(parser):
    parser.add_argument(
        "--model",
        action="append",
        metavar="NAME",
        help="ensemble member (repeatable): base, generalized, bandwidth, "
        "refined, generalized_refined, pmnf (default: every preset "
        "the data identify, plus pmnf)",
    )
    parser.add_argument(
        "--cv",
        action="append",
        metavar="SPEC",
        help="cross-validation (repeatable): kfold[:K], "
        "extrapolation[:MAX_TRAIN_NODES], scale, bandwidth "
        "(default: kfold:5 and extrapolation)",
    )
    parser.add_argument(
        "--target", default="time", help="variable to model (default: time)"
    )
    parser.add_argument(
        "--s0",
        type=float,
        default=25,
        help="reference scale of D = 2**(scale - s0) (default: 25)",
    )
    parser.add_argument(
        "--level",
        type=float,
        default=0.9,
        help="prediction-interval level (default: 0.9)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=int, help="workers of an embedded LocalCluster"
    )
    where.add_argument(
        "--address", help="scheduler address of an existing Dask cluster"
    )


def register(subparsers):
    """Add the ``fit``, ``project`` and ``report`` subcommands.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``; each subcommand sets ``handler(args) -> int``.
    """
    fit = subparsers.add_parser(
        "fit",
        help="cross-validate the model ensemble and save the fitted models",
        description="Fit every ensemble member to a results Dataset, print the "
        "cross-validation scores, select the best extrapolating model and "
        "save all of them as JSON.",
    )
    fit.add_argument("results", help="results path (.zarr or .nc)")
    _common(fit)
    fit.add_argument("--groupby", help="feature to evaluate separately (e.g. scale)")
    fit.add_argument("--output", help="model file to write (JSON)")
    fit.set_defaults(handler=_guarded(_fit))

    proj = subparsers.add_parser(
        "project",
        help="project a saved model to other node counts and bandwidths",
        description="Predict completion time (with interval) and TEPS over a grid of "
        "node counts, bandwidths and scales.",
    )
    proj.add_argument("model_file", metavar="MODEL", help="model file written by fit")
    proj.add_argument("--name", help="model in the file (default: the selected one)")
    proj.add_argument(
        "--nodes",
        required=True,
        help="node counts: START:STOP (doublings), START:STOP:STEP or a list",
    )
    proj.add_argument(
        "--bandwidth",
        default="100",
        help="bandwidth percentages, same forms (default: 100)",
    )
    proj.add_argument("--scale", help="problem scales, same forms")
    proj.add_argument(
        "--ppn", type=float, help="ranks per node (default: the model's or 1)"
    )
    proj.add_argument("--output", help="write the projection Dataset (.nc or .zarr)")
    proj.add_argument("--plot", help="write the projection figure (.png or .svg)")
    proj.set_defaults(handler=_guarded(_project))

    rep = subparsers.add_parser(
        "report",
        help="write an HTML or Markdown report of the models of a sweep",
        description="Evaluate the ensemble, select a model, project it and write a "
        "self-contained report with tables and figures.",
    )
    rep.add_argument("results", help="results path (.zarr or .nc)")
    _common(rep)
    rep.add_argument(
        "--output",
        default="report.html",
        help="report file, .html (self-contained) or .md (default: report.html)",
    )
    rep.set_defaults(handler=_guarded(_report))
