"""Performance models: scaling laws, automatic search, evaluation and projection."""

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
from .features import data_size, make_features
from .pmnf import PMNFSearch
from .scaling_law import PRESETS, ScalingLaw
from .splitters import ExtrapolationSplit, LeaveOneBandwidthOut, LeaveOneScaleOut

__all__ = [
    "PRESETS",
    "ExtrapolationSplit",
    "LeaveOneBandwidthOut",
    "LeaveOneScaleOut",
    "PMNFSearch",
    "ScalingLaw",
    "Term",
    "bandwidth_demand",
    "completion_time_increment",
    "crossover_nodes",
    "data_size",
    "diminishing_returns_nodes",
    "make_features",
    "parallel_efficiency",
    "parse_term",
    "speedup",
    "teps",
]
