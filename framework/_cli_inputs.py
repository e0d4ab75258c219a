"""Reading what ``scaleprobe fit``, ``project`` and ``report`` are given: value lists,
cross-validation specs, results and measurement files, output paths."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "BAD_INPUT",
    "FAILURE",
    "OUTPUT_SUFFIXES",
    "BadInputError",
    "check_figure_path",
    "check_measurements",
    "check_model_file",
    "check_output_path",
    "check_ppn",
    "load_results",
    "parse_cv",
    "parse_percentages",
    "parse_quantity",
    "parse_values",
    "writable",
]

BAD_INPUT = 2
FAILURE = 1


class BadInputError(ValueError):
    """A user error reported as one line with exit code 2."""


def _numbers(text, option):
    """The numbers of a comma list or a range's parts; one line on a bad one."""
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        raise BadInputError(
            f"{option} {text!r}: use positive numbers as START:STOP (doublings), "
            "START:STOP:STEP or a comma list, e.g. 4:1024 or 4,8,16"
        ) from None


def _range(text, option):
    """The values of ``START:STOP`` (doublings) or ``START:STOP:STEP``."""
    import numpy as np  # here, not at import: the command's parser is built without it

    parts = [_numbers(part, option)[0] if part else np.nan for part in text.split(":")]
    if len(parts) not in (2, 3) or not all(np.isfinite(parts)) or min(parts) <= 0:
        raise BadInputError(
            f"{option} {text!r}: use positive numbers as START:STOP (doublings), "
            "START:STOP:STEP or a comma list, e.g. 4:1024 or 4,8,16"
        )
    start, stop = parts[:2]
    if start > stop:
        raise BadInputError(
            f"{option} {text}: START {start:g} is above STOP {stop:g}; the range "
            f"goes upwards, write {stop:g}:{start:g}"
            + (f":{parts[2]:g}" if len(parts) == 3 else "")
        )
    if len(parts) == 2:
        return start * 2.0 ** np.arange(int(np.floor(np.log2(stop / start))) + 1)
    return np.arange(start, stop + parts[2] / 2, parts[2])


def parse_values(text, *, integer=False, option="value"):
    """Parse ``"4:1024"`` (doublings), ``"10:100:10"`` (a range) or ``"100,50,25"``.

    Parameters
    ----------
    text : str
        What was typed.
    integer : bool, default=False
        The values count something (node counts): whole numbers only.
    option : str, default="value"
        The option's name, for the one-line error (``"--nodes"``).

    Returns
    -------
    numpy.ndarray
        Positive values (int when ``integer``).

    Raises
    ------
    BadInputError
        Not numbers, not positive, a range that goes downwards, or a fraction where
        whole numbers are counted.

    Examples
    --------
    >>> parse_values("4:32", integer=True).tolist()
    [4, 8, 16, 32]
    >>> parse_values("100,50").tolist()
    [100.0, 50.0]
    >>> parse_values("64:16", option="--nodes")
    Traceback (most recent call last):
    ...
    scaleprobe.framework._cli_inputs.BadInputError: --nodes 64:16: START 64 is above STOP 16; the range goes upwards, write 16:64
    """  # noqa: E501
    import numpy as np

    text = str(text).strip()
    if ":" in text:
        values = _range(text, option)
    else:
        values = np.array(_numbers(text, option))
        if not (np.all(np.isfinite(values)) and np.all(values > 0)):
            raise BadInputError(
                f"{option} {text!r}: the values must be positive numbers, e.g. "
                "4:1024 or 4,8,16"
            )
    if integer:
        fraction = values[values != np.round(values)]
        if fraction.size:
            raise BadInputError(
                f"{option} {text}: {fraction[0]:g} is not a whole number; {option} "
                "counts, e.g. 2 or 4:64"
            )
        return values.round().astype(int)
    return values


def parse_percentages(text, option="--bandwidth"):
    """Parse link-bandwidth percentages (``"100,50,25"``, ``"100%"``, ranges).

    Parameters
    ----------
    text : str
        What was typed; a ``%`` after a number is allowed.
    option : str, default="--bandwidth"

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    BadInputError
        Not percentages in (0, 100], or a link bandwidth given where a share of it
        is asked for.

    Examples
    --------
    >>> parse_percentages("100%, 25 %").tolist()
    [100.0, 25.0]
    """
    text = str(text)
    if any(unit in text for unit in ("bit", "B/s", "bps")):
        raise BadInputError(
            f"{option} {text!r}: {option} takes percentages of the link (e.g. "
            "100,25); give a link bandwidth with --link-bandwidth, e.g. '100 Gbit/s'"
        )
    values = parse_values(text.replace("%", ""), option=option)
    if (values > 100).any():
        raise BadInputError(
            f"{option} {text}: {values.max():g} % is above the whole link; "
            "percentages are in (0, 100]"
        )
    return values


def parse_quantity(text, option, parse):
    """Parse a dimensioned option with the one unit parser; the unit is required.

    Parameters
    ----------
    text : str or None
        What was typed.
    option : str
        The option's name (``"--link-bandwidth"``).
    parse : callable
        :func:`~scaleprobe.framework.units.parse_bandwidth` or
        :func:`~scaleprobe.framework.units.parse_duration`.

    Returns
    -------
    float or None
        SI units (bytes/s, s); None when nothing was typed.

    Examples
    --------
    >>> from scaleprobe.framework.units import parse_bandwidth
    >>> parse_quantity("100 Gbit/s", "--link-bandwidth", parse_bandwidth)
    12500000000.0
    >>> parse_quantity("100", "--link-bandwidth", parse_bandwidth)
    Traceback (most recent call last):
    ...
    scaleprobe.framework._cli_inputs.BadInputError: --link-bandwidth 100 needs a unit, e.g. '100 Gbit/s'
    """  # noqa: E501
    from .units import UnitError

    if text is None:
        return None
    try:
        return parse(text, require_unit=True)
    except UnitError as error:
        message = str(error)
        if message.startswith(f"{text} needs a unit"):
            raise BadInputError(f"{option} {message}") from None
        raise BadInputError(f"{option} {text!r}: {message}") from None


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


#: What ``fit`` and ``report`` read, in words.
READABLE = (
    "the results of 'scaleprobe run' (.zarr, .nc), a measurement file (.csv, "
    ".parquet, Extra-P .txt, .json, .jsonl) or a profile (Caliper .cali, Caliper "
    "or Hatchet .json, or a folder of runs: such files, or Score-P experiment "
    "folders with .cubex files)"
)
#: Suffixes of a file (not a folder) that ``fit`` and ``report`` may read.
_READ_SUFFIXES = (
    ".csv",
    ".parquet",
    ".pq",
    ".txt",
    ".json",
    ".jsonl",
    ".cali",
    ".cubex",
    ".nc",
    ".zip",
    ".yaml",
    ".yml",
)
#: The ``format`` of model files, as their first bytes spell it.
_MODEL_FORMATS = (
    '"format": "scaleprobe-models"',
    '"format": "scaleprobe-profile-models"',
)


def check_measurements(path):
    """Refuse a model file, or a file of a kind nothing reads, before reading it.

    Parameters
    ----------
    path : str
        What ``fit`` or ``report`` was given to fit.

    Raises
    ------
    BadInputError
        A model file written by ``scaleprobe fit``, or a file whose suffix no
        reader takes; the message says what is read.

    Examples
    --------
    >>> check_measurements("missing.tsv")
    Traceback (most recent call last):
    ...
    scaleprobe.framework._cli_inputs.BadInputError: missing.tsv: scaleprobe does not read .tsv files; give the results of 'scaleprobe run' (.zarr, .nc), a measurement file (.csv, .parquet, Extra-P .txt, .json, .jsonl) or a profile (Caliper .cali, Caliper or Hatchet .json, or a folder of runs: such files, or Score-P experiment folders with .cubex files)
    """  # noqa: E501
    where = Path(path)
    suffix = where.suffix.lower()
    if suffix == ".zarr" or where.is_dir():
        return
    if suffix not in _READ_SUFFIXES:
        kind = f"{suffix} files" if suffix else "files without a suffix"
        raise BadInputError(f"{path}: scaleprobe does not read {kind}; give {READABLE}")
    if suffix == ".json" and where.is_file():
        with open(where, encoding="utf-8", errors="replace") as stream:
            head = stream.read(200)
        if any(mark in head for mark in _MODEL_FORMATS):
            raise BadInputError(
                f"{path} is a model file written by 'scaleprobe fit', not "
                f"measurements: fit and report take {READABLE}; project its models "
                f"with 'scaleprobe project {path}'"
            )


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
    check_measurements(path)
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


#: What each output option writes, by file name ending.
OUTPUT_SUFFIXES = {
    "--plot": (".png", ".svg"),
    "project --output": (".nc", ".zarr", ".csv"),
    "fit --output": (".json",),
    "report --output": (".html", ".md"),
}


def check_output_path(path, option, suffixes):
    """Refuse an output whose kind or folder is wrong, before any work is done.

    Parameters
    ----------
    path : str or None
        The output given (nothing to check when None).
    option : str
        The option's name, for the one-line error.
    suffixes : tuple of str
        The file name endings the option writes.

    Raises
    ------
    BadInputError
        Another ending (``--plot x.jpg``), or a folder that does not exist or
        cannot be written.

    Examples
    --------
    >>> check_output_path("x.jpg", "--plot", (".png", ".svg"))
    Traceback (most recent call last):
    ...
    scaleprobe.framework._cli_inputs.BadInputError: --plot x.jpg: must end in .png or .svg (the format written), e.g. x.png
    """  # noqa: E501
    if not path:
        return
    suffix = Path(path).suffix.lower()
    if suffix not in suffixes:
        kinds = ", ".join(suffixes[:-1]) + " or " if len(suffixes) > 1 else ""
        name = Path(path).with_suffix(suffixes[0]).name
        raise BadInputError(
            f"{option} {path}: must end in {kinds}{suffixes[-1]} (the format "
            f"written), e.g. {name}"
        )
    writable(path, option)


def check_figure_path(path):
    """Refuse a ``--plot`` that is not a writable ``.png`` or ``.svg`` file.

    Parameters
    ----------
    path : str or None

    Raises
    ------
    BadInputError
    """
    check_output_path(path, "--plot", OUTPUT_SUFFIXES["--plot"])


def check_ppn(ppn):
    """Refuse a ``--ppn`` that is not a whole number of ranks per node.

    Parameters
    ----------
    ppn : float or None
        As parsed (None: not given).

    Raises
    ------
    BadInputError
        Zero, negative, fractional or not finite.

    Examples
    --------
    >>> check_ppn(2.5)
    Traceback (most recent call last):
    ...
    scaleprobe.framework._cli_inputs.BadInputError: --ppn must be a whole number of ranks per node, at least 1; got 2.5
    """  # noqa: E501
    if ppn is None:
        return
    if not (ppn >= 1 and float(ppn).is_integer()):
        raise BadInputError(
            f"--ppn must be a whole number of ranks per node, at least 1; got {ppn:g}"
        )


def check_model_file(path):
    """Refuse what is not a model file written by ``scaleprobe fit``, in one line.

    Parameters
    ----------
    path : str
        What ``project`` was given as its model file.

    Raises
    ------
    BadInputError
        Nothing there, a results store, a spec, or a measurement file; the message
        says how to make a model file from it.

    Examples
    --------
    >>> check_model_file("missing.json")
    Traceback (most recent call last):
    ...
    scaleprobe.framework._cli_inputs.BadInputError: no model file at missing.json; make one with `scaleprobe fit RESULTS --output missing.json`
    """  # noqa: E501
    from scaleprobe.models import measurement_format

    from .store import ResultStore

    where = Path(path)
    fit = f"`scaleprobe fit {path} --output models.json`"
    stored = where.exists() or ResultStore(path).exists()
    if stored and (where.is_dir() or where.suffix.lower() in (".zarr", ".nc")):
        raise BadInputError(
            f"{path} is a results store; make a model file with {fit}, then "
            "project that"
        )
    if not where.exists():
        raise BadInputError(
            f"no model file at {path}; make one with `scaleprobe fit RESULTS "
            f"--output {path}`"
        )
    if where.suffix.lower() in (".yaml", ".yml"):
        raise BadInputError(
            f"{path} is a YAML file (a spec?), not a model file: run it with "
            f"`scaleprobe run {path}`, then make a model file with `scaleprobe fit "
            "RESULTS --output models.json`"
        )
    if measurement_format(path) not in (None, "extrap-json"):
        raise BadInputError(
            f"{path} is a measurement file; make a model file with {fit}, then "
            "project that"
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
