"""Parse quantities with units: bandwidths, durations and sizes.

The parsers live in :mod:`scaleprobe.kernels.units`, the lowest layer, so that kernels
running in every MPI rank can use them without importing the framework; this module
re-exports them under the framework's name.

Examples
--------
>>> from scaleprobe.framework.units import parse_bandwidth
>>> parse_bandwidth("8 Gbit/s")
1000000000.0
"""

from scaleprobe.kernels.units import (
    UnitError,
    parse_bandwidth,
    parse_duration,
    parse_size,
)

__all__ = ["UnitError", "parse_bandwidth", "parse_duration", "parse_size"]
