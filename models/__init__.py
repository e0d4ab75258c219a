"""Performance models: scaling laws, traffic-informed models, evaluation, projection.

>>> from scaleprobe.models import ScalingLaw, crossover_nodes
>>> eq6 = ScalingLaw.from_coefficients("refined", [118.026, 5.968], alpha=1.11, ppn=18)
>>> crossover_nodes(eq6, admissible=[4, 9, 16, 25, 36])
25
"""

from ._terms import Term, parse_term
from ._warnings import (
    DegenerateFitWarning,
    ExtrapolationWarning,
    InsufficientDataWarning,
    MemoryRegimeWarning,
    NoiseWarning,
    NoTrendWarning,
    PhysicalLimitWarning,
    RegimeChangeWarning,
    ScaleprobeWarning,
    UnreliableModelWarning,
)
from .baseline import PowerLawBaseline, RegimeTrend
from .commpredictor import CommunicationPredictor
from .derived import (
    bandwidth_demand,
    completion_time_increment,
    crossover_nodes,
    diminishing_returns_nodes,
    parallel_efficiency,
    speedup,
    teps,
)
from .ensemble import RELIABLE_SMAPE, default_ensemble, fit_ensemble
from .evaluation import BASELINE, default_cv, evaluate, select_model, summarize
from .features import data_size, link_of, make_features, prediction_frame
from .fim import FiM
from .fim_cal import FiMCal
from .fim_com import FiMCom
from .fitted import EnsembleFit, describe_model
from .flat import FlatTrend, trend_tests
from .intervals import PredictionInterval, calibrate_axis, calibrate_interval
from .metrics import METRICS, score_predictions
from .patterns import build_pattern, pattern_metrics
from .pmnf import PMNF_EXPONENTS, PMNFSearch
from .projection import cannot_tell_from, project, wide_nodes
from .rbasp import RBASP
from .readers import (
    MEASUREMENT_FORMATS,
    MeasurementFileError,
    load_measurements,
    measurement_format,
)
from .report import write_report
from .rounds import RoundLaw
from .scaling_law import PRESETS, ScalingLaw
from .serialization import load_models, save_models
from .splitters import ExtrapolationSplit, LeaveOneBandwidthOut, LeaveOneScaleOut
from .traffic import TrafficModel

__all__ = [
    "BASELINE",
    "MEASUREMENT_FORMATS",
    "METRICS",
    "PMNF_EXPONENTS",
    "PRESETS",
    "RBASP",
    "RELIABLE_SMAPE",
    "CommunicationPredictor",
    "DegenerateFitWarning",
    "EnsembleFit",
    "ExtrapolationSplit",
    "ExtrapolationWarning",
    "FiM",
    "FiMCal",
    "FiMCom",
    "FlatTrend",
    "InsufficientDataWarning",
    "LeaveOneBandwidthOut",
    "LeaveOneScaleOut",
    "MeasurementFileError",
    "MemoryRegimeWarning",
    "NoTrendWarning",
    "NoiseWarning",
    "PMNFSearch",
    "PhysicalLimitWarning",
    "PowerLawBaseline",
    "PredictionInterval",
    "RegimeChangeWarning",
    "RegimeTrend",
    "RoundLaw",
    "ScaleprobeWarning",
    "ScalingLaw",
    "Term",
    "TrafficModel",
    "UnreliableModelWarning",
    "bandwidth_demand",
    "build_pattern",
    "calibrate_axis",
    "calibrate_interval",
    "cannot_tell_from",
    "completion_time_increment",
    "crossover_nodes",
    "data_size",
    "default_cv",
    "default_ensemble",
    "describe_model",
    "diminishing_returns_nodes",
    "evaluate",
    "fit_ensemble",
    "link_of",
    "load_measurements",
    "load_models",
    "make_features",
    "measurement_format",
    "parallel_efficiency",
    "parse_term",
    "pattern_metrics",
    "prediction_frame",
    "project",
    "save_models",
    "score_predictions",
    "select_model",
    "speedup",
    "summarize",
    "teps",
    "trend_tests",
    "wide_nodes",
    "write_report",
]
