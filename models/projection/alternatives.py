"""The alternatives a default projection joins to the trusted model's interval.

Model uncertainty belongs in the interval: a law that extrapolated almost as well in
cross-validation is as likely to be right far out. The cross-validation checked that
in node counts, at the measured sizes, and a projection joins an alternative there
only, and only as far as it stays a physical law of an MPI program:

- at a size never measured, an alternative's form was never checked (RBASP, a line
  in log time, put K-means 32x beyond its measured points at 1e20 s): the interval
  is the projecting model's own, widened by its hold-out of the largest size
  (:func:`~scaleprobe.models.evaluation.intervals.calibrate_axis`);
- beyond the largest measured node count, an alternative whose predicted time grows
  faster than the square of the node count (more than 4x a doubling: a message
  between every pair of ranks through one of them) or falls faster than its inverse
  square is no such law there (RBASP's ``0.13 q**2`` in log2 time put the same
  K-means at 6e29 s on 32 nodes): it is not joined where it does.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.warnings import quiet
from .grid import project

__all__ = ["STEEPEST", "join_alternatives", "measured_sizes"]

#: The largest power of the node count at which a joined alternative's time may grow
#: (or the inverse at which it may fall) beyond the largest measured node count.
STEEPEST = 2.0


def measured_sizes(training, out):
    """True where every size coordinate of a projection (an application parameter,
    ``scale``) is within the range the training measured.

    Parameters
    ----------
    training : dict
        :attr:`EnsembleFit.training`.
    out : xarray.Dataset
        A projection.

    Returns
    -------
    xarray.DataArray of bool
    """
    ranges = training.get("feature_ranges", {})
    inside = xr.DataArray(True)
    for name in [*training.get("parameters", {}), "scale"]:
        if name in out.dims and name in ranges:
            low, high = ranges[name]
            values = out[name]
            inside = inside & (values >= low - 1e-9 * abs(low))
            inside = inside & (values <= high + 1e-9 * abs(high))
    return inside


def _physical(fit, other, alt, target, where):
    """True where ``alt``, an alternative's projection, grows or falls no faster
    than :data:`STEEPEST` from the largest measured node count."""
    largest = fit.training.get("feature_ranges", {}).get("nodes", [None, None])[1]
    if largest is None or not np.any(alt["nodes"] > largest):
        return xr.DataArray(True)
    with quiet():
        base = project(
            fit.models[other],
            nodes=[largest],
            training=fit.training,
            target=target,
            **where,
        )
    reference = base[f"{target}_predicted"].squeeze("nodes", drop=True)
    ratio = np.maximum(alt["nodes"] / largest, 1.0) ** STEEPEST
    predicted = alt[f"{target}_predicted"]
    within = (predicted <= reference * ratio) & (predicted >= reference / ratio)
    return (alt["nodes"] <= largest) | within


def join_alternatives(fit, out, name, nodes, *, bandwidth, scale, ppn, link, params):
    """Join the plausible alternatives' intervals to ``out``'s, where they hold.

    Sets ``interval_models`` (the models whose intervals were joined) and, when an
    alternative was left out beyond the measured node counts,
    ``interval_unphysical`` (which, and from which node count). No lower bound falls
    under the latency floor.

    Parameters
    ----------
    fit : EnsembleFit
    out : xarray.Dataset
        The projection of ``name`` (modified in place).
    name : str
        The projecting model.
    nodes : array-like
    bandwidth, scale, ppn, link, params
        As :func:`~scaleprobe.models.project` takes them.
    """
    target = fit.training.get("target", "time")
    lower, upper = out[f"{target}_lower"], out[f"{target}_upper"]
    dims = lower.dims
    measured = measured_sizes(fit.training, out)
    where = {"bandwidth": bandwidth, "scale": scale, "ppn": ppn, "link": link}
    joined, left_out = [], []
    for other in fit.plausible:
        if other == name or other not in fit.models or other not in fit.intervals:
            continue
        try:
            with quiet():
                alt = project(
                    fit.models[other],
                    nodes=nodes,
                    interval=fit.intervals[other],
                    training=fit.training,
                    target=target,
                    params=params,
                    **where,
                )
            physical = _physical(fit, other, alt, target, {**where, "params": params})
        except (ValueError, KeyError, TypeError):
            continue  # it cannot project there (e.g. an unmeasured bandwidth)
        physical = physical.broadcast_like(lower)
        keep = (measured & physical).broadcast_like(lower)
        low = np.fmin(lower, alt[f"{target}_lower"].transpose(*dims))
        high = np.fmax(upper, alt[f"{target}_upper"].transpose(*dims))
        lower = low.where(keep, lower).transpose(*dims)
        upper = high.where(keep, upper).transpose(*dims)
        joined.append(other)
        unphysical = out["nodes"].where(~physical).min()
        if np.isfinite(unphysical):
            left_out.append(f"{other} from {float(unphysical):g} nodes")
    if f"{target}_floor" in out:  # no time below what the link model allows
        lower = np.fmax(lower, out[f"{target}_floor"].transpose(*dims))
        lower = np.fmin(lower, out[f"{target}_predicted"].transpose(*dims))
    out[f"{target}_lower"] = lower.assign_attrs(out[f"{target}_lower"].attrs)
    if joined:
        out[f"{target}_upper"] = upper.assign_attrs(out[f"{target}_upper"].attrs)
        out.attrs["interval_models"] = ", ".join([name, *joined])
    if left_out:
        out.attrs["interval_unphysical"] = (
            f"{'; '.join(left_out)}: its time grows faster than nodes**{STEEPEST:g} "
            f"(or falls faster than nodes**-{STEEPEST:g}) from the largest measured "
            "node count; its interval is not joined there"
        )
