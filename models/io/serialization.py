"""Model files: fitted models with everything a projection needs to keep its meaning.

A model file is one JSON object::

    {
      "format": "scaleprobe-models",
      "version": 2,
      "selected": "traffic",              # the model scaleprobe trusts, or null
      "verdict": "scaleprobe trusts traffic: ...",
      "decision": {                       # the verdict whole (Verdict.to_dict)
        "trusted": "traffic", "reason": "...", "refused": [["base", "..."]],
        "notes": [...], "plausible": ["pmnf"], "cv": "extrapolation",
        "scores": {"traffic": 1.8, ...}
      },
      "notes": ["..."],
      "training": {                       # what the models were fitted on
        "target": "time", "column": "nodes", "ppn": [1],
        "link": {"link_bandwidth": 1.25e8, "latency": 5e-06},   # bytes/s, s
        "feature_ranges": {"nodes": [1, 8], "bandwidth": [25, 100], ...},
        "units": {"nodes": "1", "bandwidth": "percent", "time": "s", ...},
        "configurations": 36, "measurements": 576, "s0": 25, "run_spread": 0.04,
        "provenance": {"kernel": "graph500", "git_commit": "...", ...}
      },
      "scores": [{"model": "traffic", "cv": "extrapolation", "smape": 8.2, ...}],
      "models": {
        "<name>": {
          "estimator": "TrafficModel",    # ScalingLaw, PMNFSearch, PowerLawBaseline,
                                          #   FiM, RBASP, CommunicationPredictor...
          "law": "computation: ...",      # human-readable
          "params": {...},                # constructor arguments
          "state": {...},                 # fitted attributes (training configurations
                                          #   included, so intervals can be redrawn)
          "interval": {"level": 0.9, "kappa": 0.0, ...} or null
        }
      }
    }

Version 1 files (one ``law`` object per model with the arguments of
:meth:`ScalingLaw.from_coefficients`) still load, so a file is also the place to
type in coefficients from a paper.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from ..commpredictor.predictor import CommunicationPredictor
from ..core.interface import describe_model
from ..ensemble.result import EnsembleFit
from ..evaluation.intervals import PredictionInterval
from ..fim.cal import FiMCal
from ..fim.com import FiMCom
from ..fim.model import FiM
from ..fim.rbasp import RBASP
from ..laws.baseline import PowerLawBaseline, RegimeTrend
from ..laws.flat import FlatTrend
from ..laws.pmnf import PMNFSearch
from ..laws.rounds import RoundLaw
from ..laws.scaling_law import ScalingLaw
from ..selection.choose import Verdict
from ..traffic.model import TrafficModel

__all__ = ["ESTIMATORS", "load_models", "save_models"]

FORMAT = "scaleprobe-models"
VERSION = 2

#: Estimator classes a model file may hold, by name.
ESTIMATORS = {
    cls.__name__: cls
    for cls in (
        ScalingLaw,
        PMNFSearch,
        TrafficModel,
        PowerLawBaseline,
        RegimeTrend,
        FlatTrend,
        CommunicationPredictor,
        FiMCal,
        FiMCom,
        FiM,
        RBASP,
        RoundLaw,
    )
}


def _encode(value):
    if isinstance(value, BaseEstimator):
        state = {
            k: _encode(v)
            for k, v in vars(value).items()
            if k.endswith("_") and not k.startswith("_")
        }
        return {
            "__estimator__": type(value).__name__,
            "params": _encode(value.get_params(deep=False)),
            "state": state,
        }
    if isinstance(value, pd.DataFrame):
        return {"__frame__": _encode(value.to_dict(orient="split"))}
    if isinstance(value, np.ndarray):
        return {"__array__": _encode(value.tolist()), "dtype": str(value.dtype)}
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {"__items__": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, np.generic):
        return _encode(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    return value


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__estimator__" in value:
        name = value["__estimator__"]
        if name not in ESTIMATORS:
            raise ValueError(
                f"unknown estimator {name!r}; a model file may hold "
                f"{sorted(ESTIMATORS)}"
            )
        model = ESTIMATORS[name](**_decode(value.get("params", {})))
        for key, item in value.get("state", {}).items():
            setattr(model, key, _decode(item))
        return model
    if "__frame__" in value:
        split = _decode(value["__frame__"])
        return pd.DataFrame(
            split["data"], index=split["index"], columns=split["columns"]
        )
    if "__array__" in value:
        return np.asarray(_decode(value["__array__"]), dtype=value["dtype"])
    if "__items__" in value:
        return {_hashable(_decode(k)): _decode(v) for k, v in value["__items__"]}
    if "__tuple__" in value:
        return tuple(_decode(v) for v in value["__tuple__"])
    if "__float__" in value:
        return float(value["__float__"])
    return {k: _decode(v) for k, v in value.items()}


def _hashable(key):
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def save_models(path, fit):
    """Write an :class:`EnsembleFit` to a JSON model file.

    Parameters
    ----------
    path : str or Path
    fit : EnsembleFit

    Returns
    -------
    Path
    """
    models = {}
    for name, model in fit.models.items():
        if type(model).__name__ not in ESTIMATORS:
            continue
        encoded = _encode(model)
        interval = fit.intervals.get(name)
        models[name] = {
            "estimator": encoded["__estimator__"],
            "law": describe_model(model),
            "params": encoded["params"],
            "state": encoded["state"],
            "interval": None if interval is None else interval.to_dict(),
        }
    document = {
        "format": FORMAT,
        "version": VERSION,
        "selected": fit.selected,
        "verdict": fit.verdict.reason,
        "decision": _encode(fit.verdict.to_dict()),
        "notes": list(fit.notes),
        "training": _encode(fit.training),
        "scores": _encode(fit.summary.to_dict(orient="records")),
        "models": models,
    }
    path = Path(path)
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    return path


def _version1(document, path):
    models, intervals = {}, {}
    for name, entry in document["models"].items():
        try:
            law = entry["law"]
            models[name] = ScalingLaw.from_coefficients(**law)
        except (KeyError, TypeError) as error:
            raise ValueError(
                f"{path}: model {name!r} needs a 'law' object with the arguments of "
                f"ScalingLaw.from_coefficients ({error})"
            ) from None
    selected = document.get("selected") or next(iter(models))
    return EnsembleFit(
        models=models,
        scores=None,
        summary=pd.DataFrame(columns=["model", "cv"]),
        verdict=Verdict(selected, f"{selected}: coefficients from the file"),
        intervals=intervals,
        training={"target": document.get("target", "time")},
    )


def _verdict(document, training):
    """The verdict of a file; files written before it was kept whole have the
    trusted model, its reason and the plausible alternatives (in the training)."""
    decision = document.get("decision")
    if decision:
        return Verdict.from_dict(_decode(decision))
    plausible = training.pop("plausible", None)
    return Verdict(
        trusted=document.get("selected"),
        reason=document.get("verdict", ""),
        plausible=None if plausible is None else tuple(plausible),
    )


def load_models(path):
    """Read a model file written by :func:`save_models` (or a version-1 file).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    EnsembleFit
        Without cross-validation scores (``scores`` is None); ``summary`` holds the
        stored mean scores.
    """
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not JSON: {error}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a text file") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(
            f"{path} is not a scaleprobe model file (expected format {FORMAT!r})"
        )
    if not document.get("models"):
        raise ValueError(f"{path} holds no models")
    if document.get("version", 1) == 1:
        return _version1(document, path)
    models, intervals = {}, {}
    for name, entry in document["models"].items():
        try:
            models[name] = _decode(
                {
                    "__estimator__": entry["estimator"],
                    "params": entry.get("params", {}),
                    "state": entry.get("state", {}),
                }
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"{path}: model {name!r} cannot be read: {error}"
            ) from None
        if entry.get("interval"):
            try:
                intervals[name] = PredictionInterval.from_dict(entry["interval"])
            except TypeError as error:
                raise ValueError(
                    f"{path}: the interval of {name!r} is malformed: {error}"
                ) from None
    training = _decode(document.get("training") or {})
    return EnsembleFit(
        models=models,
        scores=None,
        summary=pd.DataFrame(_decode(document.get("scores") or [])),
        verdict=_verdict(document, training),
        notes=list(document.get("notes") or []),
        intervals=intervals,
        training=training,
    )
