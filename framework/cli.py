"""The ``scaleprobe`` command line. It parses, calls the library and prints."""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]

BAD_INPUT = 2
FAILURE = 1


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of at least 1, got {text!r}"
        )
    return value


def _run(args) -> int:
    from .cluster import cluster_client
    from .runner import run_sweep
    from .spec import load_spec

    spec = load_spec(args.spec)
    if args.dask_mpi:
        with cluster_client(dask_mpi=True) as client:
            ds = run_sweep(spec, client, output=args.output)
    elif args.address or args.scheduler_file:
        with cluster_client(
            address=args.address, scheduler_file=args.scheduler_file
        ) as client:
            ds = run_sweep(spec, client, output=args.output)
    elif args.cluster:
        with cluster_client(backend=args.cluster) as client:
            ds = run_sweep(spec, client, output=args.output)
    else:
        ds = run_sweep(spec, output=args.output, workers=args.workers)
    from ._summary import summarize

    print(summarize(ds))
    return 0


def _show(args) -> int:
    from ._summary import summarize
    from .store import open_results

    ds = open_results(args.path)
    if args.metric is not None and args.metric not in ds.data_vars:
        import difflib

        names = sorted(str(v) for v in ds.data_vars if v != "status")
        close = difflib.get_close_matches(args.metric, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        print(
            f"scaleprobe: error: {args.path} has no metric {args.metric!r}; {hint}"
            f"metrics: {', '.join(names) or 'none'}",
            file=sys.stderr,
        )
        return BAD_INPUT
    print(summarize(ds, metric=args.metric))
    return 0


def _demo(args) -> int:
    from .demo import run_demo

    print(run_demo(args.directory, workers=args.workers))
    return 0


def _version() -> str:
    import scaleprobe

    return scaleprobe.__version__


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``scaleprobe`` command."""
    parser = argparse.ArgumentParser(
        prog="scaleprobe",
        description="Measure MPI programs over sweeps with a throttled interconnect, "
        "model them, and project them to large clusters.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run or resume the sweep a spec describes",
        description="Run or resume a sweep. Points already stored are "
        "skipped, so the same command resumes a killed sweep.",
    )
    run.add_argument("spec", help="campaign spec (YAML)")
    run.add_argument("--output", help="results path (overrides the spec's output)")
    where = run.add_mutually_exclusive_group()
    where.add_argument(
        "--address", help="scheduler address of an existing Dask cluster"
    )
    where.add_argument(
        "--scheduler-file", help="scheduler file of an existing Dask cluster"
    )
    where.add_argument(
        "--workers", type=_positive_int, help="workers of the embedded LocalCluster"
    )
    where.add_argument(
        "--dask-mpi",
        action="store_true",
        help="boot the Dask cluster from this MPI job "
        "(mpiexec -n N scaleprobe run --dask-mpi SPEC)",
    )
    where.add_argument(
        "--cluster",
        choices=("local", "slurm"),
        help="start this kind of cluster: local (LocalCluster) or slurm (Dask "
        "workers as SLURM jobs, dask-jobqueue); default: scaleprobe.cluster.backend",
    )
    run.set_defaults(handler=_run)

    show = sub.add_parser(
        "show",
        help="summarize stored results",
        description="Print dimensions, point counts by status and a table.",
    )
    show.add_argument("path", help="results path (e.g. results/pingpong.zarr)")
    show.add_argument("--metric", help="variable to tabulate (default: time)")
    show.set_defaults(handler=_show)

    demo = sub.add_parser(
        "demo",
        help="run a small throttled sweep (about two minutes)",
        description="Run a small strong-scaling sweep with throttled "
        "bandwidth on an embedded Dask cluster.",
    )
    demo.add_argument(
        "--directory",
        default="scaleprobe-demo",
        help="where to write the spec and results (default: ./scaleprobe-demo)",
    )
    demo.add_argument(
        "--workers", type=_positive_int, help="workers of the embedded LocalCluster"
    )
    demo.set_defaults(handler=_demo)

    try:
        from ._cli_models import register
    except ImportError:  # the models commands are optional at this layer
        register = None
    if register is not None:
        register(sub)
    return parser


def main(argv=None) -> int:
    """Run the ``scaleprobe`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 2 on bad input (a one-line error is printed), 1 on failure.
    """
    from ._connect import ClusterError
    from .admissible import RuleError
    from .settings import SettingsError
    from .spec import SpecError
    from .store import StoreError
    from .units import UnitError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (
        SpecError,
        SettingsError,
        RuleError,
        UnitError,
        StoreError,
        FileNotFoundError,
    ) as exc:
        print(f"scaleprobe: error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except ClusterError as exc:
        print(f"scaleprobe: error: {exc}", file=sys.stderr)
        return BAD_INPUT if isinstance(exc, ValueError) else FAILURE
    except KeyboardInterrupt:
        print(
            "scaleprobe: interrupted; run the same command again to resume",
            file=sys.stderr,
        )
        return FAILURE


if __name__ == "__main__":
    sys.exit(main())
