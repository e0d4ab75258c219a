"""The model of one series of a profile: its law, its interval and the verdict on it.

A :class:`SeriesModel` is what :func:`~scaleprobe.models.profiles.fit_profile`
keeps of each series: the measured counts and centres, the law chosen
(:class:`~scaleprobe.models.profiles.search.Candidate` and its two coefficients),
the plausible alternatives whose range the interval spans, the widening per
doubling beyond the largest count that held-out counts called for, and the verdict:
``trusted`` (the law held its held-out check), ``fallback`` (no law did, but the naive
trend held its own: it is projected, labelled as such) or ``refused`` (nothing held:
the law is kept, to project by name, and the advice says which measurement would
tell).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.interface import INTERVAL_FLOOR
from ..laws.regime import REGIME_SPREAD
from ..laws.terms import parse_term
from .search import Candidate

__all__ = [
    "FLOOR",
    "STATUSES",
    "SeriesModel",
    "candidate_from_dict",
    "candidate_to_dict",
    "interval_scale",
]

#: What a series' verdict may be.
STATUSES = ("trusted", "fallback", "refused")
#: Spread (log) per doubling beyond the largest count that every interval has at
#: least, before calibration and after it: laws that agree still do not know the
#: future, and a calibration on exact data sets its factor near zero.
FLOOR = INTERVAL_FLOOR


def interval_scale(form, spread, distance, standard, *, floor=FLOOR):
    """The scale (log) of a prediction's uncertainty, which an interval of a
    profile takes ``kappa`` times either side of its law.

    - ``"combined"`` (every calibrated profile): ``spread + floor d + sqrt(d) +
      se (1 + d)``, the plausible laws' disagreement there, ``floor`` per doubling
      ``d`` beyond the largest count, how far the law extrapolates (the error of a
      rolling origin grows as the square root of the distance when the slope
      drifts at random) and the standard error of a centre growing with the
      doublings;
    - ``"spread"`` (a profile too short to calibrate, and model files written
      before the distance term): the same without ``sqrt(d)``.

    Parameters
    ----------
    form : {"combined", "spread"}
    spread, distance, standard : float or ndarray
    floor : float, default=FLOOR

    Returns
    -------
    ndarray

    Examples
    --------
    >>> round(float(interval_scale("combined", 0.3, 4.0, 0.0)), 3)
    2.5
    >>> round(float(interval_scale("spread", 0.3, 4.0, 0.0)), 3)
    0.5
    """
    spread, distance, standard = np.broadcast_arrays(
        *(np.asarray(v, dtype=float) for v in (spread, distance, standard))
    )
    scale = spread + floor * distance + standard * (1.0 + distance)
    return scale + np.sqrt(distance) if form == "combined" else scale


def candidate_to_dict(law, coef):
    """A law and its coefficients as a JSON-ready dict."""
    return {
        "kind": law.kind,
        "term": None if law.term is None else law.term.name,
        "window": int(law.window),
        "coef": [float(c) for c in coef],
    }


def candidate_from_dict(data):
    """Inverse of :func:`candidate_to_dict`: ``(Candidate, coef)``."""
    term = data.get("term")
    law = Candidate(
        data["kind"], None if term is None else parse_term(term), data.get("window", 0)
    )
    return law, np.asarray(data["coef"], dtype=float)


@dataclass
class SeriesModel:
    """One series' law, interval and verdict.

    Attributes
    ----------
    name, callpath, metric : str
    parameters : dict of str to float
        The other parameters that fix the series.
    unit : str
        Unit of the metric ("" when not stated).
    x, centre, count : ndarray
        Measured counts, mean of the repetitions at each, and their number.
    noise : float
        Pooled standard deviation of the log of the repetitions (0 without).
    law : Candidate
    coef : ndarray of shape (2,)
    alternatives : list of tuple of (Candidate, ndarray)
        Laws whose held-out errors were as good within the margin: the interval
        spans their range.
    status : {"trusted", "fallback", "refused"}
    reason : str
    check : float or None
        SMAPE (percent) of the law on the held-out counts, None when unchecked.
    trend_check : float or None
        SMAPE (percent) of the naive trend on the largest count held out.
    kappa : float
        The factor the interval takes on the plausible laws' spread (log), as
        calibrated on held-out counts over the profile.
    floor : float
        Spread (log) per doubling beyond the largest count the interval has at
        least.
    jumps : list of dict
        The breaks the data show (:func:`~scaleprobe.models.laws.regime.find_jumps`).
    advice : str
        Which measurement would tell more, when the data cannot tell.
    no_trend : bool
        Its counts show no trend beyond their noise, and its level is projected
        (:func:`~scaleprobe.models.profiles.search.no_trend`).
    """

    name: str
    callpath: str
    metric: str
    parameters: dict
    unit: str
    x: np.ndarray
    centre: np.ndarray
    count: np.ndarray
    noise: float
    law: Candidate
    coef: np.ndarray
    alternatives: list = field(default_factory=list)
    status: str = "refused"
    reason: str = ""
    check: float | None = None
    trend_check: float | None = None
    kappa: float = 1.0
    floor: float = 0.0
    form: str = "spread"
    jumps: list = field(default_factory=list)
    advice: str = ""
    no_trend: bool = False

    @property
    def held_out(self):
        """SMAPE (percent) on held-out counts of what the series projects: the
        naive trend's for a fallback, the law's otherwise; None when unchecked."""
        return self.trend_check if self.status == "fallback" else self.check

    @property
    def regime(self):
        """Whether the law continues a change of regime at the largest count."""
        return bool(self.jumps) and self.jumps[-1]["index"] == len(self.x) - 1

    def predict(self, x):
        """The law's value at ``x``, never below zero (a law that turns negative
        far beyond the data predicts 0 there, and its interval says the data
        cannot tell).

        Parameters
        ----------
        x : array-like

        Returns
        -------
        ndarray
        """
        value = self.law.predict(self.coef, np.asarray(x, dtype=float))
        return np.maximum(value, 0.0)

    def doublings(self, x):
        """Doublings between ``x`` and the nearest measured count: beyond the
        largest, below the smallest or between two (0 at a measured count).

        Parameters
        ----------
        x : array-like

        Returns
        -------
        ndarray
        """
        x = np.asarray(x, dtype=float)
        with np.errstate(divide="ignore"):
            gaps = np.abs(np.log2(x[..., None] / self.x))
        return np.min(gaps, axis=-1)

    def misses(self, x):
        """How far (|log|) the law misses the measured centres nearest ``x``: the
        larger of its misses at the two counts about ``x`` inside the measured
        range, its miss at the nearest end outside it; infinite where the law is
        not positive at such a count (it cannot tell there).

        Parameters
        ----------
        x : array-like

        Returns
        -------
        ndarray
        """
        x = np.asarray(x, dtype=float)
        fitted = self.law.predict(self.coef, self.x)
        with np.errstate(divide="ignore", invalid="ignore"):
            miss = np.abs(np.log(np.where(fitted > 0, fitted, np.nan) / self.centre))
        # a hair wider than the miss, so that the measurement is inside its bound
        # after the round trip through log and exp
        miss = np.nan_to_num(miss, nan=np.inf) * (1.0 + 1e-9) + 1e-12
        above = np.clip(np.searchsorted(self.x, x, side="left"), 0, self.x.size - 1)
        below = np.clip(np.searchsorted(self.x, x, side="right") - 1, 0, None)
        return np.maximum(miss[above], miss[below])

    def interval(self, x):
        """``(lower, upper)``: the plausible laws' range, widened to ``kappa`` times
        the scale of the prediction's uncertainty either side of it (log: the
        plausible laws' spread, :attr:`floor` per doubling from the nearest measured
        count -- beyond the largest, below the smallest or between two -- and the
        standard error of a centre growing with the doublings; and the spread of
        slopes a new regime may take), and at least as wide as :attr:`floor` per
        doubling (whatever the calibration's factor) and as the law's misses of
        the measured centres nearest ``x`` (:meth:`misses`: at a measured count the
        interval holds its measurement); never below zero.

        Parameters
        ----------
        x : array-like

        Returns
        -------
        lower, upper : ndarray
        """
        x = np.asarray(x, dtype=float)
        centre = self.law.predict(self.coef, x)
        values = [centre, *(law.predict(coef, x) for law, coef in self.alternatives)]
        with np.errstate(all="ignore"):
            logs = np.log(np.where(np.vstack(values) > 0, np.vstack(values), np.nan))
        # fmin/fmax skip a law that is not positive there, silently
        low_log, high_log = np.fmin.reduce(logs, axis=0), np.fmax.reduce(logs, axis=0)
        spread = np.nan_to_num(high_log - low_log)
        distance = self.doublings(x)
        standard = self.noise / np.sqrt(max(float(np.mean(self.count)), 1.0))
        width = self.kappa * interval_scale(
            self.form, spread, distance, standard, floor=self.floor
        )
        if self.regime:
            width = width + REGIME_SPREAD * np.log(2.0) * distance
        # a calibration on few or exact errors may set the factor near zero: the
        # floor per doubling still holds
        width = np.maximum(width, np.maximum(self.floor * distance, self.misses(x)))
        with np.errstate(over="ignore", invalid="ignore"):
            lowest, highest = np.exp(low_log), np.exp(high_log)
            upper = np.fmax(highest, centre * np.exp(width))
            lower = np.fmin(lowest, np.maximum(centre, 0.0) * np.exp(-width))
        lower = np.nan_to_num(np.maximum(lower, 0.0), nan=0.0)
        # where no plausible law stays positive the data cannot tell: no upper bound
        upper = np.where(upper > 0, upper, np.nan)
        return lower, np.nan_to_num(upper, nan=np.inf, posinf=np.inf)

    def to_dict(self):
        """The model as a JSON-ready dict.

        Returns
        -------
        dict
        """
        return {
            "name": self.name,
            "callpath": self.callpath,
            "metric": self.metric,
            "parameters": dict(self.parameters),
            "unit": self.unit,
            "x": self.x.tolist(),
            "centre": self.centre.tolist(),
            "count": self.count.tolist(),
            "noise": float(self.noise),
            "law": candidate_to_dict(self.law, self.coef),
            "alternatives": [candidate_to_dict(*a) for a in self.alternatives],
            "status": self.status,
            "reason": self.reason,
            "check": self.check,
            "trend_check": self.trend_check,
            "kappa": float(self.kappa),
            "floor": float(self.floor),
            "form": self.form,
            "jumps": list(self.jumps),
            "advice": self.advice,
            "no_trend": bool(self.no_trend),
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`.

        Parameters
        ----------
        data : dict

        Returns
        -------
        SeriesModel
        """
        law, coef = candidate_from_dict(data["law"])
        fields = {
            k: data[k]
            for k in (
                "name",
                "callpath",
                "metric",
                "unit",
                "status",
                "reason",
                "advice",
            )
        }
        return cls(
            **fields,
            parameters=dict(data.get("parameters") or {}),
            x=np.asarray(data["x"], dtype=float),
            centre=np.asarray(data["centre"], dtype=float),
            count=np.asarray(data["count"], dtype=float),
            noise=float(data.get("noise", 0.0)),
            law=law,
            coef=coef,
            alternatives=[candidate_from_dict(a) for a in data.get("alternatives", [])],
            check=data.get("check"),
            trend_check=data.get("trend_check"),
            kappa=float(data.get("kappa", 1.0)),
            floor=float(data.get("floor", 0.0)),
            form=str(data.get("form", "spread")),
            jumps=list(data.get("jumps") or []),
            no_trend=bool(data.get("no_trend", False)),
        )
