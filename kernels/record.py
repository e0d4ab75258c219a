"""The record a kernel prints as a plain dict (superseded by the schema's Record).

Kernels build and print :class:`scaleprobe.kernels.schema.Record` (through the
harness), and records are read back with :meth:`Record.parse
<scaleprobe.kernels.schema.Record.parse>`. This module stays for code that still
reads records as dicts, and for kernels of other packages that print one with
:func:`emit`.

A kernel prints exactly one line that starts with :data:`MARKER` followed by a JSON
object. Everything else on standard output is ignored by the framework, so kernels may
print human-readable output (for example the Graph500 statistics block) as well.

The JSON object has this shape (every key but ``metrics`` is optional)::

    {
      "kernel": "commbench.pingpong",
      "status": "ok",                  # or "invalid" (with "reason")
      "reason": "",
      "metrics": {"time": 1.2, "comm_time": 0.3, ...},       # scalars per point
      "trials": [{"time": 0.01, "teps": 3e7, "valid": true,  # one dict per trial
                  "profiles": {"level": {"frontier": [1, 40, 900]}}}],
      "profiles": {"level": {"frontier": [1, 40, 900]}},      # arrays over a new dim
      "units": {"time": "s", "teps": "edges/s"},
      "long_names": {"teps": "traversed edges per second"},
      "link": {"mode": "emulated", "ppn": 1, "bandwidth": 50.0,  # the link model
               "link_bandwidth": 1.25e8, "latency": 5e-06, ...}  # it applied
    }

Scalars in ``metrics`` become variables over the sweep dimensions; keys of ``trials``
become variables over the sweep dimensions plus ``trial``; each ``profiles`` entry adds
a dimension named by its key (``level`` above), padded with NaN where points differ in
length. ``link`` (:meth:`InstrumentedComm.link_record
<scaleprobe.kernels.comm.InstrumentedComm.link_record>`) is checked against the
point's coordinates; a point whose kernel applied another link is stored as
``invalid``. This module never imports mpi4py.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

__all__ = ["MARKER", "RecordError", "emit", "parse_record"]

MARKER = "SCALEPROBE-RECORD "


class RecordError(ValueError):
    """A kernel's output holds no record, or a record of the wrong shape."""


def _clean(value: Any) -> Any:
    """Make numpy scalars and non-finite floats JSON-safe."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _clean(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def emit(record: dict, *, stream=None) -> str:
    """Print a kernel record as one marked JSON line.

    Call it on one rank only (rank 0 by convention).

    Parameters
    ----------
    record : dict
        The record; it must hold a ``metrics`` dict. numpy scalars and arrays are
        converted, NaN and infinities become ``null``.
    stream : file-like, optional
        Where to print; standard output by default.

    Returns
    -------
    str
        The line that was printed, without the newline.

    Examples
    --------
    >>> import io
    >>> line = emit({"metrics": {"time": 1.5}}, stream=io.StringIO())
    >>> line.startswith(MARKER)
    True
    """
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        raise RecordError("a kernel record must be a dict with a 'metrics' dict")
    line = MARKER + json.dumps(_clean(record), separators=(",", ":"))
    out = sys.stdout if stream is None else stream
    print(line, file=out, flush=True)
    return line


def parse_record(stdout: str) -> dict:
    """Find and decode the kernel record in a kernel's standard output.

    Parameters
    ----------
    stdout : str
        Everything the launch printed on standard output.

    Returns
    -------
    dict
        The decoded record.

    Raises
    ------
    RecordError
        If there is no marked line, more than one, or the JSON is malformed.

    Examples
    --------
    >>> parse_record('hello\\nSCALEPROBE-RECORD {"metrics": {"time": 2.0}}\\n')
    {'metrics': {'time': 2.0}}
    """
    lines = [ln for ln in stdout.splitlines() if ln.startswith(MARKER)]
    if not lines:
        raise RecordError("the kernel printed no record line (no 'SCALEPROBE-RECORD')")
    if len(lines) > 1:
        raise RecordError(
            f"the kernel printed {len(lines)} record lines; exactly one is expected "
            "(emit the record on rank 0 only)"
        )
    try:
        record = json.loads(lines[0][len(MARKER) :])
    except json.JSONDecodeError as exc:
        raise RecordError(f"the kernel record is not valid JSON: {exc}") from None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        raise RecordError("the kernel record has no 'metrics' object")
    return record
