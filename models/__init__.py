"""Performance models: scaling laws, automatic search, evaluation and projection.

>>> from scaleprobe.models import ScalingLaw, crossover_nodes
>>> eq6 = ScalingLaw.from_coefficients("refined", [118.026, 5.968], alpha=1.11, ppn=18)
>>> crossover_nodes(eq6, admissible=[4, 9, 16, 25, 36])
25
"""

from ._terms import Term, parse_term
from .derived import (
    bandwidth_demand,
    completion_time_increment,
    crossover_nodes,
    diminishing_returns_nodes,
    parallel_efficiency,
    speedup,
    teps,
)
from .ensemble import default_ensemble
from .evaluation import default_cv, evaluate, select_model, summarize
from .features import data_size, make_features
from .intervals import PredictionInterval, conformal_interval
from .metrics import METRICS, score_predictions
from .pmnf import PMNF_EXPONENTS, PMNFSearch
from .projection import project
from .report import write_report
from .scaling_law import PRESETS, ScalingLaw
from .serialization import load_models, model_from_dict, model_to_dict, save_models
from .splitters import ExtrapolationSplit, LeaveOneBandwidthOut, LeaveOneScaleOut

__all__ = [
    "METRICS",
    "PMNF_EXPONENTS",
    "PRESETS",
    "ExtrapolationSplit",
    "LeaveOneBandwidthOut",
    "LeaveOneScaleOut",
    "PMNFSearch",
    "PredictionInterval",
    "ScalingLaw",
    "Term",
    "bandwidth_demand",
    "completion_time_increment",
    "conformal_interval",
    "crossover_nodes",
    "data_size",
    "default_cv",
    "default_ensemble",
    "diminishing_returns_nodes",
    "evaluate",
    "load_models",
    "make_features",
    "model_from_dict",
    "model_to_dict",
    "parallel_efficiency",
    "parse_term",
    "project",
    "save_models",
    "score_predictions",
    "select_model",
    "speedup",
    "summarize",
    "teps",
    "write_report",
]
