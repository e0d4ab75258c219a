"""The netns link check: a probe of the shaped link, and the sweep's one warning."""

import warnings

import numpy as np
import pytest
import xarray as xr
from scaleprobe.framework._hostload import HOST_LOAD_LIMIT, LoadMeter
from scaleprobe.framework._linkprobe import probe_link, warn_link_shortfall
from scaleprobe.framework._warnings import LinkShortfallWarning, SweepWarning
from scaleprobe.framework.netns import namespace_network, netns_unavailable

UNAVAILABLE = netns_unavailable()


def _results(achieved, status=None):
    """Results of a sweep over ``bandwidth`` x ``nodes``: links shaped to 1 MB/s."""
    achieved = np.asarray(achieved, dtype=float)
    status = np.full(achieved.shape, "ok") if status is None else np.asarray(status)
    coords = {"bandwidth": [10, 100], "nodes": [2, 4]}
    dims = ("bandwidth", "nodes")
    return xr.Dataset(
        {
            "link_rate": (dims, achieved * 1e6),
            "link_shaped_rate": (dims, np.full(achieved.shape, 1e6)),
            "status": (dims, status),
        },
        coords=coords,
    )


def _caught(ds):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_link_shortfall(ds)
    return [str(w.message) for w in caught if w.category is LinkShortfallWarning]


def test_one_line_counts_the_short_links_and_names_the_worst():
    lines = _caught(_results([[0.99, 0.90], [0.68, 1.02]]))
    assert len(lines) == 1
    assert lines[0].startswith("2 of 4 point(s) ran over a link more than 5% slower")
    assert "worst: 68% of the rate at bandwidth=100, nodes=2" in lines[0]
    assert issubclass(LinkShortfallWarning, SweepWarning)


def test_links_within_five_percent_and_failed_points_do_not_warn():
    assert _caught(_results([[0.96, 1.0], [1.04, 0.951]])) == []
    failed = [["ok", "failed"], ["ok", "ok"]]
    assert _caught(_results([[1.0, 0.5], [1.0, np.nan]], failed)) == []
    assert _caught(xr.Dataset({"status": ("x", ["ok"])})) == []  # other modes


@pytest.mark.skipif(UNAVAILABLE is not None, reason=str(UNAVAILABLE))
@pytest.mark.parametrize("rate", [2e6, 20e6])
def test_the_probe_measures_the_rate_the_links_are_shaped_to(rate):
    meter = LoadMeter()
    with namespace_network(2) as network:
        network.shape(2, rate)
        meter.start()
        achieved = probe_link(network, rate, seconds=1.0)  # long enough to meter
        load = meter.stop()
        network.shape(2, rate / 4)  # a quarter of the rate is seen as such
        quarter = probe_link(network, rate / 4)
        with namespace_network(1) as lone:  # one node: no link to probe
            assert probe_link(lone, rate) is None
    assert achieved is not None
    assert quarter is not None
    assert quarter < 0.5 * achieved  # the probe follows the shaping
    if load is None or load > HOST_LOAD_LIMIT:  # None: the host cannot tell
        pytest.skip(
            f"host busy: other work kept {load or 0:.2f} cores busy during the probe "
            f"(above {HOST_LOAD_LIMIT}); the +-10 % check needs a quiet host"
        )
    assert 0.9 * rate < achieved < 1.1 * rate
