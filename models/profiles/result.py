"""What :func:`~scaleprobe.models.profiles.fit_profile` returns: a model per series,
projected, ranked and saved together.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.warnings import PhysicalLimitWarning, warn
from .model import STATUSES, SeriesModel
from .nesting import conflicts, describe

__all__ = [
    "CANNOT_TELL",
    "FORMAT",
    "ProfileFit",
    "ProfileProjection",
    "load_profile_fit",
]

#: Format name of a model file holding a profile's models.
FORMAT = "scaleprobe-profile-models"
#: Upper/lower ratio of an interval beyond which the data cannot tell the value
#: (as :data:`~scaleprobe.models.projection.grid.CANNOT_TELL_RATIO`).
CANNOT_TELL = 10.0


@dataclass
class ProfileProjection:
    """Every series projected to the same counts.

    Attributes
    ----------
    axis : str
        ``ranks``, ``nodes`` or the parameter the series run over.
    at : ndarray of shape (t,)
        The counts projected to.
    models : list of SeriesModel
    predicted, lower, upper : ndarray of shape (s, t)
    level : float
    unit : dict of str to str
        Unit of each metric.
    reach : float or None
        The farthest distance (doublings beyond the counts fitted) at which the
        calibration of the intervals saw an error; None when it saw none (or the
        model file predates it).
    """

    axis: str
    at: np.ndarray
    models: list
    predicted: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    unit: dict = field(default_factory=dict)
    reach: float | None = None

    def unchecked(self):
        """Where the intervals' growth with distance goes beyond its check.

        Returns
        -------
        tuple of (float, float) or None
            ``(largest, checked)``: the largest measured count and the count
            :attr:`reach` doublings beyond it, when a projected count lies beyond
            that; else None.
        """
        if self.reach is None or not self.models:
            return None
        largest = max(float(m.x[-1]) for m in self.models)
        checked = largest * 2.0**self.reach
        return (largest, checked) if np.max(self.at) > checked * 1.0001 else None

    def cannot_tell(self):
        """``(s, t)``: where the interval spans more than :data:`CANNOT_TELL`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.upper / self.lower
        return ~(ratio <= CANNOT_TELL)

    def conflicts(self):
        """Projected call paths above their callers, for the metrics whose
        measurements nest (:func:`~scaleprobe.models.profiles.nesting.conflicts`).

        Returns
        -------
        list of dict
        """
        return conflicts(self)

    def growth(self):
        """``(s,)``: predicted at the last count over measured at the largest."""
        measured = np.array([m.centre[-1] for m in self.models])
        return self.predicted[:, -1] / measured

    def to_frame(self):
        """One row per series and count, as a pandas DataFrame."""
        import pandas as pd

        rows = []
        for i, model in enumerate(self.models):
            for j, value in enumerate(self.at):
                rows.append(
                    {
                        "series": model.name,
                        "metric": model.metric,
                        self.axis: value,
                        "predicted": self.predicted[i, j],
                        "lower": self.lower[i, j],
                        "upper": self.upper[i, j],
                        "status": model.status,
                        "law": model.law.label,
                    }
                )
        return pd.DataFrame(rows)

    def to_dataset(self):
        """The projection as an xarray Dataset over ``series`` and the axis."""
        import xarray as xr

        dims = ("series", self.axis)
        attrs = {"units": "various", "long_name": "predicted value"}
        out = xr.Dataset(
            {
                "predicted": (dims, self.predicted, attrs),
                "lower": (dims, self.lower, {**attrs, "long_name": "lower bound"}),
                "upper": (dims, self.upper, {**attrs, "long_name": "upper bound"}),
            },
            coords={
                "series": [m.name for m in self.models],
                self.axis: self.at,
                "metric": ("series", [m.metric for m in self.models]),
                "status": ("series", [m.status for m in self.models]),
            },
            attrs={"interval_level": self.level},
        )
        out[self.axis].attrs.update({"units": "1", "long_name": self.axis})
        return out


@dataclass
class ProfileFit:
    """A model per series of a profile, with the fit's calibration and notes.

    Attributes
    ----------
    axis : str
        ``ranks``, ``nodes`` or the parameter the series run over.
    kind : {"ranks", "nodes", "parameter"}
    units : dict of str to str
        Units of the metrics.
    source : dict
        The profile's provenance (``path``, ``format``, ``ppn`` when given...).
    models : list of SeriesModel
    skipped : dict of str to list of str
        Series no law could be fitted to, by reason.
    level : float
        Level of the intervals.
    calibration : dict
        ``kappa`` (the factor every interval takes on its scale), ``form`` (of the
        scale), ``floor`` (the half-width, log, per doubling that every interval has
        at least; absent from files written before it), the ``residuals`` behind
        ``kappa``.
    notes : list of str
    seconds : float
        Wall time of the fit.
    """

    axis: str
    kind: str
    units: dict
    source: dict
    models: list
    skipped: dict = field(default_factory=dict)
    level: float = 0.9
    calibration: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    @classmethod
    def build(
        cls, table, series, fitted, skipped, *, level, calibration, seconds, notes=()
    ):
        """Assemble the fit from the graph's results.

        Parameters
        ----------
        table : ProfileTable
        series : list of ProfileSeries
        fitted : dict of int to dict
            Series index -> its fitted law, verdict and interval.
        skipped : dict of str to list of int
        level : float
        calibration : dict
        seconds : float
        notes : sequence of str, default=()
            Notes of the fit (values left out), after the table's.

        Returns
        -------
        ProfileFit
        """
        models = []
        for index, item in fitted.items():
            source = series[index]
            models.append(
                SeriesModel(
                    name=source.name,
                    callpath=source.callpath,
                    metric=source.metric,
                    parameters=dict(source.parameters),
                    unit=table.units.get(source.metric, ""),
                    **item,
                )
            )
        names = {k: [series[i].name for i in v] for k, v in skipped.items()}
        return cls(
            axis=table.axis,
            kind=table.kind,
            units=dict(table.units),
            source=dict(table.source),
            models=models,
            skipped=names,
            level=level,
            calibration=dict(calibration),
            notes=[*table.notes, *notes],
            seconds=float(seconds),
        )

    def __len__(self):
        return len(self.models)

    def model(self, name):
        """The model of the series ``name``."""
        for model in self.models:
            if model.name == name:
                return model
        shown = ", ".join(m.name for m in self.models[:10])
        raise ValueError(f"no series {name!r} in this fit; it has: {shown} ...")

    def counts(self):
        """How many series each verdict has: ``{status: n}``."""
        return {s: sum(m.status == s for m in self.models) for s in STATUSES}

    def resolve(self, values, *, ranks=False, nodes=False, ppn=None):
        """The counts of the axis to project to, from ranks or nodes.

        Parameters
        ----------
        values : array-like
        ranks, nodes : bool, default=False
            Whether ``values`` count ranks or nodes (neither: the axis itself).
        ppn : float, default=None
            Ranks per node (default: the profile's, when it records one).

        Returns
        -------
        ndarray

        Raises
        ------
        ValueError
            Nodes for a profile of ranks (or the reverse) without ranks per node.
        """
        values = np.asarray(values, dtype=float)
        asked = "ranks" if ranks else ("nodes" if nodes else self.axis)
        if asked == self.axis or self.kind == "parameter":
            return values
        ppn = ppn if ppn is not None else self.source.get("ppn")
        if ppn is None:
            raise ValueError(
                f"the profile's series run over {self.axis}; give {self.axis} "
                f"(--{self.axis}) or the ranks per node (--ppn) to convert {asked}"
            )
        return values * ppn if asked == "nodes" else values / ppn

    def project(self, at):
        """Every series at the counts ``at`` of the axis, with intervals.

        Parameters
        ----------
        at : array-like
            Counts of :attr:`axis` (:meth:`resolve` converts ranks and nodes).

        Returns
        -------
        ProfileProjection

        Warns
        -----
        PhysicalLimitWarning
            Where a call path is projected above its caller in a metric whose
            measurements nest (:mod:`~scaleprobe.models.profiles.nesting`).
        """
        at = np.atleast_1d(np.asarray(at, dtype=float))
        if at.size == 0 or not np.all(at > 0):
            raise ValueError(f"project to positive counts; got {at.tolist()}")
        predicted = np.vstack([m.predict(at) for m in self.models])
        bounds = [m.interval(at) for m in self.models]
        projection = ProfileProjection(
            axis=self.axis,
            at=at,
            models=list(self.models),
            predicted=predicted,
            lower=np.vstack([b[0] for b in bounds]),
            upper=np.vstack([b[1] for b in bounds]),
            level=self.level,
            unit=dict(self.units),
            reach=self.calibration.get("reach"),
        )
        found = projection.conflicts()
        if found:
            warn(describe(found, self.axis), PhysicalLimitWarning, stacklevel=2)
        return projection

    def to_dict(self):
        """The fit as a JSON-ready dict (the model file)."""
        return {
            "format": FORMAT,
            "version": 1,
            "axis": self.axis,
            "kind": self.kind,
            "units": self.units,
            "source": self.source,
            "level": self.level,
            "calibration": self.calibration,
            "notes": self.notes,
            "skipped": self.skipped,
            "seconds": self.seconds,
            "series": [m.to_dict() for m in self.models],
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`."""
        return cls(
            axis=data["axis"],
            kind=data["kind"],
            units=dict(data.get("units") or {}),
            source=dict(data.get("source") or {}),
            models=[SeriesModel.from_dict(s) for s in data["series"]],
            skipped=dict(data.get("skipped") or {}),
            level=float(data.get("level", 0.9)),
            calibration=dict(data.get("calibration") or {}),
            notes=list(data.get("notes") or []),
            seconds=float(data.get("seconds", 0.0)),
        )

    def save(self, path):
        """Write the model file (JSON).

        Parameters
        ----------
        path : str or Path

        Returns
        -------
        Path
        """
        path = Path(path)
        text = json.dumps(self.to_dict(), indent=None, default=_json_default)
        path.write_text(text + "\n", encoding="utf-8")
        return path


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to a model file")


def load_profile_fit(path):
    """Read a model file written by :meth:`ProfileFit.save`.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    ProfileFit

    Raises
    ------
    ValueError
        Not a profile model file.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a JSON model file ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a profile model file (format {FORMAT!r})")
    return ProfileFit.from_dict(data)


def is_profile_models(path):
    """Whether ``path`` is a model file of a profile (reads its first bytes)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            head = stream.read(200)
    except OSError:
        return False
    return f'"format": "{FORMAT}"' in head


def geometric_middle(low, high, measured=()):
    """The count halfway (in doublings) between ``low`` and ``high``, of the form
    the ``measured`` counts take.

    Counts that double from the smallest (or fewer than three) give a power of two
    times ``low`` (of two equally near, the larger). Counts that are all perfect
    cubes or all perfect squares (the process grids of codes that decompose a cube
    or a square, LULESH's 27 to 343 ranks) give the cube or square nearest the
    middle, at least ``low``'s next: a count the program can run at.

    Parameters
    ----------
    low, high : float
    measured : sequence of float, default=()
        The measured counts.

    Returns
    -------
    float

    Examples
    --------
    >>> geometric_middle(512, 8192)
    2048.0
    >>> geometric_middle(343, 8000, [27, 64, 125, 216, 343])  # 1372 is no cube
    1331.0
    >>> geometric_middle(36, 4096, [4, 9, 16, 25, 36])  # 288 is no square
    289.0
    """
    steps = max(1, math.floor(math.log2(high / low) / 2 + 0.5))  # a tie: the farther
    middle = float(low * 2.0**steps)
    power = grid_power(measured)
    if power is None:
        return middle
    side = max(round(middle ** (1.0 / power)), round(low ** (1.0 / power)) + 1)
    return float(side**power)


def grid_power(counts):
    """The power every count is a perfect power of, for a grid of cubes or squares.

    Counts that double from the smallest, and fewer than three counts, are no such
    grid (a power of two times the smallest is their form).

    Parameters
    ----------
    counts : sequence of float

    Returns
    -------
    int or None
        3 (every count a perfect cube), 2 (a perfect square), else None.

    Examples
    --------
    >>> grid_power([27, 64, 125]), grid_power([4, 9, 16]), grid_power([1, 8, 64])
    (3, 2, None)
    """
    counts = np.asarray(counts, dtype=float)
    if counts.size < 3 or _doubling(counts):
        return None
    for power in (3, 2):
        roots = np.round(counts ** (1.0 / power))
        if np.all(roots**power == counts):
            return power
    return None


def doublings_words(value):
    """A distance in doublings, in words.

    Parameters
    ----------
    value : float

    Returns
    -------
    str

    Examples
    --------
    >>> doublings_words(1.0), doublings_words(0.415), doublings_words(4.49)
    ('1 doubling', '0.41 doublings', '4.5 doublings')
    """
    text = f"{value:.2g}"
    return f"{text} doubling" + ("" if text == "1" else "s")


def _doubling(counts):
    """Whether every count is a power of two times the smallest."""
    steps = np.log2(counts / counts.min())
    return bool(np.all(np.isclose(steps, np.round(steps))))
