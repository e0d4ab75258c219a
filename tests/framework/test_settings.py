"""Launch settings: validated once on the client; what the client sets is what runs."""

import itertools
import json
import os
import threading
import time

import dask
import pytest
from distributed import Client
from scaleprobe.framework import run_sweep
from scaleprobe.framework.settings import LaunchSettings, SettingsError
from scaleprobe.framework.store import ResultStore


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "launcher",
            "sruun",
            r"'scaleprobe.launch.launcher': got 'sruun'; allowed: auto, mpiexec, "
            r"srun \(did you mean 'srun'\?\)",
        ),
        ("threads-per-rank", 0, "'scaleprobe.launch.threads-per-rank': must be an"),
        ("threads-per-rank", "two", "must be an integer >= 1, got 'two'"),
        ("threads-per-rank", 1.5, "must be an integer >= 1, got 1.5"),
        ("kill-grace", -1, "'scaleprobe.launch.kill-grace': must be a number >= 0"),
        ("mpiexec", "/no/such/mpiexec", "'/no/such/mpiexec' is not an executable"),
        ("mpiexec", "no-such-mpiexec-anywhere", "nor the name of one on PATH"),
        ("hostfile", "/no/such/hosts", "'scaleprobe.launch.hostfile': '/no/such/host"),
    ],
)
def test_bad_values_are_named_with_what_is_allowed(key, value, message):
    with (
        dask.config.set({f"scaleprobe.launch.{key}": value}),
        pytest.raises(SettingsError, match=message),
    ):
        LaunchSettings.from_config()


def test_values_are_resolved_and_frozen(tmp_path, mpiexec):
    hosts = tmp_path / "hosts"
    hosts.write_text("a\n")
    with dask.config.set(
        {
            "scaleprobe.launch.hostfile": str(hosts),
            "scaleprobe.launch.threads-per-rank": "4",  # environment variables are text
            "scaleprobe.launch.kill-grace": 0.5,
        }
    ):
        settings = LaunchSettings.from_config()
    assert settings.mpiexec == mpiexec
    assert (settings.threads_per_rank, settings.kill_grace) == (4, 0.5)
    assert settings.hostfile == str(hosts)
    with pytest.raises(AttributeError):
        settings.launcher = "srun"
    assert json.loads(json.dumps(settings.as_dict())) == settings.as_dict()


def test_a_bad_setting_stops_the_sweep_before_anything_runs(tmp_path):
    spec = {
        "name": "s",
        "kernel": "commbench.fault",
        "sweep": {"nodes": [1]},
        "output": str(tmp_path / "s.zarr"),
    }
    with (
        dask.config.set({"scaleprobe.launch.launcher": "sruun"}),
        pytest.raises(SettingsError, match="did you mean 'srun'"),
    ):
        run_sweep(spec, client=object(), progress=False)
    assert not os.path.exists(tmp_path / "s.zarr")


def _spy(tmp_path, mpiexec):
    """An mpiexec that logs its thread setting and arguments, then runs the real one."""
    log = tmp_path / "launches.log"
    spy = tmp_path / "spy-mpiexec"
    spy.write_text(
        f'#!/bin/sh\necho "$OMP_NUM_THREADS $*" >> {log}\nexec {mpiexec} "$@"\n'
    )
    spy.chmod(0o755)
    return spy, log


@pytest.mark.mpi
def test_dask_config_set_on_the_client_reaches_the_launches(tmp_path, client, mpiexec):
    spy, log = _spy(tmp_path, mpiexec)
    spec = {
        "name": "settings",
        "kernel": "commbench.fault",
        "sweep": {"nodes": [1, 2]},
        "throttle": {"mode": "none"},
        "output": str(tmp_path / "settings.zarr"),
    }
    # The workers are other processes: only what the client ships can reach them.
    with dask.config.set(
        {
            "scaleprobe.launch.mpiexec": str(spy),
            "scaleprobe.launch.launcher": "mpiexec",
            "scaleprobe.launch.threads-per-rank": 3,
        }
    ):
        ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    # (the provenance also asks this mpiexec for its --version, once, on the client)
    launches = sorted(x for x in log.read_text().splitlines() if " -n " in x)
    assert [x.split()[:3] for x in launches] == [["3", "-n", "1"], ["3", "-n", "2"]]
    assert ds.attrs["mpiexec"] == str(spy)
    recorded = json.loads(ds.attrs["launch_settings"])
    assert recorded["mpiexec"] == str(spy)
    assert recorded["threads_per_rank"] == 3


def _sweep(cluster, tmp_path, name, spans, calls):
    spec = {
        "name": name,
        "kernel": "commbench.fault",
        "params": {"sleep": 0.2},
        "sweep": {"nodes": [1], "run": 4},
        "throttle": {"mode": "none"},
        "output": str(tmp_path / f"{name}.zarr"),
    }
    with Client(cluster) as client:
        start = time.time()
        run_sweep(spec, client, progress=False)
        calls[name] = (start, time.time())
    spans[name] = [
        (r["started"], r["finished"]) for r in ResultStore(spec["output"]).results()
    ]


@pytest.mark.mpi
def test_two_sweeps_on_one_cluster_never_overlap_their_launches(tmp_path, cluster):
    spans, calls = {}, {}
    threads = [
        threading.Thread(target=_sweep, args=(cluster, tmp_path, name, spans, calls))
        for name in ("first", "second")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert sorted(spans) == ["first", "second"]
    assert [len(v) for v in spans.values()] == [4, 4]
    every = sorted(spans["first"] + spans["second"])
    overlaps = [(a, b) for a, b in itertools.pairwise(every) if b[0] < a[1]]
    assert overlaps == []
    # the sweeps really ran at the same time, competing for the cluster's workers
    assert calls["first"][0] < calls["second"][1]
    assert calls["second"][0] < calls["first"][1]


@pytest.mark.mpi
def test_a_different_launch_limit_on_the_same_cluster_is_refused(tmp_path, client):
    from scaleprobe.framework import SpecError

    spec = {
        "name": "limit",
        "kernel": "commbench.fault",
        "sweep": {"nodes": [1]},
        "throttle": {"mode": "none"},
        "max_concurrent_launches": 3,
        "output": str(tmp_path / "limit.zarr"),
    }
    first = {**spec, "max_concurrent_launches": 1, "output": str(tmp_path / "1.zarr")}
    run_sweep(first, client, progress=False)
    with pytest.raises(SpecError, match="an earlier sweep set a different limit"):
        run_sweep(spec, client, progress=False)
