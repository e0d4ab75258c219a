"""NPB's classes as ordered sizes: real NPB IS and CG sweeps over classes S and W
through ``scaleprobe fit --model fim``, projected to class A by name."""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pytest
from scaleprobe.framework import run_sweep
from scaleprobe.framework._cli_models import register
from scaleprobe.kernels.harness import Parameter
from scaleprobe.models import make_features
from scaleprobe.models.core.ordered import class_sizes, ordered_sizes


def _classes_sweep(output, cluster, kernel, params):
    """A real sweep of ``kernel``'s classes S and W on 1, 2, 4 emulated nodes."""
    from distributed import Client

    spec = {
        "name": f"{kernel.split('.')[-1]}-classes",
        "kernel": kernel,
        "params": params,
        "sweep": {"nodes": [1, 2, 4], "ppn": 1, "class": ["S", "W"]},
        "throttle": {"mode": "emulated", "link_bandwidth": "1 Gbit/s"},
        "timeout": 600,
        "output": str(output),
    }
    with Client(cluster) as client:
        data = run_sweep(spec, client, progress=False)
    assert (data.status.values == "ok").all(), data.error.values
    return data


def _run(argv):
    parser = argparse.ArgumentParser(prog="scaleprobe")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_npb_classes_stand_for_npbs_problem_sizes():
    # NPB's tables: IS 2**23 keys in class A, EP 2**28 pairs, CG order 14000
    assert class_sizes("npb.is", "class", ["A"]) == {"total_keys": [2.0**23]}
    assert class_sizes("npb.ep", "class", ["S", "B"]) == {"pairs": [2.0**24, 2.0**30]}
    assert class_sizes("npb.cg", "class", ["A"])["na"] == [14000.0]
    # and the iterations it times: class B 75, A 15
    assert class_sizes("npb.cg", "class", ["A", "B"])["stages"] == [15.0, 75.0]
    assert class_sizes("iterative.kmeans", "points", ["4"]) is None
    with pytest.raises(ValueError, match=r"'Q' is not a class of npb\.is"):
        class_sizes("npb.is", "class", ["Q"])
    # CG's class U (sized by its own flags) keeps the text
    frame = pd.DataFrame({"ranks": [1, 1], "class": ["S", "U"]})
    assert list(ordered_sizes(frame.copy(), "npb.cg").columns) == ["ranks", "class"]
    frame = pd.DataFrame({"ranks": [1, 2], "class": ["W", "S"]})
    sized = ordered_sizes(frame, "npb.cg")
    assert sized["na"].tolist() == [7000.0, 1400.0]
    assert sized["nnz"].tolist() == [508402.0, 78148.0]


def test_recorded_sizes_stand_for_a_class_run_at_other_steps():
    import numpy as np
    import xarray as xr

    # BT's classes S and W at 5 steps: 12**3 * 5 and 24**3 * 5 grid-point steps,
    # not the 12**3 * 60 and 24**3 * 200 of NPB's own counts
    ran = np.array([[12.0**3 * 5, 24.0**3 * 5]] * 2)
    dims = ("nodes", "class")
    data = xr.Dataset(
        {"time": (dims, np.ones((2, 2))), "cell_steps": (dims, ran)},
        coords={"nodes": [1, 2], "class": ["S", "W"], "ppn": 1},
        attrs={"kernel": "npb.bt"},
    )
    X, _ = make_features(data)
    assert list(X.columns) == ["nodes", "ppn", "ranks", "cell_steps"]
    assert X["cell_steps"].tolist() == [8640.0, 69120.0, 8640.0, 69120.0]
    # without the record, the class's own count
    X, _ = make_features(data.drop_vars("cell_steps"))
    assert X["cell_steps"].tolist() == [103680.0, 2764800.0] * 2
    # a size recorded where the class is not swept is not a feature
    X, _ = make_features(data.sel({"class": "S"}, drop=True))
    assert "cell_steps" not in X.columns


def test_a_class_by_name_is_refused_for_models_trained_at_steps_of_their_own():
    from scaleprobe.framework._cli_inputs import BadInputError
    from scaleprobe.framework._cli_models import _params

    def training(cell_steps):
        return {
            "provenance": {"kernel": "npb.bt"},
            "parameters": {"cell_steps": cell_steps},
        }

    # trained on classes S and W at NPB's own step counts: class A by its name
    own = training([12.0**3 * 60, 24.0**3 * 200])
    assert _params(["class=A"], own) == {"cell_steps": [64.0**3 * 200]}
    # trained at 5 steps a class: class A's name would project 200 steps
    fives = training([12.0**3 * 5, 24.0**3 * 5])
    with pytest.raises(
        BadInputError, match=r"trained on cell_steps no class of npb\.bt"
    ):
        _params(["class=A"], fives)
    assert _params([f"cell_steps={64**3 * 5}"], fives) == {"cell_steps": [64.0**3 * 5]}


def test_sizes_name_every_choice():
    with pytest.raises(ValueError, match="name every choice"):
        Parameter("c", "choice", "S", choices=("S", "W"), sizes={"S": {"n": 1}})
    with pytest.raises(ValueError, match="the same names"):
        Parameter(
            "c", "choice", "S", choices=("S", "W"), sizes={"S": {"n": 1}, "W": {"m": 2}}
        )


@pytest.mark.mpi
@pytest.mark.slow
def test_fim_fits_is_classes_s_and_w_and_projects_class_a(tmp_path, cluster, capsys):
    data = _classes_sweep(tmp_path / "is.zarr", cluster, "npb.is", {"counters": False})
    X, _ = make_features(data, fim=True)
    assert "class" not in X.columns
    assert sorted(X["total_keys"].unique()) == [2.0**16, 2.0**20]

    models = tmp_path / "models.json"
    argv = ["fit", str(tmp_path / "is.zarr"), "--model", "fim", "--output"]
    assert _run([*argv, str(models)]) == 0
    assert "fim: computation" in capsys.readouterr().out
    document = json.loads(models.read_text())
    assert document["training"]["parameters"] == {"total_keys": [2.0**16, 2.0**20]}

    out = tmp_path / "a.csv"
    argv = ["project", str(models), "--name", "fim", "--nodes", "2,4"]
    assert _run([*argv, "--param", "class=A", "--output", str(out)]) == 0
    table = pd.read_csv(out)
    assert table["total_keys"].unique().tolist() == [2.0**23]
    # class A sorts 8 times class W's keys: FiM's time is above W's measured one
    measured = X[X["total_keys"] == 2.0**20].groupby("nodes")["comp_time_iterations"]
    for nodes in (2, 4):
        row = table[table["nodes"] == nodes]
        assert float(row["time_predicted"].iloc[0]) > measured.median()[nodes]
    capsys.readouterr()
    assert _run([*argv, "--param", "class=Q"]) == 2
    assert "'Q' is not a class of npb.is" in capsys.readouterr().err


@pytest.mark.mpi
@pytest.mark.slow
def test_fim_projects_cg_class_a_from_two_classes_that_grow_together(
    tmp_path, cluster, capsys
):
    # classes S and W fix one coefficient between CG's order and nonzeros: FiM-Cal
    # regressed on both put class A's computation on one node at 0.007 s, below
    # class W's own 0.17; it now regresses on the nonzeros, says so, and its range
    # spans the law on the order
    data = _classes_sweep(tmp_path / "cg.zarr", cluster, "npb.cg", {})
    models = tmp_path / "models.json"
    argv = ["fit", str(tmp_path / "cg.zarr"), "--model", "fim", "--output"]
    assert _run([*argv, str(models)]) == 0
    captured = capsys.readouterr()
    assert "cannot tell FiM-Cal's cycles in nnz from cycles in na" in captured.err
    assert "on nnz, which the sizes cannot tell from na" in captured.out

    out = tmp_path / "a.csv"
    argv = ["project", str(models), "--name", "fim", "--nodes", "1,2"]
    assert _run([*argv, "--param", "class=A", "--output", str(out)]) == 0
    table = pd.read_csv(out).set_index("nodes")
    X, _ = make_features(data, fim=True)
    class_w = X[X["nnz"] == X["nnz"].max()].groupby("nodes")["comp_time_iterations"]
    # class A multiplies by 3.6 the nonzeros class W multiplies, at the same 15
    # iterations: more computation, never less
    for nodes in (1, 2):
        assert table.loc[nodes, "time_predicted"] > class_w.median()[nodes]
        assert table.loc[nodes, "time_lower"] < table.loc[nodes, "time_predicted"]


def test_a_class_projects_at_the_iterations_it_times():
    # CG's classes S, W, A time 15 iterations, class B 75: a projection of class B
    # carries its 75 to the frame the models predict on, though no model regresses
    # on the iterations
    from scaleprobe.models.projection.grid import resolve_params

    training = {"parameters": {"na": [1400.0, 14000.0], "nnz": [78148.0, 1853104.0]}}
    given = class_sizes("npb.cg", "class", ["B"])
    params = resolve_params(given, training)
    assert params["stages"].tolist() == [75.0]
    assert params["na"].tolist() == [75000.0]
    with pytest.raises(ValueError, match="not trained over 'niter'"):
        resolve_params({"niter": [75.0]}, training)
