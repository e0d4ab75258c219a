"""Reading what ``scaleprobe fit``, ``project`` and ``report`` are given: value lists,
cross-validation specs, results and measurement files, output paths."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "BAD_INPUT",
    "FAILURE",
    "BadInputError",
    "load_results",
    "parse_cv",
    "parse_values",
    "writable",
]

BAD_INPUT = 2
FAILURE = 1


class BadInputError(ValueError):
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
    import numpy as np  # here, not at import: the command's parser is built without it

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
        if values.size == 0 or np.any(~np.isfinite(values)) or np.any(values <= 0):
            raise ValueError
    except ValueError:
        raise BadInputError(
            f"cannot read {text!r}: use positive numbers as START:STOP (doublings), "
            "START:STOP:STEP or a comma list"
        ) from None
    return values.round().astype(int) if integer else values


def parse_cv(specs, column="nodes"):
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
    from scaleprobe.models.evaluation import ConfigurationKFold

    out = {}
    for spec in specs:
        name, _, arg = spec.partition(":")
        try:
            if name == "kfold":
                folds = int(arg or 5)
                if folds < 2:
                    raise ValueError
                out[name] = ConfigurationKFold(folds, column=column)
            elif name == "extrapolation":
                out[name] = ExtrapolationSplit(
                    column, n_splits=3, train_max=float(arg) if arg else None
                )
            elif name == "scale":
                out[name] = LeaveOneScaleOut()
            elif name == "bandwidth":
                out[name] = LeaveOneBandwidthOut()
            else:
                raise ValueError
        except ValueError:
            raise BadInputError(
                f"unknown cross-validation {spec!r}: use kfold[:K] (K >= 2), "
                "extrapolation[:MAX_TRAIN_NODES], scale or bandwidth"
            ) from None
    return out


def load_results(path, args=None):
    """Open the results of ``scaleprobe run`` or a measurement file, for the models.

    Parameters
    ----------
    path : str
        A results store (``.zarr``, ``.nc``) or a measurement file (CSV, Parquet,
        Extra-P text, JSON, JSON Lines).
    args : argparse.Namespace, default=None
        The command's options that say how to read a measurement file
        (``--ranks-from``, ``--nodes-from``, ``--callpath``, ``--units``,
        ``--select``).

    Returns
    -------
    xarray.Dataset

    Raises
    ------
    BadInputError
        Nothing at ``path``, a YAML spec, or a file that cannot be read.
    """
    from scaleprobe.models import load_measurements, measurement_format

    from .store import ResultStore, StoreError, open_results

    if not Path(path).exists() and not ResultStore(path).exists():
        raise BadInputError(f"no results at {path}")
    if measurement_format(path) is not None:
        return load_measurements(path, **_measurement_options(args))
    if Path(path).suffix.lower() in (".yaml", ".yml"):
        raise BadInputError(
            f"{path} is a YAML file (a spec?), not results: give the results of "
            "'scaleprobe run' (.zarr, .nc) or a measurement file (.csv, .parquet, "
            "Extra-P .txt, .json, .jsonl)"
        )
    try:
        return open_results(path)
    except StoreError as error:
        raise BadInputError(str(error)) from None
    except (OSError, ValueError, KeyError) as error:
        raise BadInputError(
            f"cannot read {path} as scaleprobe results ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''})"
        ) from None


def writable(path, option):
    """Refuse an output file that cannot be written, before any work is done."""
    if not path:
        return
    folder = Path(path).resolve().parent
    if not folder.is_dir():
        raise BadInputError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInputError(
            f"{option} {path}: cannot write in {folder} (read-only file system or "
            "no permission)"
        )


def _measurement_options(args):
    select = {}
    for item in getattr(args, "select", None) or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise BadInputError(f"cannot read --select {item!r}: use NAME=VALUE")
        select[name] = value
    return {
        "ranks": getattr(args, "ranks_from", None),
        "nodes": getattr(args, "nodes_from", None),
        "callpath": getattr(args, "callpath", None),
        "units": getattr(args, "units", None),
        "select": select,
        "single_series": True,
    }
