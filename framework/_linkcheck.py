"""Check the link model a kernel says it applied against the one its point asked for.

A kernel that talks through the instrumented communicator echoes its link model in the
``link`` key of its record (:func:`scaleprobe.kernels.comm._link.applied_link`). A point
whose kernel applied another throttle mode, bandwidth, link rate or latency than the
spec and the point ask measured something else than its coordinates say; it is stored
as ``invalid`` with the difference as its error. Records without a ``link`` key (the
``external`` kernel, kernels that do not use the communicator) are not checked.
"""

from __future__ import annotations

import math

__all__ = ["bandwidth_attrs", "link_mismatch"]

_REL = 1e-9


def _differs(applied, asked) -> bool:
    try:
        return not math.isclose(float(applied), float(asked), rel_tol=_REL)
    except (TypeError, ValueError):
        return True


def _show(value) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError):
        return repr(value)


def link_mismatch(throttle, coords: dict, link) -> str:
    """Say how an echoed link model differs from the one asked, or ``""``.

    Parameters
    ----------
    throttle : Throttle
        The spec's throttle settings (``mode``, ``link_bandwidth``, ``latency``).
    coords : dict
        The point's coordinates (``bandwidth`` in percent, ``ppn``).
    link : dict or None
        The record's ``link`` key; None skips the check.

    Returns
    -------
    str
        One line naming every difference, empty when the link matches.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> throttle = SimpleNamespace(mode="emulated", link_bandwidth=1.25e8, latency=5e-6)
    >>> link = {"mode": "emulated", "ppn": 1, "bandwidth": 100.0,
    ...         "link_bandwidth": 1.25e8, "latency": 5e-6}
    >>> link_mismatch(throttle, {"bandwidth": 50, "ppn": 1}, link)
    'the kernel applied bandwidth 100 % but the point asks 50 %'
    """
    if not isinstance(link, dict):
        return ""
    problems = []
    if link.get("mode") != throttle.mode:
        problems.append(
            f"throttle mode {link.get('mode')!r} but the spec asks {throttle.mode!r}"
        )
    elif throttle.mode != "none":
        asked = {
            "bandwidth": (coords.get("bandwidth"), "%"),
            "link_bandwidth": (throttle.link_bandwidth, "bytes/s"),
            "latency": (throttle.latency, "s"),
        }
        for key, (value, unit) in asked.items():
            if key in link and value is not None and _differs(link[key], value):
                problems.append(
                    f"{key.replace('_', ' ')} {_show(link.get(key))} {unit} "
                    f"but the point asks {_show(value)} {unit}"
                )
    if "ppn" in coords and _differs(link.get("ppn"), coords["ppn"]):
        problems.append(
            f"{_show(link.get('ppn'))} ranks per node but the point asks "
            f"{_show(coords['ppn'])}"
        )
    if not problems:
        return ""
    return "the kernel applied " + "; ".join(problems)


def bandwidth_attrs(mode: str | None, link_model: dict | None) -> dict:
    """Attributes of the ``bandwidth`` coordinate: what 100 % means, in SI units.

    Parameters
    ----------
    mode : str or None
        Throttle mode of the campaign.
    link_model : dict or None
        The campaign's throttle settings (``link_bandwidth`` in bytes/s, ``latency``
        in s).

    Returns
    -------
    dict
        ``units``, ``long_name`` and ``throttle_mode``; where a link model acts
        (modes ``emulated`` and ``netns``) also ``link_bandwidth`` (bytes/s, the rate
        of 100 %), and in mode ``emulated`` ``latency`` (s; ``netns`` shapes the
        bandwidth only, its latency is the host's). In mode ``none`` the interconnect
        is the real one and its rate unknown, so neither is given.

    Examples
    --------
    >>> attrs = bandwidth_attrs("emulated", {"link_bandwidth": 1.25e8, "latency": 5e-6})
    >>> attrs["link_bandwidth"], attrs["latency"]
    (125000000.0, 5e-06)
    >>> "link_bandwidth" in bandwidth_attrs("none", {"link_bandwidth": 1.25e8})
    False
    >>> sorted(bandwidth_attrs("netns", {"link_bandwidth": 1e9, "latency": 5e-6}))
    ['link_bandwidth', 'link_bandwidth_units', 'long_name', 'throttle_mode', 'units']
    """
    attrs = {"units": "percent", "long_name": "share of the link bandwidth"}
    if mode is None:
        return attrs
    attrs["throttle_mode"] = mode
    if mode in ("emulated", "netns") and link_model:
        keys = [("link_bandwidth", "bytes/s"), ("latency", "s")]
        for key, unit in keys[: 2 if mode == "emulated" else 1]:
            if link_model.get(key) is not None:
                attrs[key] = float(link_model[key])
                attrs[f"{key}_units"] = unit
    else:
        attrs["long_name"] = "share of the link bandwidth (not shaped: nominal)"
    return attrs
