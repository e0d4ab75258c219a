"""Parse quantities with units: bandwidths, durations and sizes.

Spec files and command lines write quantities the way people do (``10 Gbit/s``,
``1.25 GB/s``, ``5 us``, ``1 MiB``); everything inside scaleprobe is SI base units:
bytes per second, seconds and bytes. These parsers are the only ones: the spec, the
command line and the Python API read every quantity through them. What a person
writes (a spec's throttle, ``--link-bandwidth``, ``--latency``) is parsed with
``require_unit=True``: ``100`` alone is refused (100 B/s and 100 Gbit/s are a factor
of eight billion apart), while numbers that crossed a process boundary are SI already.

This module is the lowest layer of scaleprobe: it imports only the standard library,
so kernels running in every MPI rank use it as well as the framework (which re-exports
it as :mod:`scaleprobe.framework.units`).
"""

from __future__ import annotations

import re

__all__ = ["UnitError", "parse_bandwidth", "parse_duration", "parse_size"]

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/]*)\s*$")

_PREFIX = {
    "": 1.0,
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}
_DURATION = {
    "": 1.0,
    "s": 1.0,
    "sec": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "ns": 1e-9,
    "min": 60.0,
    "h": 3600.0,
}


class UnitError(ValueError):
    """A quantity could not be parsed; the message says what is allowed."""


def _split(text: str | float | int, what: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise UnitError(f"expected a {what}, got {text!r}")
    if isinstance(text, (int, float)):
        return float(text), ""
    if not isinstance(text, str):
        raise UnitError(f"expected a {what}, got {type(text).__name__} {text!r}")
    match = _NUMBER.match(text)
    if match is None:
        raise UnitError(f"cannot parse {text!r} as a {what}")
    return float(match.group(1)), match.group(2)


def _bare(text, value: float, unit: str, example_unit: str, require_unit: bool):
    """Refuse a bare number (other than 0) where a person must write the unit."""
    if require_unit and unit == "" and value != 0 and not isinstance(text, bool):
        raise UnitError(f"{text} needs a unit, e.g. '{value:g} {example_unit}'")


def _positive(value: float, text, what: str) -> float:
    if not value > 0:
        raise UnitError(f"a {what} must be positive, got {text!r}")
    return value


def parse_bandwidth(text: str | float | int, *, require_unit: bool = False) -> float:
    """Parse a bandwidth into bytes per second.

    Parameters
    ----------
    text : str or float
        A number (bytes/s) or a string such as ``"10 Gbit/s"``, ``"1.25 GB/s"``,
        ``"100 Mbps"``, ``"512 MiB/s"``. ``bit``/``b`` means bits, ``B`` bytes.
    require_unit : bool, default=False
        Refuse a bare number: what a person writes must say its unit.

    Returns
    -------
    float
        Bytes per second.

    Raises
    ------
    UnitError
        If the text is not a positive bandwidth.

    Examples
    --------
    >>> parse_bandwidth("10 Gbit/s")
    1250000000.0
    >>> parse_bandwidth("1.25 GB/s")
    1250000000.0
    >>> parse_bandwidth("100", require_unit=True)
    Traceback (most recent call last):
    ...
    scaleprobe.kernels.units.UnitError: 100 needs a unit, e.g. '100 Gbit/s'
    """
    value, unit = _split(text, "bandwidth")
    # a byte rate of 10**4 or more was meant as bytes/s: suggest a usual figure
    _bare(text, value if value < 1e4 else 10, unit, "Gbit/s", require_unit)
    allowed = "e.g. '10 Gbit/s', '1.25 GB/s', '100 Mbps', '512 MiB/s'"
    if unit == "":
        return _positive(value, text, "bandwidth")
    match = re.fullmatch(r"(Ki|Mi|Gi|Ti|[kKMGT]?)(bit/s|bps|b/s|B/s|Bps)", unit)
    if match is None:
        raise UnitError(f"unknown bandwidth unit in {text!r}; {allowed}")
    prefix, base = match.groups()
    factor = _PREFIX[prefix] * (0.125 if base in ("bit/s", "bps", "b/s") else 1.0)
    return _positive(value * factor, text, "bandwidth")


def parse_duration(
    text: str | float | int, *, require_unit: bool = False, example_unit: str = "us"
) -> float:
    """Parse a duration into seconds.

    Parameters
    ----------
    text : str or float
        A number (seconds) or a string such as ``"5 us"``, ``"1.5 ms"``, ``"2 min"``.
    require_unit : bool, default=False
        Refuse a bare number other than 0 (a zero latency needs no unit).
    example_unit : str, default="us"
        The unit the refusal suggests (``us`` for a latency, ``s`` for a timeout).

    Returns
    -------
    float
        Seconds (zero is allowed: a latency may be zero).

    Examples
    --------
    >>> parse_duration("5 us")
    5e-06
    >>> parse_duration("1", require_unit=True)
    Traceback (most recent call last):
    ...
    scaleprobe.kernels.units.UnitError: 1 needs a unit, e.g. '1 us'
    """
    value, unit = _split(text, "duration")
    _bare(text, value, unit, example_unit, require_unit)
    if unit not in _DURATION:
        raise UnitError(
            f"unknown duration unit in {text!r}; allowed units: s, ms, us, ns, min, h"
        )
    scale = _DURATION[unit]
    # 5 us is 5 / 1e6 s: dividing by the exact power of ten keeps "5 us" == 5e-06
    result = value / round(1 / scale) if scale < 1 else value * scale
    if result < 0:
        raise UnitError(f"a duration must not be negative, got {text!r}")
    return result


def parse_size(text: str | float | int) -> int:
    """Parse a size into bytes.

    Parameters
    ----------
    text : str or int
        A number of bytes or a string such as ``"64 KiB"``, ``"1 MiB"``, ``"2 MB"``.

    Returns
    -------
    int
        Bytes.

    Examples
    --------
    >>> parse_size("1 MiB")
    1048576
    """
    value, unit = _split(text, "size")
    match = re.fullmatch(r"(Ki|Mi|Gi|Ti|[kKMGT]?)(B?)", unit)
    if match is None or (unit and not match.group(2)):
        raise UnitError(
            f"unknown size unit in {text!r}; e.g. '65536', '64 KiB', '1 MB'"
        )
    result = value * _PREFIX[match.group(1)]
    if result < 0 or result != int(result):
        raise UnitError(
            f"a size must be a whole, non-negative number of bytes: {text!r}"
        )
    return int(result)
