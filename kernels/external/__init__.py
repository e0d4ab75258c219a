"""Run any MPI program as a scaleprobe kernel: a command template and an output parser.

A spec names the program and how to read its output::

    kernel: external
    params:
      command: "{mpiexec} -n {ranks} ./graph500_reference_bfs {scale} 16"
      parser: graph500          # or regex (with patterns) or json
    throttle: {mode: none}      # or netns; emulated cannot slow an external program

The framework calls :func:`validate_params` when it loads the spec,
:func:`build_command` for each point and :func:`parse_output` on the program's output.
This package never imports mpi4py.
"""

from ._validate import THROTTLE_MODES, check_throttle, validate_params
from .command import build_command, template_fields
from .parsers import PARSERS, parse_graph500, parse_output, parse_regex

__all__ = [
    "PARSERS",
    "THROTTLE_MODES",
    "build_command",
    "check_throttle",
    "parse_graph500",
    "parse_output",
    "parse_regex",
    "template_fields",
    "validate_params",
]
