"""The result of :func:`~scaleprobe.models.fit_ensemble`: models, scores, verdict."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.interface import describe_model
from ..core.measured import measured_frame
from ..core.warnings import ExtrapolationWarning, warn
from ..profiles.result import doublings_words, geometric_middle
from ..projection.alternatives import join_alternatives
from ..projection.grid import (
    CANNOT_TELL_RATIO,
    measured_outside,
    project,
    resolve_ppn,
    training_frame,
    wide_nodes,
    widen_to_measured,
)
from ..selection.choose import Verdict, render_verdict
from ..selection.rules import floor_model

__all__ = ["EnsembleFit"]

#: Why counts of the other axis cannot be projected without ranks per node (the
#: wording of :meth:`~scaleprobe.models.profiles.ProfileFit.resolve`).
_UNCONVERTED = (
    "the model's data run over {axis}; give {axis} (--{axis}) or the ranks per "
    "node (--ppn) to convert {asked}"
)

#: The bandwidth (% of the link) of data measured without throttling it.
FULL_BANDWIDTH = 100.0

SCORE_COLUMNS = [
    "model",
    "cv",
    "smape",
    "mape",
    "r2",
    "within_10",
    "coverage",
    "interval_ratio",
]


@dataclass(frozen=True)
class EnsembleFit:
    """Fitted models, their scores, and the verdict on which model to trust.

    Attributes
    ----------
    models : dict of str to PerformanceModel
        Every model of the ensemble, refitted on all data, and ``baseline`` (and
        the models the verdict fitted itself: ``regime``, ``flat``).
    scores : xarray.Dataset
        Cross-validation scores (:func:`~scaleprobe.models.evaluate`).
    summary : pandas.DataFrame
        Scores averaged over groups and folds.
    verdict : Verdict
        The model scaleprobe trusts for projections (or none) and why
        (:func:`~scaleprobe.models.choose_model`).
    notes : list of str
        What the fit left out or could not do, the verdict's refusals and notes
        among them (in the order they were found).
    intervals : dict of str to PredictionInterval
    training : dict
        Target, process column, trained ppn, link (bytes/s, s), feature ranges,
        units, configuration and measurement counts, ``s0``, provenance.
    """

    models: dict
    scores: object
    summary: pd.DataFrame
    verdict: Verdict
    notes: list = field(default_factory=list)
    intervals: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)

    @property
    def selected(self):
        """The model scaleprobe trusts for projections, or None (the verdict's)."""
        return self.verdict.trusted

    @property
    def plausible(self):
        """The alternatives whose intervals join the trusted model's."""
        return tuple(self.verdict.plausible or ())

    def frame(
        self, *, nodes, bandwidth=100.0, scale=None, ppn=None, link=None, params=None
    ):
        """A prediction frame on the training's ppn (see
        :func:`~scaleprobe.models.prediction_frame`); application parameters default
        to their trained values."""
        return training_frame(
            self.training,
            nodes=nodes,
            bandwidth=bandwidth,
            scale=scale,
            ppn=ppn,
            link=link,
            params=params,
        )

    def floor_model(self):
        """The fitted model that knows the latency floor, when there is one."""
        return floor_model(self.models)

    def project(
        self,
        name=None,
        *,
        nodes=None,
        ranks=None,
        bandwidth=100.0,
        scale=None,
        ppn=None,
        link=None,
        params=None,
    ):
        """Project a model (default: the selected one); see :func:`project`.

        ``nodes`` or ``ranks`` are converted to the counts of the model's data
        (:meth:`counts`): ranks for a model of rank counts alone, else nodes.

        Raises
        ------
        ValueError
            When no name is given and no model was selected (the verdict says why);
            counts :meth:`counts` refuses; a scale or a bandwidth other than 100 %
            for data without that axis.

        Warns
        -----
        ExtrapolationWarning
            Without a name, when the selected model cannot name a time at a scale or
            parameter value that was not measured (the naive trend has no law
            across sizes): the projection is then that of the next plausible model
            that can, the traffic-informed one first, and ``trusted_model`` names
            the selected one.
        """
        named = name is not None
        name = self._model_name(name)
        nodes, ppn = self.counts(nodes=nodes, ranks=ranks, ppn=ppn)
        self._check_trained(bandwidth, scale)
        where = {"bandwidth": bandwidth, "scale": scale, "ppn": ppn, "link": link}
        candidates = [name] if named else [name, *self._size_laws(name)]
        reason = ""
        for position, candidate in enumerate(candidates):
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    out = self._project_one(candidate, nodes, params=params, **where)
                break
            except ValueError as error:
                if named or "not measured" not in str(error):
                    raise
                reason = reason or str(error).splitlines()[0]
                if position == len(candidates) - 1:
                    raise ValueError(
                        self._unreachable(name, reason, nodes, params, where)
                    ) from None
        for item in caught:  # the projection's own warnings, once
            warnings.warn_explicit(
                item.message, item.category, item.filename, item.lineno
            )
        if candidate != name:
            warn(
                f"{name}, the trusted model, has no law across the sizes it was "
                f"trained on ({reason}): this projection is "
                f"{candidate}'s, the next plausible model that has one",
                ExtrapolationWarning,
                stacklevel=2,
            )
            out.attrs["trusted_model"] = name
            name = candidate
        out.attrs["model_name"] = name
        out.attrs["law"] = describe_model(self.models[name])
        default = name == self.selected or "trusted_model" in out.attrs
        if default and self.intervals.get(name) is not None:
            join_alternatives(self, out, name, nodes, params=params, **where)
            widen_to_measured(out, self.training)  # after the floor lifted it
        wide = wide_nodes(out)
        if wide.size:
            out.attrs["cannot_tell_from"] = float(wide[0])
            out.attrs["cannot_tell_at"] = [float(n) for n in wide]
        return self._labelled(out)

    def _model_name(self, name):
        """``name``, else the selected model's; an error when the fit has neither."""
        name = name or self.selected
        if name is None:
            raise ValueError(f"no model to project: {self.verdict.reason}")
        if name not in self.models:
            raise ValueError(
                f"model {name!r} is not in this fit; it has {', '.join(self.models)}"
            )
        return name

    def _unreachable(self, name, reason, nodes, params, where):
        """Why the trusted model and the plausible ones cannot project a size never
        measured, and which of the others can (by name)."""
        reach = []
        for other in self.models:
            if other == name or other in self.plausible:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._project_one(other, nodes, params=params, **where)
            except ValueError:
                continue
            reach.append(other)
        text = (
            f"{name}, the trusted model, has no law across the sizes it was trained "
            f"on ({reason})"
        )
        if self.plausible:
            text += ", nor has any plausible model"
        if not reach:
            return text + "; no model of this fit reaches that size"
        return (
            f"{text}; {', '.join(reach)} can project it by name (not trusted: "
            "see the verdict), e.g. --name " + reach[0]
        )

    @property
    def ranks_only(self):
        """Whether the models were fitted on rank counts without ranks per node:
        projections then run over ranks, labelled so."""
        return self.training.get("column") == "ranks" and not self.training.get("ppn")

    def counts(self, *, nodes=None, ranks=None, ppn=None):
        """The counts a projection runs over, and its ranks per node.

        A model of rank counts alone (:attr:`ranks_only`) projects over ranks: node
        counts need ``ppn`` to become ranks, rank counts take none. Any other model
        projects over nodes: rank counts are divided by ``ppn`` (default: the
        trained one) into whole nodes.

        Parameters
        ----------
        nodes, ranks : array-like, default=None
            One of them: the node or the rank counts asked for.
        ppn : float, default=None
            Ranks per node.

        Returns
        -------
        counts : numpy.ndarray
            Ranks for a model of rank counts alone, else nodes.
        ppn : float or None
            1 for a model of rank counts alone (its counts are ranks), else
            ``ppn`` (None: the trained one).

        Raises
        ------
        ValueError
            Both or neither counts; nodes for a model of ranks alone without
            ``ppn``, or ranks with it; rank counts that are not whole nodes.

        Examples
        --------
        >>> from scaleprobe.models.selection.choose import Verdict
        >>> fit = EnsembleFit({}, None, pd.DataFrame(), Verdict(None, ""),
        ...                   training={"column": "nodes", "ppn": [4]})
        >>> fit.counts(ranks=[128, 256])
        (array([32., 64.]), 4.0)
        """
        if (nodes is None) == (ranks is None):
            raise ValueError("give the counts to project to: nodes or ranks, one")
        asked = "ranks" if ranks is not None else "nodes"
        values = np.atleast_1d(np.asarray(ranks if asked == "ranks" else nodes, float))
        if ppn is not None and not (float(ppn) >= 1 and float(ppn).is_integer()):
            raise ValueError(
                "ppn (ranks per node) must be a whole number of at least 1; "
                f"got {ppn:g}"
            )
        if self.ranks_only:
            return self._rank_counts(values, asked, ppn), 1.0
        if asked == "nodes":
            return values, ppn
        if ppn is None and not self.training.get("ppn"):
            raise ValueError(_UNCONVERTED.format(axis="nodes", asked="ranks"))
        # the projection itself warns of a ppn other than the trained one
        ppn = float(ppn) if ppn is not None else resolve_ppn(None, self.training)
        nodes = values / ppn
        partial = values[nodes != np.round(nodes)]
        if partial.size:
            raise ValueError(
                f"{partial[0]:g} ranks are not a whole number of nodes at {ppn:g} "
                f"ranks per node; give rank counts that are multiples of {ppn:g}"
            )
        return nodes, ppn

    def _check_trained(self, bandwidth, scale):
        """Refuse a bandwidth the data do not have as an axis, and a scale data
        measured outside scaleprobe do not have: a model fitted without one cannot
        tell what it changes. (A sweep of one kernel at one scale keeps it: its
        TEPS are counted at the scale it names.)"""
        ranges = self.training.get("feature_ranges")
        if ranges is None:  # no record of what was trained: nothing to check
            return
        trained = ", ".join(ranges) or "none"
        outside = measured_outside(self.training)
        if scale is not None and "scale" not in ranges and outside:
            asked = ", ".join(f"{v:g}" for v in np.atleast_1d(scale).astype(float))
            raise ValueError(
                f"scale {asked}: the models were not trained over a scale (their "
                f"data have none); they were trained over: {trained}"
            )
        others = np.atleast_1d(np.asarray(bandwidth, dtype=float))
        others = others[others != FULL_BANDWIDTH]
        if others.size and "bandwidth" not in ranges:
            raise ValueError(
                f"bandwidth {others[0]:g} %: the models were not trained over a "
                "bandwidth (their data were measured on the link as it is, "
                f"{FULL_BANDWIDTH:g} %); they were trained over: {trained}"
            )

    @staticmethod
    def _rank_counts(values, asked, ppn):
        """The ranks of a model of rank counts alone, from ``values`` of ``asked``."""
        if asked == "nodes" and ppn is None:
            raise ValueError(_UNCONVERTED.format(axis="ranks", asked="nodes"))
        if asked == "ranks" and ppn is not None:
            raise ValueError(
                "the model's data run over ranks, without ranks per node: rank "
                "counts take no ppn (give ranks alone, or nodes with ppn)"
            )
        return values * ppn if asked == "nodes" else values

    def _labelled(self, out):
        """The projection over ``ranks`` for a model of ranks alone, and without
        the attributes of another kind of data (the edges per vertex of TEPS) or
        the axes data measured outside scaleprobe do not have (the bandwidth of
        data measured on the link as it is)."""
        if "teps_predicted" not in out:
            out.attrs.pop("edgefactor", None)
        ranges = self.training.get("feature_ranges") or {"bandwidth": None}
        if (
            "bandwidth" not in ranges
            and "bandwidth" in out.dims
            and measured_outside(self.training)
        ):
            out = out.isel(bandwidth=0, drop=True)
        if self.ranks_only and "nodes" in out.dims:
            out = out.rename({"nodes": "ranks"})
            out["ranks"].attrs.update({"units": "1", "long_name": "MPI ranks"})
            out.attrs.pop("ppn", None)
        return out

    def _project_one(self, name, nodes, *, bandwidth, scale, ppn, link, params):
        return project(
            self.models[name],
            nodes=nodes,
            bandwidth=bandwidth,
            scale=scale,
            ppn=ppn,
            interval=self.intervals.get(name),
            link=link,
            training=self.training,
            floor_model=self.floor_model(),
            target=self.training.get("target", "time"),
            params=params,
            name=name,
        )

    def _size_laws(self, name):
        """Plausible models to project a size ``name`` cannot reach, in preference.

        The traffic-informed model first (it carries the physics), then the other
        plausible ones by extrapolation SMAPE.
        """
        plausible = [m for m in self.plausible if m != name]
        table = self.summary
        smape = {}
        if not table.empty and {"model", "cv", "smape"} <= set(table.columns):
            cv = "extrapolation" if (table["cv"] == "extrapolation").any() else None
            rows = table if cv is None else table[table["cv"] == cv]
            smape = dict(zip(rows["model"], rows["smape"], strict=True))
        return sorted(
            plausible,
            key=lambda m: (m != "traffic", smape.get(m, np.inf)),
        )

    def cannot_tell_message(self, projection):
        """One line on where the projection's interval stops being an answer, or ''.

        Parameters
        ----------
        projection : xarray.Dataset
            Output of :meth:`project`.

        Returns
        -------
        str
        """
        horizon = projection.attrs.get("cannot_tell_from")
        if horizon is None:
            return ""
        level = projection.attrs.get("interval_level", 0.9)
        wide = list(projection.attrs.get("cannot_tell_at", [horizon]))
        axis = "ranks" if "ranks" in projection.dims else "nodes"
        counts = projection[axis].values if axis in projection.coords else []
        beyond = [float(n) for n in counts if n >= horizon]
        if beyond and sorted(wide) != sorted(beyond):
            # the interval narrows again further out (a joined law ruled out there)
            where = "at " + ", ".join(f"{n:g}" for n in wide) + f" {axis}"
        else:
            where = f"from {horizon:g} {axis} on"
        return (
            f"{where}, the {level:.0%} interval spans more than "
            f"{CANNOT_TELL_RATIO:g}x: the data cannot tell the "
            f"{self.training.get('target', 'time')} there — "
            f"{self.next_measurement(horizon, axis, self.untrained(projection))} "
            "to know more"
        )

    def unchecked_message(self, projection):
        """One line on where the interval's widening goes beyond its check, or ''.

        The calibration measured the widening per doubling on counts held out at
        most ``interval_checked_doublings`` doublings beyond the counts fitted; the
        same distance beyond the full data (``interval_checked_to``) is as far as
        that rate was checked. Further out the interval assumes it: a band that
        looks narrow there rests on a rate nothing measured that far.

        Parameters
        ----------
        projection : xarray.Dataset
            Output of :meth:`project`.

        Returns
        -------
        str
            Empty when every projected count lies within the checked distance or
            spans more than ten times (:meth:`cannot_tell_message` says so), or
            the projection has no interval. A calibration that held no count out
            checked nothing: every count beyond the data is named.
        """
        checked = projection.attrs.get("interval_checked_to")
        axis = "ranks" if "ranks" in projection.dims else "nodes"
        column = projection.attrs.get("interval_column", axis)
        if checked is None or column != axis or axis not in projection.coords:
            return ""  # (a law in ranks projected over nodes: not comparable)
        wide = set(projection.attrs.get("cannot_tell_at", []))  # said already
        beyond = [
            float(n)
            for n in projection[axis].values
            if n > checked * 1.0001 and float(n) not in wide
        ]
        if not beyond:
            return ""
        doublings = projection.attrs["interval_checked_doublings"]
        largest = checked / 2.0**doublings  # the largest count the fit measured
        where = f"at {beyond[0]:g} {axis}, "
        if len(beyond) > 1:
            where = f"from {min(beyond):g} to {max(beyond):g} {axis}, up to "
        out = math.log2(max(beyond) / largest)
        checked = (
            f"its calibration checked it at most {doublings_words(doublings)} "
            "beyond the counts it fitted"
            if doublings > 0
            else f"no {axis[:-1]} count was held out to check it"
        )
        return (
            f"{where}{doublings_words(out)} beyond the largest measured "
            f"({largest:g}), the interval's widening is extrapolated: {checked}"
        )

    def untrained(self, projection):
        """The projection's parameters that lie outside the ranges trained on.

        Parameters
        ----------
        projection : xarray.Dataset
            Output of :meth:`project`.

        Returns
        -------
        list of str
            One ``"name value (trained low-high)"`` per parameter (node, rank and
            process-per-node counts excepted), the value farthest above the range
            (below it when none is above).
        """
        ranges = self.training.get("feature_ranges") or {}
        out = []
        for name, (low, high) in ranges.items():
            if name in ("nodes", "ranks", "ppn") or name not in projection.coords:
                continue
            values = np.asarray(projection[name].values, dtype=float)
            above, below = values[values > high], values[values < low]
            if above.size or below.size:
                value = above.max() if above.size else below.min()
                out.append(f"{name} {value:g} (trained {low:g}-{high:g})")
        return out

    def next_measurement(self, horizon, axis="nodes", untrained=()):
        """Which measurement would narrow the interval at ``horizon``, in words.

        A count between the largest measured and ``horizon`` (their geometric
        middle, at least twice the largest, of the measured counts' form:
        :func:`~scaleprobe.models.profiles.result.geometric_middle`): the interval's
        calibration reaches as far as the counts held out in it; and more
        repetitions when the measured runs spread by more than 10 %. When the
        projection's parameters lie outside the trained ranges (``untrained``), a
        measurement nearer them; alone when the interval is too wide already at a
        measured count, where no larger count would help.

        Parameters
        ----------
        horizon : float
            The count from which the data cannot tell.
        axis : str, default="nodes"
        untrained : sequence of str, default=()
            From :meth:`untrained`.

        Returns
        -------
        str
        """
        nearer = ""
        if untrained:
            nearer = "measure nearer the projected " + ", ".join(untrained)
        references = [iv.reference for iv in self.intervals.values() if iv]
        if not references:
            return nearer or f"measure larger {axis[:-1]} counts"
        largest = max(references)
        if nearer and horizon <= largest:
            return nearer
        target = geometric_middle(
            largest, max(horizon, 2.0 * largest), self._measured_counts()
        )
        text = f"measure at {target:g} {axis} (the largest measured is {largest:g})"
        if nearer:
            text += ", and " + nearer[len("measure ") :]
        spread = self.training.get("run_spread")
        if spread is not None and np.isfinite(spread) and spread > 0.1:
            text += f" and repeat the runs (they spread by {spread:.0%})"
        return text

    def _measured_counts(self):
        """The node (or rank) counts the fit measured, or () when it kept none."""
        measured = measured_frame(self.training)
        column = self.training.get("column", "nodes")
        if measured is None or column not in measured.columns:
            return ()
        return np.unique(measured[column].to_numpy(dtype=float))

    def score_table(self, cv="extrapolation"):
        """Mean scores per model under ``cv`` (all splitters when absent), baseline
        included, best SMAPE first."""
        table = self.summary
        if cv in set(table["cv"]):
            table = table[table["cv"] == cv]
        columns = [c for c in SCORE_COLUMNS if c in table.columns]
        return table[columns].sort_values("smape").reset_index(drop=True)

    def describe(self):
        """The text ``scaleprobe fit`` and the demo print."""
        lines = ["cross-validation (mean over folds; scores per configuration):"]
        for cv in sorted(set(self.summary["cv"])):
            table = self.score_table(cv)
            lines.append(f"  {cv}:")
            text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
            lines += ["    " + line for line in text.splitlines()]
        lines.append("laws fitted on all data:")
        for name, model in self.models.items():
            lines.append(f"  {name}: {describe_model(model)}")
        verdict_lines = set(self.verdict.lines())
        for note in self.notes:
            if note not in verdict_lines:  # the verdict shows its own
                lines.append(f"note: {note}")
        spread = self.training.get("run_spread")
        if spread is not None and np.isfinite(spread):
            lines.append(f"repeated runs spread by {spread:.1%} (median max/min - 1)")
        lines.append(render_verdict(self.verdict))
        return "\n".join(lines)
