"""``plan`` checks every point's kernel parameters against the ranges the kernel
declares: a value outside is one line and exit status 2, before anything runs."""

from __future__ import annotations

import pytest
import yaml
from scaleprobe.framework.cli import main


def _write(tmp_path, **changes):
    spec = {
        "name": "ranges",
        "kernel": "commbench.pingpong",
        "sweep": {"nodes": [2]},
        "throttle": {"mode": "emulated"},
        "output": str(tmp_path / "ranges.zarr"),
    }
    spec.update(changes)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _plan_refuses(path, capsys) -> str:
    assert main(["plan", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_fixed_parameter_out_of_range_is_refused_by_plan(tmp_path, capsys):
    path = _write(tmp_path, params={"iterations": -5})
    assert _plan_refuses(path, capsys) == (
        "scaleprobe: error: spec key 'params.iterations': kernel "
        "'commbench.pingpong': --iterations must be at least 1, got -5 "
        "(an integer >= 1)"
    )
    # run checks the same before anything is launched or written
    assert main(["run", str(path)]) == 2
    assert "--iterations must be at least 1, got -5" in capsys.readouterr().err
    assert not (tmp_path / "ranges.zarr").exists()


def test_a_swept_value_out_of_range_names_its_sweep_key(tmp_path, capsys):
    path = _write(tmp_path, sweep={"nodes": [2], "warmup": [0, 1, -1]})
    assert _plan_refuses(path, capsys) == (
        "scaleprobe: error: spec key 'sweep.warmup': kernel 'commbench.pingpong': "
        "--warmup must be at least 0, got -1 (an integer >= 0)"
    )


@pytest.mark.parametrize(
    ("kernel", "params", "message"),
    [
        (
            "graph500",
            {"scale": 41},
            "spec key 'params.scale': kernel 'graph500': --scale must be in "
            "[1, 40], got 41",
        ),
        (
            "iterative.pagerank",
            {"damping": 1.0},
            "spec key 'params.damping': kernel 'iterative.pagerank': --damping "
            "must be in (0, 1), got 1.0",
        ),
        (
            "npb.cg",
            {"na": 50},
            "spec key 'params.na': kernel 'npb.cg': --na must be in [100, 2**31), "
            "got 50",
        ),
        (
            "commbench.random_pingpong",
            {"msg-bytes": "0 KiB"},
            "spec key 'params.msg-bytes': kernel 'commbench.random_pingpong': "
            "--msg-bytes must be at least 1, got 0",
        ),
    ],
)
def test_every_kernel_declares_its_ranges(tmp_path, capsys, kernel, params, message):
    path = _write(tmp_path, kernel=kernel, params=params)
    assert _plan_refuses(path, capsys).startswith("scaleprobe: error: " + message)


def test_values_inside_the_ranges_still_plan(tmp_path, capsys):
    path = _write(
        tmp_path,
        params={"iterations": 1, "msg_bytes": "0 KiB"},
        sweep={"nodes": [2], "warmup": [0, 3]},
    )
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "scaleprobe.kernels.commbench.pingpong" in out
