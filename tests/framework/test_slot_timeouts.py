"""A point whose ranks computed without a core slot is measured, kept and named."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scaleprobe.framework import OversubscriptionWarning
from scaleprobe.framework._execute import warn_slot_timeouts


def _results(values, status=None, name="slot_timeouts"):
    """Results over nodes 8, 16, 32 and two runs with one per-point variable."""
    values = np.asarray(values, dtype=float)
    status = np.full(values.shape, "ok", dtype=object) if status is None else status
    dims = ("nodes", "run")
    return xr.Dataset(
        {
            name: (dims, values),
            "status": (dims, np.asarray(status, dtype=object)),
        },
        coords={"nodes": [8, 16, 32], "run": [0, 1]},
    )


def test_points_whose_ranks_gave_up_waiting_are_named():
    with pytest.warns(OversubscriptionWarning) as caught:
        warn_slot_timeouts(_results([[0, 0], [0, 4], [18, 0]]))
    message = str(caught[0].message)
    assert message.startswith("2 of 6 point(s) have ranks that waited 60 s")
    assert "first: nodes=16, run=1" in message


def test_no_warning_without_timeouts_or_for_failed_points():
    status = [["ok", "ok"], ["ok", "ok"], ["failed", "ok"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_slot_timeouts(_results(np.zeros((3, 2))))
        warn_slot_timeouts(_results([[0, 0], [0, 0], [3, 0]], status=status))
        warn_slot_timeouts(_results(np.zeros((3, 2))).drop_vars("slot_timeouts"))
