"""``scaleprobe fit --model commpredictor`` and ``project`` of a phase: parse, print.

``fit`` trains :class:`~scaleprobe.models.CommunicationPredictor` on a benchmark's
results (the pattern metrics of every point and its ``exchange_time``), scores it on
held-out node counts like every model and saves it in a model file. ``--metrics``
chooses what the term selection sees: ``paper``, the paper's 13 metrics alone;
``paper+ntmax``, those and ``NTmax``, the busiest node's inter-node bytes;
``paper+ntmax+swtmax``, those and ``SWTmax``, the busiest switch's inter-switch
bytes (:data:`~scaleprobe.kernels.comm.pattern.EXTRA_METRICS`); a set is refused
when a successful point lacks one of its metrics. ``auto`` (the default) adds
``NTmax`` when every successful point recorded it (results of an older benchmark
may not); ``SWTmax`` only when asked for (on SMPI's fat tree it halved the error of
area II on random allocations and multiplied that of area Ia: see the validation
pages). ``project`` reads
that file and predicts the communication time of a described phase — a stencil of a
given domain, or a pattern file — at the node counts, ranks per node and allocation
given on the command line, ahead of execution.
"""

from __future__ import annotations

from ._cli_inputs import BadInputError, parse_cv
from ._cli_model_args import reported_warnings

__all__ = [
    "METRIC_SETS",
    "add_fit_arguments",
    "add_pattern_arguments",
    "check_metrics_flag",
    "fit_predictor",
    "phase_model",
    "project_phase",
]

MODEL = "commpredictor"

#: Choices of ``fit --metrics``: the metrics the predictor's terms come from.
METRIC_SETS = ("auto", "paper", "paper+ntmax", "paper+ntmax+swtmax")

#: The metrics beyond the paper's 13 that each set adds (``auto``: those of them
#: every successful point recorded).
_SET_EXTRAS = {
    "auto": ("NTmax",),
    "paper": (),
    "paper+ntmax": ("NTmax",),
    "paper+ntmax+swtmax": ("NTmax", "SWTmax"),
}


def add_fit_arguments(parser) -> None:
    """Add the ``fit`` flag of the communication predictor, ``--metrics``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    """
    parser.add_argument(
        "--metrics",
        choices=METRIC_SETS,
        help="with --model commpredictor: 'paper', the 13 metrics of Papadopoulou "
        "et al. 2015 alone; 'paper+ntmax', those and the busiest node's bytes NTmax; "
        "'paper+ntmax+swtmax', also the busiest switch's inter-switch bytes SWTmax "
        "(every point must have recorded them); 'auto' (default), NTmax when every "
        "point recorded it",
    )


def check_metrics_flag(args) -> None:
    """Refuse ``--metrics`` for a fit that is not the communication predictor's.

    Parameters
    ----------
    args : argparse.Namespace
        Of ``scaleprobe fit``.

    Raises
    ------
    BadInputError
        ``--metrics`` given without ``--model commpredictor``.
    """
    if getattr(args, "metrics", None) and MODEL not in (args.model or ()):
        raise BadInputError(
            f"--metrics {args.metrics} chooses the communication predictor's "
            f"metrics: use it with --model {MODEL}"
        )


def add_pattern_arguments(parser) -> None:
    """Add the phase and mapping flags of ``project`` for the communication predictor.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    """
    group = parser.add_argument_group(
        "communication predictor (a model fitted with --model commpredictor)"
    )
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--pattern",
        help="YAML description of the phase (pattern and "
        "mapping, see scaleprobe.models.commpredictor.patterns)",
    )
    where.add_argument(
        "--stencil",
        choices=("jacobi3d", "advection3d"),
        help="the phase of a stencil kernel (with --shape)",
    )
    group.add_argument("--shape", help="global domain of --stencil, e.g. 512,512,512")
    group.add_argument(
        "--allocation",
        choices=("compact", "random"),
        help="placement of the nodes on the machine (default compact)",
    )
    group.add_argument(
        "--machine-nodes",
        type=int,
        help="nodes of the machine the allocation is placed on",
    )
    group.add_argument("--allocation-seed", type=int, help="seed of a random one")
    group.add_argument("--nodes-per-switch", type=int, help="default 18")
    group.add_argument("--switches-per-rack", type=int, help="default: one rack")


def phase_model(args, fit):
    """The predictor ``project`` uses for ``--stencil``/``--pattern``, or None.

    Parameters
    ----------
    args : argparse.Namespace
    fit : EnsembleFit

    Returns
    -------
    str or None
    """
    if (args.stencil or args.pattern) and MODEL in fit.models:
        return MODEL
    return None


def fit_predictor(args, dataset):
    """Fit, score and save the predictor; return the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        Of ``scaleprobe fit``.
    dataset : xarray.Dataset
        The results.

    Returns
    -------
    int

    Raises
    ------
    BadInputError
        Another model named beside it, results without the pattern metrics, or
        ``--metrics paper+ntmax`` (``paper+ntmax+swtmax``) on results without
        ``NTmax`` (or ``SWTmax``).
    """
    from scaleprobe.models import CommunicationPredictor, fit_ensemble, save_models

    if args.model != [MODEL]:
        raise BadInputError(
            f"--model {MODEL} is fitted on its own, not with "
            f"{', '.join(m for m in args.model if m != MODEL)}"
        )
    target = args.target
    if target == "time" and "exchange_time" in dataset.data_vars:
        target = "exchange_time"  # the benchmark's phase time, not the whole run
    X, y = _training_rows(dataset, target, getattr(args, "metrics", None) or "auto")
    with reported_warnings():
        fit = fit_ensemble(
            (X.assign(nodes=X["N"]), y),
            models={MODEL: CommunicationPredictor()},
            target=target,
            cv=parse_cv(args.cv, "nodes") if args.cv else None,
        )
    print(fit.describe())
    if args.output:
        save_models(args.output, fit)
        print(f"models: {args.output}")
    return 0


def _training_rows(dataset, target, metrics):
    """The metrics ``--metrics`` chooses and the target of every successful point."""
    from scaleprobe.kernels.comm.pattern import METRICS
    from scaleprobe.models.commpredictor.patterns import benchmark_frame

    try:
        X, y = benchmark_frame(dataset, target)
    except ValueError as error:
        raise BadInputError(str(error)) from None
    wanted = _SET_EXTRAS[metrics]
    lacking = [name for name in wanted if not _recorded(dataset, target, name, X)]
    if metrics != "auto" and lacking:
        it = "it" if len(lacking) == 1 else "them"
        raise BadInputError(
            f"--metrics {metrics} needs {', '.join(lacking)} recorded by every "
            f"successful point; these results lack {it}: use --metrics paper (or auto)"
        )
    extras = [name for name in wanted if name not in lacking]
    if extras:
        X, _ = benchmark_frame(dataset, target, columns=[*METRICS, *extras])
    paper = f"the paper's {len(METRICS)} metrics"
    if metrics == "paper":
        note = f"--metrics paper: {paper} only"
    elif extras:
        note = f"{paper} and {', '.join(extras)}"
        if lacking:
            note += f" ({', '.join(lacking)} not recorded by every one)"
    else:
        note = f"{', '.join(lacking)} not recorded by every one: {paper} only"
    print(
        f"{MODEL}: {len(y)} measurements of {target!r}, nodes "
        f"{sorted(int(n) for n in X['N'].unique())}; {note}"
    )
    return X, y


def _recorded(dataset, target, name, X) -> bool:
    """Whether every successful point of ``X`` recorded the metric ``name``."""
    from scaleprobe.models.commpredictor.patterns import benchmark_frame

    if name not in dataset.data_vars:
        return False
    wider, _ = benchmark_frame(dataset, target, columns=[*X.columns, name])
    return len(wider) == len(X)


def _positive_times(predicted):
    """The predicted times with those not above zero (a law carried beyond its
    training rows; :meth:`predict` warned) set to NaN, and how many they were."""
    import numpy as np

    predicted = np.asarray(predicted, dtype=float)
    unknown = ~(predicted > 0)
    return np.where(unknown, np.nan, predicted), int(unknown.sum())


def _description(args):
    mapping = {"ppn": int(args.ppn) if args.ppn else 1}
    for key in ("allocation", "machine_nodes", "nodes_per_switch", "switches_per_rack"):
        if getattr(args, key, None) is not None:
            mapping[key] = getattr(args, key)
    if args.allocation_seed is not None:
        mapping["seed"] = args.allocation_seed
    if args.pattern:
        import yaml

        try:
            with open(args.pattern) as handle:
                description = yaml.safe_load(handle)
        except OSError as error:
            raise BadInputError(
                f"cannot read --pattern {args.pattern}: {error.strerror}"
            ) from None
        if not isinstance(description, dict):
            raise BadInputError(f"{args.pattern} is not a pattern description")
        given = description.get("mapping") or {}
        return {
            **description,
            "mapping": {
                **given,
                **{k: v for k, v in mapping.items() if k != "ppn" or args.ppn},
            },
        }
    try:
        shape = [int(n) for n in (args.shape or "").split(",")]
    except ValueError:
        shape = []
    if len(shape) != 3 or min(shape) < 1:
        raise BadInputError(
            f"--stencil needs --shape NX,NY,NZ (three positive integers), "
            f"got {args.shape!r}"
        )
    return {"pattern": {"stencil": args.stencil, "shape": shape}, "mapping": mapping}


def project_phase(args, fit, name, nodes):
    """Predict a described phase at the given node counts; return the exit code.

    Parameters
    ----------
    args : argparse.Namespace
        Of ``scaleprobe project``.
    fit : EnsembleFit
        The loaded model file.
    name : str
        The predictor's name in it.
    nodes : numpy.ndarray of int
        Node counts.

    Returns
    -------
    int
    """
    from scaleprobe.kernels.comm.pattern import EXTRA_METRICS, METRICS
    from scaleprobe.models import render_verdict
    from scaleprobe.models.commpredictor.patterns import pattern_table

    if not (args.pattern or args.stencil):
        raise BadInputError(
            f"{name} predicts a communication phase: describe it with "
            "--stencil jacobi3d|advection3d --shape NX,NY,NZ or --pattern "
            "FILE"
        )
    model = fit.models[name]
    try:
        table = pattern_table(
            _description(args),
            nodes,
            columns=[
                str(name)
                for name in model.feature_names_in_
                if name in (*METRICS, *EXTRA_METRICS)
            ],
        )
    except ValueError as error:
        raise BadInputError(str(error)) from None
    frame = table.assign(nodes=table["N"])
    with reported_warnings():
        predicted = model.predict(frame[list(model.feature_names_in_)])
    table["area"] = model.area_names(frame[list(model.feature_names_in_)])
    table["time_predicted"], unknown = _positive_times(predicted)
    what = (
        f"--stencil {args.stencil} --shape {args.shape}"
        if args.stencil
        else (f"--pattern {args.pattern}")
    )
    print(f"{name}: communication time of {what} ahead of execution")
    columns = ["N", "PPN", "S", "M", "NT", "NTmax", "SW", "SWTmax", "R", "area"]
    columns = [name for name in columns if name in table] + ["time_predicted"]
    print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if unknown:
        print(
            f"{unknown} of {len(table)} rows: the law gives no positive time there, "
            "beyond what the benchmark covered: cannot tell (time_predicted NaN)"
        )
    print()
    print(render_verdict(fit.verdict))
    if args.output:
        if str(args.output).endswith(".csv"):
            table.to_csv(args.output, index=False)
        elif str(args.output).endswith(".zarr"):
            table.set_index("N").to_xarray().to_zarr(args.output, mode="w")
        else:
            table.set_index("N").to_xarray().to_netcdf(args.output)
        print(f"projection: {args.output}")
    return 0
