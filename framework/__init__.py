"""The sweep dataflow: spec, plan, MPI launches on Dask, and the result store.

Examples
--------
>>> from scaleprobe.framework import run_sweep, open_results   # doctest: +SKIP
>>> ds = run_sweep("pingpong.yaml")                             # doctest: +SKIP
"""

from .admissible import RuleError, compile_rule
from .plan import Point, plan
from .runner import run_sweep
from .spec import Spec, SpecError, load_spec
from .store import ResultStore, open_results
from .units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = [
    "Point",
    "ResultStore",
    "RuleError",
    "Spec",
    "SpecError",
    "UnitError",
    "compile_rule",
    "load_spec",
    "open_results",
    "parse_bandwidth",
    "parse_duration",
    "parse_size",
    "plan",
    "run_sweep",
]
