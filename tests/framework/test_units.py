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
