"""The emulated link's defaults have one source, read by kernels and framework alike."""

import dask
import pytest
from scaleprobe.framework.spec import load_spec
from scaleprobe.kernels.schema import LINK_DEFAULTS, LinkConfig

_SPEC = {"name": "x", "kernel": "commbench.compute", "sweep": {"nodes": 2}}
_FIELDS = ("link_bandwidth", "latency", "memory_bandwidth", "memory_latency")


def test_a_spec_without_throttle_gets_the_kernels_link_model():
    throttle = load_spec(_SPEC).throttle
    link = LinkConfig()
    assert {name: getattr(throttle, name) for name in _FIELDS} == {
        name: getattr(link, name) for name in _FIELDS
    }


def test_the_config_defaults_are_the_kernels_defaults():
    assert {
        key: dask.config.get(f"scaleprobe.throttle.{key}") for key in LINK_DEFAULTS
    } == LINK_DEFAULTS


@pytest.mark.parametrize(
    ("key", "value", "field", "expected"),
    [
        ("latency", "20 us", "latency", 2e-5),
        ("link-bandwidth", "10 Gbit/s", "link_bandwidth", 1.25e9),
    ],
)
def test_the_config_still_overrides_the_defaults(key, value, field, expected):
    with dask.config.set({f"scaleprobe.throttle.{key}": value}):
        throttle = load_spec(_SPEC).throttle
    assert getattr(throttle, field) == pytest.approx(expected)
    assert getattr(LinkConfig(), field) != pytest.approx(expected)
