"""The ``scaleprobe`` command line. It parses, calls the library and prints."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings

from . import _cli_dashboard, _cli_suggest

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


@contextlib.contextmanager
def _quiet_dask_logs():
    """Keep Dask's own log lines, and their tracebacks, off the command's output.

    A scheduler that dies or a worker that is killed makes the client log tracebacks
    the sweep's one-line error already explains; ``--debug`` shows them.
    """
    import logging

    import distributed  # noqa: F401 - installs the handlers quieted here

    handlers = logging.getLogger("distributed").handlers
    levels = [handler.level for handler in handlers]
    for handler in handlers:
        handler.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for handler, level in zip(handlers, levels, strict=True):
            handler.setLevel(level)


def _run(args) -> int:
    if args.until or args.budget:
        return _cli_suggest.run_adaptive(args)
    with contextlib.ExitStack() as stack:
        return _run_sweep(args, stack)


def _run_sweep(args, stack) -> int:
    from ._summary import failure_line, summarize
    from .cluster import cluster_client
    from .runner import prepare_sweep
    from .spec import load_spec

    spec = load_spec(args.spec)
    if not args.debug:
        stack.enter_context(_quiet_dask_logs())
    options = {
        "output": args.output,
        "retry": args.retry or (),
        "new_campaign": args.new_campaign,
    }
    if args.dask_mpi:
        # Every rank runs this command; only the client rank returns from here, so
        # the store is locked and checked after the cluster is up.
        with (
            cluster_client(dask_mpi=True) as client,
            prepare_sweep(spec, **options) as sweep,
            _dask_log(args, sweep.store.path),
        ):
            ds = sweep.run(client)
    else:
        # The store is checked and locked first: a refused run starts no cluster.
        with prepare_sweep(spec, **options) as sweep:
            if not sweep.todo:
                ds = sweep.run()
            else:
                with _dask_log(args, sweep.store.path):
                    ds = _measure(args, sweep)
    print(summarize(ds, path=sweep.store.path))
    failed = failure_line(ds, sweep.store.path)
    if failed:
        print(f"scaleprobe: {failed}", file=sys.stderr)
    # A run whose every launch failed measured nothing: a script must not go on to
    # fit it. Some points failing among others that ran is the sweep going on.
    return FAILURE if sweep.todo and not sweep.succeeded() else 0


def _measure(args, sweep):
    """Run a prepared sweep on the cluster the arguments ask for."""
    from .cluster import named_cluster

    with named_cluster(
        address=args.address, scheduler_file=args.scheduler_file, backend=args.cluster
    ) as client:
        if client is not None:
            return sweep.run(client)
    return sweep.run(workers=args.workers)


def _dask_log(args, output):
    """Dask's log lines to the file beside the store at ``output`` (not ``--debug``)."""
    from ._logs import dask_logs_to, store_log

    return dask_logs_to(None if args.debug else store_log(output))


def _plan(args) -> int:
    from .runner import describe_plan

    print(
        describe_plan(
            args.spec,
            output=args.output,
            retry=args.retry or (),
            new_campaign=args.new_campaign,
        )
    )
    return 0


def _show(args) -> int:
    from ._summary import metric_error, summarize
    from .store import open_results

    ds = open_results(args.path)
    problem = None if args.metric is None else metric_error(ds, args.metric, args.path)
    if problem is not None:
        print(f"scaleprobe: error: {problem}", file=sys.stderr)
        return BAD_INPUT
    print(summarize(ds, metric=args.metric, path=args.path))
    return 0


def _demo(args) -> int:
    from .demo import demo_output, run_demo

    with _dask_log(args, demo_output(args.directory)):
        text = run_demo(args.directory, workers=args.workers)
    print(text)
    return 0


class _VersionAction(argparse.Action):
    """``--version``: the installed version, read only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kwargs):
        kwargs.setdefault("help", "show the version and exit")
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs
        )

    def __call__(self, parser, namespace, values, option_string=None):
        import scaleprobe

        print(f"{parser.prog} {scaleprobe.__version__}")
        parser.exit()


def _store_options(parser) -> None:
    parser.add_argument("--output", help="results path (overrides the spec's output)")
    parser.add_argument(
        "--retry",
        metavar="STATUSES",
        help="measure stored points of these statuses again, e.g. failed,timeout "
        "(statuses: failed, timeout, invalid); earlier results stay in each point "
        "file's history",
    )
    parser.add_argument(
        "--new-campaign",
        action="store_true",
        help="move the results of another campaign at the output aside "
        "(to NAME.campaign-STARTED.*) instead of refusing to run",
    )


def _printable(text: str) -> str:
    """Escape what a terminal would not print as one line (controls, line breaks)."""
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in text
    )


class _Parser(argparse.ArgumentParser):
    """An argument parser whose error is one printable line, whatever was typed."""

    def error(self, message: str):
        """Print the usage and ``message`` as one line, then exit with code 2."""
        super().error(_printable(message))


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``scaleprobe`` command.

    Building it imports none of the commands' implementations: each subcommand's
    handler imports what it needs when it runs.

    Returns
    -------
    argparse.ArgumentParser
        Every subcommand sets ``handler(args) -> int``.

    Examples
    --------
    >>> args = build_parser().parse_args(["plan", "sweep.yaml", "--retry", "failed"])
    >>> args.command, args.spec, args.retry
    ('plan', 'sweep.yaml', 'failed')
    """
    parser = _Parser(
        prog="scaleprobe",
        description="Measure MPI programs over sweeps with a throttled interconnect, "
        "model them, and project them to large clusters.",
    )
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the full traceback of an unexpected error",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub)
    _add_plan(sub)
    _add_show(sub)
    _add_demo(sub)
    _cli_dashboard.register(sub)
    _cli_suggest.register(sub)
    try:
        from ._cli_models import register
    except ImportError:  # the models commands are optional at this layer
        register = None
    if register is not None:
        register(sub)
    return parser


def _add_run(sub) -> None:
    run = sub.add_parser(
        "run",
        help="run or resume the sweep a spec describes",
        description="Run or resume a sweep. Points already stored are "
        "skipped, so the same command resumes a killed sweep.",
    )
    run.add_argument("spec", help="campaign spec (YAML)")
    _store_options(run)
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
    _cli_suggest.add_until_arguments(run)
    run.set_defaults(handler=_run)


def _add_plan(sub) -> None:
    dry = sub.add_parser(
        "plan",
        help="check a spec and list the points a run would measure (dry run)",
        description="Check everything that needs no MPI (spec, kernel parameters, "
        "launch settings, output, stored campaign) and print the points a run "
        "would measure, with the shell line of the first one. Nothing is written "
        "or launched.",
    )
    dry.add_argument("spec", help="campaign spec (YAML)")
    _store_options(dry)
    dry.set_defaults(handler=_plan)


def _add_show(sub) -> None:
    show = sub.add_parser(
        "show",
        help="summarize stored results",
        description="Print dimensions, point counts by status and a table.",
    )
    show.add_argument("path", help="results path (e.g. results/pingpong.zarr)")
    show.add_argument("--metric", help="variable to tabulate (default: time)")
    show.set_defaults(handler=_show)


def _add_demo(sub) -> None:
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


def main(argv=None) -> int:
    """Run the ``scaleprobe`` command.

    Parameters
    ----------
    argv : list of str, optional
        Arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 2 on bad input (a one-line error is printed), 1 on failure,
        75 when points were left unmeasured by the infrastructure (run it again),
        128 + the signal's number when SIGINT (130), SIGTERM (143) or SIGHUP (129)
        interrupted it (one line: run the same command again to resume). SIGUSR1
        prints where every thread of the command is, on standard error, and the
        command goes on (:func:`~scaleprobe.framework._interrupt.stacks_on_request`).
    """
    args = build_parser().parse_args(argv)
    from ._interrupt import signals_interrupt, stacks_on_request

    stacks_on_request()
    with warnings.catch_warnings(), signals_interrupt():
        from ._warnings import SweepWarning

        warnings.simplefilter("always", SweepWarning)
        warnings.showwarning = _one_line_warning
        try:
            return args.handler(args)
        except KeyboardInterrupt as exc:
            return _interrupted(exc)
        except Exception as exc:
            code = _exit_code(exc)
            if code is not None:
                return _error(exc, code)
            if args.debug:
                raise
            return _error(exc, FAILURE, f"failed: {type(exc).__name__}: ")


def _interrupted(exc: KeyboardInterrupt) -> int:
    """Say which signal interrupted the command, in one line; return 128 + signal.

    SIGINT (Ctrl-C), SIGTERM (``scancel``, a job's time limit, ``timeout``) and
    SIGHUP (a closed terminal) all end a run cleanly; the same command resumes it.
    """
    import signal

    from ._interrupt import Interrupted

    if not isinstance(exc, Interrupted):
        exc = Interrupted(signal.SIGINT)
    with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
        print(
            f"scaleprobe: interrupted by {exc.name}; run the same command again "
            "to resume",
            file=sys.stderr,
            flush=True,
        )
    return exc.exit_code


def _exit_code(exc: Exception) -> int | None:
    """The exit code of an error the command explains in one line, else None.

    Bad input (a spec, a setting, a rule, a unit, a missing file, a store that
    cannot be used as asked) is 2; a store that could not be written or a cluster
    that failed is 1; a sweep that left points unmeasured (its workers or their
    batch allocations went away) is 75, ``EX_TEMPFAIL``: the same command again.
    The error classes are imported here, after the command ran: their modules are
    light, and ``--help`` never gets here.
    """
    from .admissible import RuleError
    from .cluster import UNMEASURED_EXIT, ClusterError, UnmeasuredError
    from .settings import SettingsError
    from .spec import SpecError
    from .store import StoreError, StoreIOError
    from .units import UnitError

    if isinstance(exc, (SpecError, SettingsError, RuleError, UnitError)):
        return BAD_INPUT
    if isinstance(exc, FileNotFoundError):
        return BAD_INPUT
    if isinstance(exc, StoreError):
        return FAILURE if isinstance(exc, StoreIOError) else BAD_INPUT
    if isinstance(exc, UnmeasuredError):
        return UNMEASURED_EXIT
    if isinstance(exc, ClusterError):
        return BAD_INPUT if isinstance(exc, ValueError) else FAILURE
    return None


def _error(exc, code: int, prefix: str = "error: ") -> int:
    """Print an error as one line (the first of its message) and return ``code``."""
    text = str(exc).strip().splitlines()
    line = f"scaleprobe: {prefix}{_printable(text[0]) if text else type(exc).__name__}"
    if prefix != "error: ":
        line += " (run with --debug for the traceback)"
    print(line, file=sys.stderr)
    return code


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    text = str(message).strip().splitlines()
    print(
        f"scaleprobe: warning: {_printable(text[0]) if text else category.__name__}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    sys.exit(main())
