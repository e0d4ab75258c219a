"""The sweep key ``threads``: validated, launched, recorded and seen by the ranks."""

import sys

import pytest
from scaleprobe.framework import run_sweep
from scaleprobe.framework.launch import (
    build_command,
    launch_environment,
    record_mismatch,
)
from scaleprobe.framework.planning import oversubscription, plan
from scaleprobe.framework.settings import LaunchSettings
from scaleprobe.framework.spec import SpecError, load_spec
from scaleprobe.framework.store import ResultStore
from scaleprobe.kernels.schema import THREADS_ENV, Record


def _spec(tmp_path=None, **sweep):
    return load_spec(
        {
            "name": "t",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [1], **sweep},
            "throttle": {"mode": "emulated"},
            "order": {"shuffle": False},
            **({"output": str(tmp_path / "t.zarr")} if tmp_path else {}),
        }
    )


def test_threads_is_a_launch_axis_after_bandwidth_not_a_kernel_parameter():
    spec = _spec(run=2, threads=[2, 1], ppn=[1])
    assert spec.dims == ("nodes", "ppn", "bandwidth", "threads", "run")
    assert "threads" not in spec.kernel_axes
    assert [p.threads for p in plan(spec)][:2] == [2, 2]
    assert "threads" not in _spec().dims  # a dimension only where swept


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two", True])
def test_a_thread_count_that_is_not_a_positive_integer_is_refused(bad):
    with pytest.raises(SpecError, match=r"'sweep.threads': values must be positive"):
        _spec(threads=[1, bad])


def test_threads_given_as_a_kernel_parameter_is_refused():
    with pytest.raises(SpecError, match=r"'params.threads'.*sweep.threads"):
        load_spec(
            {
                "name": "t",
                "kernel": "commbench.compute",
                "params": {"threads": 2},
                "sweep": {"nodes": [1]},
            }
        )


def test_a_point_sets_every_thread_variable_and_the_kernels_argument():
    spec = _spec(threads=[3])
    point = plan(spec)[0]
    settings = LaunchSettings(mpiexec=sys.executable, threads_per_rank=1)
    env = launch_environment(spec, point, settings)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        assert env[name] == "3"
    assert env[THREADS_ENV] == "3"
    command = build_command(spec, point, settings=settings)
    assert command[command.index("--threads") + 1] == "3"


def test_without_the_key_the_setting_gives_the_threads_and_no_argument():
    spec = _spec()
    point = plan(spec)[0]
    settings = LaunchSettings(mpiexec=sys.executable, threads_per_rank=2)
    assert launch_environment(spec, point, settings)[THREADS_ENV] == "2"
    assert "--threads" not in build_command(spec, point, settings=settings)


def test_the_oversubscription_warning_counts_ranks_times_threads():
    spec = load_spec(
        {
            "name": "t",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [2], "threads": [1, 2]},
            "throttle": {"mode": "none"},
        }
    )
    message = oversubscription(spec, plan(spec), cores=2)
    assert message.startswith("1 point in throttle mode 'none' runs up to 2 ranks x 2")
    assert oversubscription(spec, plan(spec), cores=4) is None
    # unswept, the launch setting's threads per rank count
    spec = load_spec(
        {
            "name": "t",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [1], "ppn": [2]},
            "throttle": {"mode": "none"},
        }
    )
    assert oversubscription(spec, plan(spec), cores=4) is None
    message = oversubscription(spec, plan(spec), cores=4, threads=3)
    assert message.startswith("1 point in throttle mode 'none' runs up to 2 ranks x 3")


def test_a_record_of_other_threads_than_the_points_is_a_mismatch():
    spec = _spec(threads=[2])
    point = plan(spec)[0]
    seen = Record(metrics={}, threads=1)
    assert record_mismatch(spec, point, seen, threads=2) == (
        "the program ran 1 thread(s) per rank but the point asks 2"
    )
    assert record_mismatch(spec, point, Record(metrics={}, threads=2), threads=2) == ""
    assert Record.parse(Record(metrics={}, threads=2).to_line()).threads == 2
    with pytest.raises(ValueError, match="record threads must be an integer >= 1"):
        Record(metrics={}, threads=0)


@pytest.mark.mpi
def test_a_sweep_over_threads_lands_a_coordinate_the_ranks_saw(tmp_path, client):
    spec = load_spec(
        {
            "name": "graph500-threads",
            "kernel": "graph500",
            "params": {"scale": 12, "nbfs": 2, "variant": "simple"},
            "sweep": {"nodes": [2], "threads": [1, 2]},
            "throttle": {"mode": "emulated", "core_slots": 0},
            "timeout": 120,
            "output": str(tmp_path / "g.zarr"),
        }
    )
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    assert list(ds.threads.values) == [1, 2]
    # the same searches at both counts: the threads change the time, not the tree
    nedge = ds.nedge.squeeze(drop=True)
    assert (nedge.sel(threads=1) == nedge.sel(threads=2)).all()
    assert (ds.valid.squeeze(drop=True) == 1).all()
    records = {
        r["coords"]["threads"]: r["record"] for r in ResultStore(spec.output).results()
    }
    # the harness echoes the threads it ran with; a different count is a mismatch
    assert records[2]["threads"] == 2
    assert "threads" not in records[1]  # the default is left out of the record


PRINT_THREADS = (
    "import json, os; print('SCALEPROBE-RECORD ' + json.dumps({'metrics': {"
    "'omp': int(os.environ['OMP_NUM_THREADS']), "
    "'blas': int(os.environ['OPENBLAS_NUM_THREADS']), "
    f"'own': int(os.environ['{THREADS_ENV}'])}}}}))"
)


@pytest.mark.mpi
def test_an_external_program_gets_the_threads_in_its_environment(tmp_path, client):
    script = tmp_path / "threads.py"
    script.write_text(PRINT_THREADS + "\n")
    spec = {
        "name": "external-threads",
        "kernel": "external",
        "params": {
            "command": f"{{mpiexec}} -n {{ranks}} {sys.executable} {script}",
            "parser": "json",
        },
        "sweep": {"nodes": [1], "threads": [1, 2]},
        "throttle": {"mode": "none"},
        "timeout": 60,
        "output": str(tmp_path / "ext.zarr"),
    }
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    for name in ("omp", "blas", "own"):
        assert ds[name].squeeze(drop=True).values.tolist() == [1, 2]
    stored = ResultStore(str(tmp_path / "ext.zarr")).results()
    assert sorted(r["record"].get("threads", 1) for r in stored) == [1, 2]
