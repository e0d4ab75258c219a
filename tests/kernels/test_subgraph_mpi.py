"""Real MPI runs of the subgraph kernel: every mode gives the one-process estimate."""

import json

import pytest
from scaleprobe.kernels.schema import Record
from scaleprobe.kernels.subgraph import Template, count_subgraphs, erdos_renyi
from scaleprobe.kernels.subgraph.graphs import write_edge_list

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

EMULATED = {
    "mode": "emulated",
    "ppn": 1,
    "bandwidth": 50.0,
    "link_bandwidth": 1.25e8,
    "latency": 5e-6,
    "core_slots": 2,
}


@pytest.fixture
def launch(mpi_run):
    def run(ranks, arguments, environment=None):
        done = mpi_run(
            ranks, "-m", "scaleprobe.kernels.subgraph", *arguments, env=environment
        )
        return Record.parse(done.stdout).to_dict()

    return run


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("graphs") / "er.txt"
    graph = erdos_renyi(400, 1400, seed=31)
    write_edge_list(graph, path)
    return path, graph


@pytest.mark.parametrize(
    ("mode", "extra"),
    [
        ("alltoall", ["--no-compress"]),
        ("pipeline", []),
        ("adaptive", ["--threshold", "5", "--task-size", "3"]),
    ],
)
def test_four_ranks_match_one_process(launch, graph_file, mode, extra):
    path, graph = graph_file
    expected = count_subgraphs(graph, Template.by_name("u7-2"), iterations=4, seed=3)
    record = launch(
        4,
        [
            "--graph",
            str(path),
            "--template",
            "u7-2",
            "--iterations",
            "4",
            "--seed",
            "3",
            "--mode",
            mode,
            *extra,
        ],
        {"SCALEPROBE_LINK": json.dumps(EMULATED)},
    )
    metrics = record["metrics"]
    assert metrics["estimate"] == expected.estimate
    assert [
        t["iteration_estimate"] for t in record["trials"]
    ] == expected.estimates.tolist()
    assert metrics["ranks"] == 4
    assert metrics["iterations"] == 4
    for key in (
        "time",
        "time_per_iteration",
        "peak_rss",
        "comm_time",
        "comp_time",
        "bytes_sent",
        "messages",
    ):
        assert metrics[key] > 0, key
    subtemplates = record["profiles"]["subtemplate"]
    assert len(subtemplates["comp_time"]) == metrics["subtemplates"] == 4
    assert sum(subtemplates["bytes_sent"]) <= metrics["bytes_sent"]
    pipelined = metrics["pipelined_subtemplates"]
    if mode == "alltoall":
        assert pipelined == 0
        assert "step" not in record["profiles"]
        assert metrics["modelled_overlap"] == 0
    else:
        assert pipelined == (
            4 if mode == "pipeline" else sum(subtemplates["pipelined"])
        )
        assert pipelined > 0
        steps = record["profiles"]["step"]
        assert len(steps["modelled_overlap"]) == 3
        assert all(0 <= rho <= 1 for rho in steps["modelled_overlap"])
        # Eq. 14: every step's transfer runs while the previous step is summed.
        assert metrics["modelled_overlap"] > 0
        assert all(t > 0 for t in steps["modelled_transfer_time"])
    if mode == "adaptive":
        assert metrics["task_size"] == 3
        assert metrics["max_task"] <= 3
        assert pipelined == 2


def test_two_ranks_float32_generator_spec(launch):
    graph = erdos_renyi(300, 900, seed=5)
    expected = count_subgraphs(graph, Template.by_name("u5-2"), iterations=3, seed=1)
    record = launch(
        2,
        [
            "--graph",
            "er:300:900:5",
            "--template",
            "u5-2",
            "--iterations",
            "3",
            "--seed",
            "1",
            "--precision",
            "float32",
            "--mode",
            "pipeline",
        ],
    )
    assert record["metrics"]["estimate"] == expected.estimate
    assert record["parameters"]["precision"] == "float32"
    assert record["link"]["mode"] == "none"
    # No link model acts on the real interconnect: nothing modelled is reported.
    assert (record["link"]["mode"], record["link"]["ppn"]) == ("none", 1)
    assert "modelled_overlap" not in record["metrics"]
    steps = record["profiles"]["step"]
    assert sorted(steps) == ["comp_time", "wait_time"]


@pytest.mark.parametrize("mode", ["alltoall", "pipeline"])
def test_largest_template_on_two_ranks_matches_one_process(launch, mode):
    # u15-2 (Chen et al. 2018, Table 3): 15 colours, split tables of up to C(15, 7).
    graph = erdos_renyi(200, 900, seed=7)
    expected = count_subgraphs(graph, Template.by_name("u15-2"), iterations=2, seed=2)
    assert expected.estimate > 0
    record = launch(
        2,
        [
            "--graph",
            "er:200:900:7",
            "--template",
            "u15-2",
            "--iterations",
            "2",
            "--seed",
            "2",
            "--mode",
            mode,
        ],
    )
    assert record["metrics"]["estimate"] == expected.estimate
    assert record["metrics"]["k"] == 15
