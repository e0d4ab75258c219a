"""The result of :func:`~scaleprobe.models.fit_ensemble`: models, scores, verdict."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.features import prediction_frame
from ..core.warnings import ExtrapolationWarning, warn
from ..projection.alternatives import join_alternatives
from ..projection.grid import (
    CANNOT_TELL_RATIO,
    project,
    resolve_params,
    resolve_ppn,
    wide_nodes,
)

__all__ = ["EnsembleFit", "describe_model"]

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


def describe_model(model):
    """One line naming a fitted model's law (terms and coefficients, or its parts).

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> describe_model(ScalingLaw.from_coefficients(["1/p", "1"], [2.0, 0.5]))
    '2/p + 0.5'
    """
    law = getattr(model, "best_estimator_", model)
    if hasattr(law, "terms_") and hasattr(law, "coef_"):
        parts = []
        for term, coef in zip(law.terms_, law.coef_, strict=True):
            text = f"{coef:.4g}" if term == "1" else f"{coef:.4g}*{term}"
            parts.append(text.replace("*1/", "/"))
        text = " + ".join(parts)
        if getattr(law, "alpha_", None):
            text += f"  (alpha {law.alpha_:.3f})"
        return text
    laws = getattr(model, "laws_", None)
    if laws:
        lines = []
        for key, group in laws.items():
            label = ", ".join(
                f"{c}={v:g}" for c, v in zip(model.group_columns_, key, strict=True)
            )
            inner = "; ".join(
                f"{part}: {describe_model(law)}"
                for part, law in group.items()
                if part != "single_node" and law is not None
            )
            lines.append(f"[{label}] {inner}" if label else inner)
        return " | ".join(lines)
    if hasattr(law, "intercept_") and hasattr(law, "q_range_"):  # RBASP
        names = [*law.parameters_, "q"] + (["q^2"] if law.g == "quadratic" else [])
        terms = " ".join(f"{c:+.4g}*{n}" for c, n in zip(law.coef_, names, strict=True))
        return f"log2(time) = {law.intercept_:.4g} {terms}"
    if hasattr(law, "communication_") and hasattr(law, "computation_"):  # FiM
        cal = law.computation_
        parts = [f"computation: FiM-Cal (alpha {getattr(cal, 'alpha_', 1.0):.3g})"]
        load = getattr(law, "load_law_", None)
        if load is not None:
            mib = np.exp(np.asarray(load["knots"])[[0, -1]]) / 2**20
            beyond = ""
            if load.get("miss", 0.0) > 0:
                beyond = (
                    f"; beyond, a {load['cache'] / 2**20:.3g} MiB cache hit by a "
                    "share cache/load of accesses"
                )
            parts = [
                "computation: the work times its cycles per unit at the cache's load "
                f"({mib[0]:.3g}-{mib[1]:.3g} MiB measured{beyond})"
            ]
        wait = getattr(law, "wait_", None)
        if wait is not None:
            parts[0] += (
                f", the slowest of q ranks the mean rank's x (1 + "
                f"{wait[law.wait]:.3g} e(q)), e of the {law.wait} tail"
            )
        parts += [
            f"{kind}: FiM-Com {com.pattern} queue (eta {com.eta_:.3g} s, psi "
            f"{com.psi_:.3g} s)"
            for kind, com in law.communication_.items()
        ]
        return "; ".join(parts)
    if getattr(model, "mode_", None) == "time":
        return describe_model(model.time_law_)
    if hasattr(model, "lines_"):
        column = getattr(model, "process_column_", None) or "nodes"
        if hasattr(model, "spread_"):  # FlatTrend
            levels = [f"{a:.4g}" for a, _ in model.lines_.values()]
            shown = ", ".join(levels[:4]) + (", ..." if len(levels) > 4 else "")
            return (
                f"level of the measurements, the same at every {column[:-1]} "
                f"count ({shown})"
            )
        text = f"power law through the two largest {column[:-1]} counts of each group"
        changes = getattr(model, "changes_", None)
        if changes:
            text += (
                f"; after a jump at the largest count ({len(changes)} group(s)), the "
                "slope before it from the largest count"
            )
        return text
    return type(model).__name__


@dataclass
class EnsembleFit:
    """Fitted models, their scores, and the model scaleprobe trusts (or none).

    Attributes
    ----------
    models : dict of str to fitted estimator
        Every model of the ensemble, refitted on all data, and ``baseline``.
    scores : xarray.Dataset
        Cross-validation scores (:func:`~scaleprobe.models.evaluate`).
    summary : pandas.DataFrame
        Scores averaged over groups and folds.
    selected : str or None
        The model scaleprobe trusts for projections; None when none extrapolates
        within :data:`~scaleprobe.models.ensemble.fit.RELIABLE_SMAPE`.
    verdict : str
        Which model is trusted and why, or why none is.
    notes : list of str
        What the fit left out or could not do.
    intervals : dict of str to PredictionInterval
    training : dict
        Target, process column, trained ppn, link (bytes/s, s), feature ranges,
        units, configuration and measurement counts, ``s0``, provenance.
    """

    models: dict
    scores: object
    summary: pd.DataFrame
    selected: str | None
    verdict: str
    notes: list = field(default_factory=list)
    intervals: dict = field(default_factory=dict)
    training: dict = field(default_factory=dict)

    def frame(
        self, *, nodes, bandwidth=100.0, scale=None, ppn=None, link=None, params=None
    ):
        """A prediction frame on the training's ppn (see :func:`prediction_frame`);
        application parameters default to their trained values."""
        return prediction_frame(
            nodes,
            ppn=resolve_ppn(ppn, self.training),
            bandwidth=bandwidth,
            scale=scale,
            s0=self.training.get("s0", 25),
            link=link,
            params=resolve_params(params, self.training),
        )

    def floor_model(self):
        """The fitted traffic-informed model, when there is one (for floors)."""
        model = self.models.get("traffic")
        return model if getattr(model, "mode_", None) == "traffic" else None

    def project(
        self,
        name=None,
        *,
        nodes,
        bandwidth=100.0,
        scale=None,
        ppn=None,
        link=None,
        params=None,
    ):
        """Project a model (default: the selected one); see :func:`project`.

        Raises
        ------
        ValueError
            When no name is given and no model was selected (the verdict says why).

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
        name = name or self.selected
        if name is None:
            raise ValueError(f"no model to project: {self.verdict}")
        if name not in self.models:
            raise ValueError(
                f"model {name!r} is not in this fit; it has {', '.join(self.models)}"
            )
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
                last = position == len(candidates) - 1
                if last or "not measured" not in str(error):
                    raise
                reason = reason or str(error).splitlines()[0]
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
        wide = wide_nodes(out)
        if wide.size:
            out.attrs["cannot_tell_from"] = float(wide[0])
            out.attrs["cannot_tell_at"] = [float(n) for n in wide]
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
        )

    def _size_laws(self, name):
        """Plausible models to project a size ``name`` cannot reach, in preference.

        The traffic-informed model first (it carries the physics), then the other
        plausible ones by extrapolation SMAPE.
        """
        plausible = [m for m in self.training.get("plausible", []) if m != name]
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
        counts = projection["nodes"].values if "nodes" in projection.coords else []
        beyond = [float(n) for n in counts if n >= horizon]
        if beyond and sorted(wide) != sorted(beyond):
            # the interval narrows again further out (a joined law ruled out there)
            where = "at " + ", ".join(f"{n:g}" for n in wide) + " nodes"
        else:
            where = f"from {horizon:g} nodes on"
        return (
            f"{where}, the {level:.0%} interval spans more than "
            f"{CANNOT_TELL_RATIO:g}x: the data cannot tell the "
            f"{self.training.get('target', 'time')} there — measure larger node "
            "counts to know more"
        )

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
        for note in self.notes:
            lines.append(f"note: {note}")
        spread = self.training.get("run_spread")
        if spread is not None and np.isfinite(spread):
            lines.append(f"repeated runs spread by {spread:.1%} (median max/min - 1)")
        lines.append(self.verdict)
        return "\n".join(lines)
