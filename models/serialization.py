"""JSON form of fitted scaling laws.

A model file is one JSON object::

    {
      "format": "scaleprobe-models",
      "version": 1,
      "selected": "generalized_refined",        # best extrapolation score, or null
      "target": "time",
      "models": {
        "<name>": {
          "estimator": "ScalingLaw",             # or "PMNFSearch" (what was fitted)
          "law": {                               # keyword arguments of
            "form": "refined",                   #   ScalingLaw.from_coefficients:
            "coef": [118.026, 5.968],            #   form is a preset name or a
            "alpha": 1.11,                       #   list of terms
            "ppn": 18,
            "s0": 25,
            "over": "nodes"
          },
          "terms": ["1/p", "alpha^(100/bw)/sqrt(p)"],
          "interval": {"level": 0.9, "log_halfwidth": 0.05, "reference_nodes": 32,
                       "n_calibration": 120, "calibrated_distance": 2.0,
                       "column": "nodes"}        # or null
        }
      }
    }

``ScalingLaw.from_coefficients(**entry["law"])`` rebuilds each model, so the file is
also the place to type in coefficients from a paper.
"""

from __future__ import annotations

import json
from pathlib import Path

from .intervals import PredictionInterval
from .scaling_law import PRESETS, ScalingLaw

__all__ = ["load_models", "model_from_dict", "model_to_dict", "save_models"]

FORMAT = "scaleprobe-models"
VERSION = 1


def model_to_dict(model, interval=None):
    """JSON-ready dict of a fitted ScalingLaw or PMNFSearch (see module docstring).

    Examples
    --------
    >>> m = ScalingLaw.from_coefficients("base", [30.4, 0.98], ppn=18)
    >>> law = model_to_dict(m)["law"]
    >>> law["form"], law["coef"], law["alpha"], law["ppn"]
    ('base', [30.4, 0.98], None, 18.0)
    """
    law = getattr(model, "best_estimator_", model)
    if not hasattr(law, "coef_") or not hasattr(law, "terms_"):
        raise TypeError(
            f"cannot serialise {type(model).__name__}: not a fitted "
            "ScalingLaw or PMNFSearch"
        )
    form = law.form if law.terms is None and law.form in PRESETS else list(law.terms_)
    return {
        "estimator": type(model).__name__,
        "law": {
            "form": form,
            "coef": [float(c) for c in law.coef_],
            "alpha": None if law.alpha_ is None else float(law.alpha_),
            "ppn": None if law.ppn is None else float(law.ppn),
            "s0": float(law.s0),
            "over": law.over,
        },
        "terms": list(law.terms_),
        "interval": None if interval is None else interval.to_dict(),
    }


def model_from_dict(entry):
    """Rebuild ``(ScalingLaw, PredictionInterval or None)`` from a model entry."""
    try:
        law = entry["law"]
    except (KeyError, TypeError):
        raise ValueError(
            "a model entry needs a 'law' object with the arguments of "
            "ScalingLaw.from_coefficients"
        ) from None
    model = ScalingLaw.from_coefficients(**law)
    interval = entry.get("interval")
    return model, None if interval is None else PredictionInterval.from_dict(interval)


def save_models(path, models, *, intervals=None, selected=None, target="time"):
    """Write fitted models (a dict name -> model) to a JSON file.

    Parameters
    ----------
    path : str or Path
    models : dict of str to fitted ScalingLaw or PMNFSearch
    intervals : dict of str to PredictionInterval, default=None
    selected : str, default=None
        Name of the model to use by default (e.g. from ``select_model``).
    target : str, default="time"

    Returns
    -------
    Path
    """
    intervals = intervals or {}
    if selected is not None and selected not in models:
        raise ValueError(f"selected {selected!r} is not one of {sorted(models)}")
    document = {
        "format": FORMAT,
        "version": VERSION,
        "selected": selected,
        "target": target,
        "models": {
            name: model_to_dict(m, intervals.get(name)) for name, m in models.items()
        },
    }
    path = Path(path)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def load_models(path):
    """Read a model file written by :func:`save_models` (or by hand).

    Returns
    -------
    models : dict of str to ScalingLaw
    intervals : dict of str to PredictionInterval
    selected : str
        The file's ``selected`` entry, or its first model.
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(
            f"{path} is not a scaleprobe model file (expected format {FORMAT!r})"
        )
    entries = document.get("models") or {}
    if not entries:
        raise ValueError(f"{path} holds no models")
    models, intervals = {}, {}
    for name, entry in entries.items():
        models[name], interval = model_from_dict(entry)
        if interval is not None:
            intervals[name] = interval
    selected = document.get("selected") or next(iter(models))
    return models, intervals, selected
