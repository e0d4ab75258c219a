"""Kernels come from the ``scaleprobe.kernels`` entry points; specs are checked
against each kernel's own argument parser before anything is launched."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import yaml
from scaleprobe.framework.cli import main
from scaleprobe.framework.spec import SpecError, load_spec
from scaleprobe.kernels.harness import KINDS
from scaleprobe.kernels.registry import (
    kernel_declaration,
    kernel_min_ranks,
    kernel_module,
    kernel_names,
    kernel_parser,
)


def _spec(**changes):
    spec = {
        "name": "k",
        "kernel": "commbench.pingpong",
        "sweep": {"nodes": [1, 2], "msg_bytes": [8, 64]},
        "throttle": {"mode": "emulated"},
    }
    spec.update(changes)
    return spec


def test_scaleprobe_kernels_are_registered_as_entry_points():
    names = kernel_names()
    for name in ("commbench.pingpong", "commbench.compute", "graph500", "subgraph"):
        assert name in names
    module = kernel_module("commbench.pingpong")
    assert module == "scaleprobe.kernels.commbench.pingpong"
    assert "graph500.bfs_2d" not in names
    assert "comm" not in names


def test_every_parser_is_built_without_mpi4py():
    probe = textwrap.dedent(
        """
        import json, sys
        from scaleprobe.kernels.registry import kernel_names, kernel_parser
        flags = {n: len(kernel_parser(n)._actions) for n in kernel_names()}
        print(json.dumps({"mpi4py": "mpi4py" in sys.modules, "flags": flags}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    report = json.loads(out.stdout)
    assert report["mpi4py"] is False
    assert all(count > 1 for count in report["flags"].values()), report


def test_booleans_take_both_forms():
    parser = kernel_parser("commbench.pingpong")
    assert parser.parse_args(["--trials"]).trials is True
    assert parser.parse_args(["--no-trials"]).trials is False
    spec = load_spec(_spec(params={"trials": False}))
    assert spec.params == {"trials": False}


BAD = [
    (
        {"params": {"itertions": 3}},
        "spec key 'params.itertions': kernel 'commbench.pingpong' has no parameter "
        "'itertions' (did you mean 'iterations'?)",
    ),
    (
        {"params": {"iterations": "many"}},
        "spec key 'params': kernel 'commbench.pingpong' rejects",
    ),
    (
        {"sweep": {"nodes": [1], "msg_bytes": [8, "lots"]}},
        "spec key 'sweep.msg_bytes'",
    ),
    (
        {"kernel": "graph500.bfs_2d"},
        "spec key 'kernel': unknown kernel 'graph500.bfs_2d'; available: ",
    ),
    ({"kernel": "comm.instrumented"}, "spec key 'kernel': unknown kernel"),
    (
        {"sweep": {"nodes": [1], "bandwidth": [100, 10]}, "throttle": {"mode": "none"}},
        "spec key 'sweep.bandwidth': 10 % asked, but throttle mode 'none' does not "
        "shape the interconnect",
    ),
]


@pytest.mark.parametrize(("changes", "message"), BAD)
def test_mistakes_are_one_line_errors_at_load(tmp_path, capsys, changes, message):
    with pytest.raises(SpecError) as info:
        load_spec(_spec(**changes))
    assert str(info.value).startswith(message), str(info.value)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(**changes)))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("scaleprobe: error: " + message)
    assert len(err.splitlines()) == 1


def test_a_typo_names_the_closest_flag_of_a_package_kernel():
    with pytest.raises(SpecError, match=r"did you mean 'direction_optimizing'\?"):
        load_spec(
            {
                "name": "g",
                "kernel": "graph500",
                "params": {"direction_optimising": True},
                "sweep": {"nodes": [1]},
            }
        )


USER_KERNEL = """
import argparse, sys

def build_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, required=True)
    return parser

if __name__ == "__main__":
    args = build_parser().parse_args()
    from mpi4py import MPI
    from scaleprobe.kernels.schema import Record
    comm = MPI.COMM_WORLD
    total = comm.allreduce(args.size)
    if comm.rank == 0:
        Record(metrics={"time": 0.0, "total": float(total)}).emit()
"""

USER_RUN = """
import json
from scaleprobe.framework.launch import launch_point
from scaleprobe.framework import plan
from scaleprobe.framework.spec import load_spec
spec = load_spec({"name": "u", "kernel": "mylab.sum", "sweep": {"nodes": [2],
                  "size": [5]}, "throttle": {"mode": "none"}})
result = launch_point(spec, plan(spec)[0])
try:
    load_spec({"name": "u", "kernel": "mylab.sum", "sweep": {"nodes": [2]}})
except Exception as exc:
    result["missing"] = str(exc)
print(json.dumps({k: result.get(k) for k in ("status", "error", "record", "missing")}))
"""


@pytest.mark.mpi
def test_an_installed_package_adds_a_kernel(tmp_path, mpiexec):
    (tmp_path / "mylab_sum.py").write_text(USER_KERNEL)
    info = tmp_path / "mylab_sum-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab-sum\n")
    (info / "entry_points.txt").write_text(
        "[scaleprobe.kernels]\nmylab.sum = mylab_sum:build_parser\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", USER_RUN],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["status"] == "ok", result["error"]
    assert result["record"]["metrics"]["total"] == 10.0
    assert "the following arguments are required: --size" in result["missing"]


@pytest.mark.parametrize("name", kernel_names())
def test_every_kernel_has_a_declaration_the_docs_can_read(name):
    declared = kernel_declaration(name)
    assert declared.name == name
    assert declared.summary
    assert "\n" not in declared.summary
    assert isinstance(declared.description, str)
    assert declared.min_ranks == kernel_min_ranks(name) >= 1
    flags = {o for a in kernel_parser(name)._actions for o in a.option_strings}
    for parameter in declared.parameters:
        assert parameter.flag in flags
        assert parameter.kind in KINDS
        assert parameter.help, f"{name}: {parameter.name} has no help"
        # the default is inside the range the kernel declares
        assert parameter.problem(parameter.default) == ""
    # scaleprobe's own kernels declare what they report
    assert declared.metrics
    for metric in declared.metrics:
        assert metric.unit, f"{name}: {metric.name} has no unit"
        assert metric.long_name, f"{name}: {metric.name} has no long name"


USER_DECLARATION = """
import json
from scaleprobe.kernels.registry import kernel_declaration
declared = kernel_declaration("mylab.sum")
print(json.dumps({
    "parameters": [
        [p.name, p.kind, p.required, p.minimum] for p in declared.parameters
    ],
    "metrics": list(declared.metrics),
    "min_ranks": declared.min_ranks,
    "summary": declared.summary,
}))
"""


def test_a_kernel_with_only_a_parser_is_declared_from_it(tmp_path):
    (tmp_path / "mylab_sum.py").write_text(
        USER_KERNEL.replace("def build_parser", "MIN_RANKS = 2\n\n\ndef build_parser")
    )
    info = tmp_path / "mylab_sum-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mylab-sum\n")
    (info / "entry_points.txt").write_text(
        "[scaleprobe.kernels]\nmylab.sum = mylab_sum:build_parser\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", USER_DECLARATION],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    declared = json.loads(out.stdout)
    assert declared == {
        "parameters": [["size", "int", True, None]],
        "metrics": [],
        "min_ranks": 2,
        "summary": "mylab.sum",
    }
