import pytest
from scaleprobe.framework.units import (
    UnitError,
    parse_bandwidth,
    parse_duration,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10 Gbit/s", 1.25e9),
        ("1.25 GB/s", 1.25e9),
        ("100 Mbps", 12.5e6),
        ("1 Gbit/s", 1.25e8),
        ("512 MiB/s", 512 * 2**20),
        ("8 kbit/s", 1000.0),
        (3e6, 3e6),
    ],
)
def test_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5 us", 5e-6),
        ("1.5 ms", 1.5e-3),
        ("2 min", 120.0),
        ("120", 120.0),
        (0, 0.0),
        ("3µs", 3e-6),
        ("1e-3 s", 1e-3),
    ],
)
def test_duration(text, expected):
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 MiB", 2**20),
        ("64 KiB", 65536),
        ("2 MB", 2_000_000),
        (4096, 4096),
        ("16MiB", 2**24),
    ],
)
def test_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("parser", "text", "fragment"),
    [
        (parse_bandwidth, "10 Gbit", "unknown bandwidth unit"),
        (parse_bandwidth, "fast", "cannot parse"),
        (parse_bandwidth, "0 Gbit/s", "must be positive"),
        (parse_bandwidth, True, "expected a bandwidth"),
        (parse_duration, "5 parsecs", "unknown duration unit"),
        (parse_size, "1.5 B", "whole"),
        (parse_size, "3 bananas", "unknown size unit"),
    ],
)
def test_errors_name_the_input(parser, text, fragment):
    with pytest.raises(UnitError, match=fragment):
        parser(text)


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        (parse_bandwidth, "100", "100 needs a unit, e.g. '100 Gbit/s'"),
        (parse_bandwidth, 1.25e8, "125000000.0 needs a unit, e.g. '10 Gbit/s'"),
        (parse_duration, "1", "1 needs a unit, e.g. '1 us'"),
        (parse_duration, 0.5, "0.5 needs a unit, e.g. '0.5 us'"),
    ],
)
def test_a_bare_number_is_refused_where_a_unit_is_required(parser, text, message):
    with pytest.raises(UnitError) as caught:
        parser(text, require_unit=True)
    assert str(caught.value) == message
    # the same number is SI where it crossed a process boundary
    assert parser(text) == float(text)


def test_a_required_unit_is_read_by_the_same_parser():
    assert parse_bandwidth("100 Gbit/s", require_unit=True) == 1.25e10
    assert parse_duration("1 us", require_unit=True) == 1e-6
    assert parse_duration(0, require_unit=True) == 0.0  # a zero latency needs none
