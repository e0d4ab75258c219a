"""What the model commands share: the options of ``fit`` and ``report`` (``project``
has its own) and how every model command reports the models' warnings."""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings

__all__ = ["common_arguments", "reported_warnings"]


@contextlib.contextmanager
def reported_warnings():
    """Print each model warning once, as one line on standard error.

    Yields
    ------
    None
    """
    from scaleprobe.models import ScaleprobeWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ScaleprobeWarning)
        try:
            yield
        finally:
            seen = set()
            for item in caught:
                if not issubclass(item.category, ScaleprobeWarning):
                    continue
                line = f"scaleprobe: warning: {item.category.__name__}: {item.message}"
                if line not in seen:
                    seen.add(line)
                    print(line, file=sys.stderr)


def common_arguments(parser):
    """Add the options ``fit`` and ``report`` share: the models, cross-validation,
    target, ``s0``, interval level, ppn, how to read measurement files, and the
    Dask cluster.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    """
    parser.add_argument(
        "--model",
        action="append",
        metavar="NAME",
        help="ensemble member (repeatable): base, generalized, bandwidth, "
        "refined, generalized_refined, pmnf, traffic, fim, rbasp (default: every model "
        "the data identify); commpredictor alone fits the communication predictor "
        "on a random ping-pong benchmark",
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
    parser.add_argument(
        "--ppn",
        type=_number,
        help="ranks per node, for data that do not record it",
    )
    _measurement_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--workers", type=int, help="workers of an embedded LocalCluster"
    )
    where.add_argument(
        "--address", help="scheduler address of an existing Dask cluster"
    )


def _measurement_arguments(parser):
    group = parser.add_argument_group(
        "measurement files (.csv, .parquet; Extra-P .txt, .json, .jsonl)"
    )
    group.add_argument(
        "--ranks-from",
        metavar="NAME",
        help="parameter (column) that counts MPI ranks (default: recognised by "
        "name: p, np, procs, processes, ranks...)",
    )
    group.add_argument(
        "--nodes-from", metavar="NAME", help="parameter (column) that counts nodes"
    )
    group.add_argument("--callpath", help="callpath (Extra-P region) to model")
    group.add_argument(
        "--select",
        action="append",
        metavar="NAME=VALUE",
        help="keep one value of another parameter (repeatable)",
    )
    group.add_argument("--units", help="units of the measured values (e.g. s)")


def _number(text):
    """A number as ``--ppn`` is given: an int when whole, else the float, which
    the commands then refuse in one line, naming the option (argparse's own
    refusal of ``int("2.5")`` printed the whole usage)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a number; got {text!r}") from None
    return int(value) if value.is_integer() else value
