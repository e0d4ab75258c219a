"""The external-program adapter: templates, parsers of real Graph500 outputs, errors."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scaleprobe.framework.launch import child_environment
from scaleprobe.kernels.external import (
    PARSERS,
    build_command,
    check_throttle,
    parse_output,
    validate_params,
)
from scaleprobe.kernels.schema import RecordError

DATA = Path(__file__).parent / "data"
G500 = {
    "command": "{mpiexec} -n {ranks} ./graph500_reference_bfs {scale} 16",
    "parser": "graph500",
}


def read(name):
    return (DATA / name).read_text()


def _parsed(stdout, params) -> dict:
    """The record :func:`parse_output` makes, as its JSON-ready dict."""
    return parse_output(stdout, params).to_dict()


# --- command templates ------------------------------------------------------------


def test_build_command_substitutes_point_ranks_and_mpiexec():
    argv = build_command(
        G500,
        {"nodes": 2, "ppn": 2, "bandwidth": 100, "run": 0, "scale": 14},
        mpiexec="/opt/bin/mpiexec",
        ranks=4,
    )
    assert argv == [
        "/opt/bin/mpiexec",
        "-n",
        "4",
        "./graph500_reference_bfs",
        "14",
        "16",
    ]


def test_fixed_params_and_format_specs_are_placeholders():
    params = {
        "command": "./prog --bw {bandwidth:.0f} --ef {edgefactor} {label}x",
        "parser": "json",
        "edgefactor": 8,
        "label": "a",
    }
    argv = build_command(params, {"bandwidth": 12.5}, mpiexec="mpiexec", ranks=1)
    assert argv == ["./prog", "--bw", "12", "--ef", "8", "ax"]


def test_point_overrides_fixed_param_and_values_stay_one_argument():
    params = {
        "command": "./prog {path} {scale}",
        "parser": "json",
        "path": "/data/my graphs/g.bin",
        "scale": 3,
    }
    argv = build_command(params, {"scale": 9}, mpiexec="mpiexec", ranks=1)
    assert argv == ["./prog", "/data/my graphs/g.bin", "9"]


def test_mpiexec_may_hold_several_words():
    argv = build_command(G500, {"scale": 10}, mpiexec="srun --mpi=pmi2", ranks=8)
    assert argv[:4] == ["srun", "--mpi=pmi2", "-n", "8"]


def test_shell_quoted_value_is_not_interpreted():
    params = {"command": "echo {text}", "parser": "json", "text": "$(rm -rf /); x"}
    assert build_command(params, {}, mpiexec="m", ranks=1) == ["echo", "$(rm -rf /); x"]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("./prog {nope}", r"unknown placeholder \{nope\}; allowed: .*\{ranks\}"),
        ("./prog {scale", "malformed template"),
        ("./prog {}", r"placeholder .* is not allowed"),
        ("./prog {0}", r"placeholder .* is not allowed"),
        ("./prog {scale.real}", r"placeholder .* is not allowed"),
        ("./prog {scale!r}", "conversion !r"),
        ("./prog {scale:{ranks}}", "nested placeholder"),
        ("./prog {scale:zz}", r"cannot format \{scale:zz\}"),
        ("'unterminated {scale}", "cannot split"),
    ],
)
def test_bad_templates_name_the_key(command, message):
    with pytest.raises(ValueError, match="^params.command: " + message):
        build_command(
            {"command": command, "parser": "json"},
            {"scale": 3},
            mpiexec="mpiexec",
            ranks=1,
        )


@pytest.mark.mpi
def test_real_mpi_program_through_the_adapter(tmp_path, mpiexec):
    """Render a template, launch it with mpiexec on 2 ranks, parse with a regex."""
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\n"
        "from mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "s = c.allreduce(int(sys.argv[1]) * (c.rank + 1))\n"
        "if c.rank == 0:\n"
        "    print(f'progress 0.0'); print(f'size {c.size} sum = {s}')\n"
    )
    params = {
        "command": "{mpiexec} -n {ranks} {python} {script} {scale}",
        "parser": "regex",
        "python": sys.executable,
        "script": str(script),
        "patterns": {"sum": r"sum = (\d+)", "size": r"^size (\d+)"},
        "units": {"sum": "1"},
    }
    validate_params(params, sweep_keys=["nodes", "scale"])
    argv = build_command(params, {"nodes": 2, "scale": 7}, mpiexec=mpiexec, ranks=2)
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        env=child_environment(),
        check=True,
    ).stdout
    record = _parsed(out, params)
    assert record["metrics"] == {"sum": 21.0, "size": 2.0}
    assert record["units"] == {"sum": "1"}


REFERENCE = os.environ.get("SCALEPROBE_GRAPH500_REFERENCE", "")


@pytest.mark.mpi
@pytest.mark.skipif(
    not os.access(REFERENCE, os.X_OK),
    reason="set SCALEPROBE_GRAPH500_REFERENCE to a built reference binary",
)
def test_real_graph500_reference_binary(mpiexec):
    """Opt-in: run a Graph500 reference binary at SCALE 10 on 2 ranks and parse it."""
    argv = build_command(
        {
            **G500,
            "command": "{mpiexec} -n {ranks} {binary} {scale} 16",
            "binary": REFERENCE,
        },
        {"scale": 10},
        mpiexec=mpiexec,
        ranks=2,
    )
    out = subprocess.run(
        argv, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    metrics = _parsed(out, G500)["metrics"]
    assert (metrics["reported_scale"], metrics["num_mpi_processes"]) == (10, 2)
    assert metrics["teps"] > 0


# --- graph500 parser on real reference outputs ----------------------------------


def test_the_program_s_rank_count_is_the_record_s_placement():
    record = parse_output(read("graph500_3.0_scale12_np2.txt"), G500)
    assert record.placement.ranks == 2
    assert record.mismatch(ranks=2) == ""
    assert record.mismatch(ranks=1).startswith(
        "the program ran as 2 rank(s) but the point asks 1"
    )
    alone = parse_output(read("graph500_2.1_replicated_csc_scale10_np1.txt"), G500)
    assert alone.placement.ranks == 1
    # an output that does not say leaves the placement unknown
    unsaid = "SCALE: 10\nbfs  mean_time: 0.002\nbfs  harmonic_mean_TEPS: ! 8e6\n"
    assert parse_output(unsaid, G500).placement is None


def test_graph500_3_0_block():
    record = _parsed(read("graph500_3.0_scale12_np2.txt"), G500)
    m = record["metrics"]
    assert record["status"] == "ok"
    assert m["time"] == m["mean_time"] == 0.00102189
    assert m["teps"] == m["harmonic_mean_teps"] == 6.39274e07
    assert m["harmonic_stddev_teps"] == 1.16887e06
    assert (m["reported_scale"], m["reported_edgefactor"], m["nbfs"]) == (12, 16, 64)
    assert m["num_mpi_processes"] == 2
    assert m["generation_time"] == 0.0176074
    assert m["construction_time"] == 0.00364236
    assert m["median_nedge"] == 65327
    assert m["max_validate_time"] == 0.00515949
    assert record["units"]["teps"] == "edges/s"
    assert record["units"]["mean_nedge"] == "edges"
    assert record["units"]["median_validate_time"] == "s"
    assert "trials" not in record
    # time and teps, 6 run-level keys, 7 statistics each of time, nedge, TEPS
    # (min, quartiles, max, harmonic mean and deviation) and validation time
    assert len(m) == 2 + 6 + 7 * 4


@pytest.mark.parametrize(
    "name",
    [
        "graph500_2.1_simple_scale12_np2.txt",
        "graph500_2.1_replicated_csc_scale10_np1.txt",
    ],
)
def test_graph500_2_1_block(name):
    record = _parsed(read(name), G500)
    m = record["metrics"]
    assert m["time"] == m["mean_time"]
    assert m["teps"] == m["harmonic_mean_teps"]
    assert set(m) == set(_parsed(read("graph500_3.0_scale12_np2.txt"), G500)["metrics"])


def test_graph500_2_1_known_values():
    m = _parsed(read("graph500_2.1_simple_scale12_np2.txt"), G500)["metrics"]
    assert (m["median_time"], m["harmonic_mean_teps"]) == (0.000844247, 7.08106e07)


def test_graph500_trials_from_merged_stderr():
    text = read("graph500_3.0_scale10_np1_stdout_stderr.txt")
    record = _parsed(text, G500)
    trials = record["trials"]
    assert len(trials) == 64 == record["metrics"]["nbfs"]
    assert set(trials[0]) == {"time", "teps", "validate_time"}
    # the block's minimum is the minimum of the printed per-search times (%f rounding)
    assert min(t["time"] for t in trials) == pytest.approx(
        record["metrics"]["min_time"], abs=1e-6
    )
    # the stderr 'graph_generation: ... s' line is superseded by the stdout block
    assert record["metrics"]["generation_time"] == 0.00333773


def test_graph500_run_lines_and_incomplete_trial_logs():
    block = "SCALE: 10\nmean_time: 0.5\nharmonic_mean_TEPS: 2e6\n"
    runs = (
        "Run   1:      0.25 s, validation 1.5 s\nRun   2:      0.75 s, validation 2 s\n"
    )
    trials = _parsed(block + runs, G500)["trials"]
    assert trials == [
        {"time": 0.25, "validate_time": 1.5},
        {"time": 0.75, "validate_time": 2.0},
    ]
    # a log that lost BFS 1 does not guess which search is which
    partial = "Time for BFS 0 is 0.1\nTime for BFS 2 is 0.3\n"
    assert "trials" not in _parsed(partial + block, G500)


def test_graph500_median_only_and_sssp_prefix():
    text = (
        "noise\nSCALE: 10\nbfs  median_time: 0.5\nbfs  harmonic_mean_TEPS:  !  2e6\n"
        "sssp median_time: 0.75\nsssp harmonic_mean_TEPS:     !  1e6\n"
    )
    record = _parsed(text, G500)
    assert record["metrics"]["time"] == 0.5
    assert record["metrics"]["teps"] == 2e6
    assert record["metrics"]["sssp_harmonic_mean_teps"] == 1e6
    assert record["long_names"]["time"].startswith("BFS time (median")


def test_graph500_failed_validation_is_invalid():
    text = (
        "Validation failed for this BFS root; skipping rest.\n"
        "No results printed for invalid run.\n"
    )
    record = _parsed(text, G500)
    assert record["status"] == "invalid"
    assert "validation" in record["reason"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no statistics block.*<empty>"),
        ("Fatal error in MPI_Init\n", "no statistics block.*Fatal error"),
        (
            "SCALE: 10\nbfs  mean_time: 0.1\n",
            "the statistics block has no harmonic_mean_teps",
        ),
        (
            "SCALE: 10\nharmonic_mean_TEPS: 4\n",
            "the statistics block has no median_time",
        ),
    ],
)
def test_graph500_bad_output(text, message):
    with pytest.raises(RecordError, match="^graph500 parser: " + message):
        _parsed(text, G500)


# --- regex and json parsers --------------------------------------------------------


def test_regex_takes_last_match_and_reports_misses():
    params = {"parser": "regex", "patterns": {"time": r"t=(\S+)"}}
    assert _parsed("t=1\nt=2.5\n", params)["metrics"] == {"time": 2.5}
    with pytest.raises(RecordError, match=r"'time'.*matched nothing"):
        _parsed("nothing here", params)
    with pytest.raises(RecordError, match="captured 'abc', not a number"):
        _parsed("t=abc", params)


def test_json_parser_reads_a_record_line():
    out = 'hello\nSCALEPROBE-RECORD {"metrics": {"time": 2.0}, "status": "ok"}\n'
    assert _parsed(out, {"parser": "json"})["metrics"] == {"time": 2.0}
    with pytest.raises(RecordError, match="no record line"):
        _parsed("hello", {"parser": "json"})


# --- validation ------------------------------------------------------------------


def test_parse_output_with_bad_params_is_a_record_error():
    with pytest.raises(RecordError, match=r"params\.parser: unknown parser 'yaml'"):
        _parsed("x", {"parser": "yaml"})


def test_registry_names():
    assert sorted(PARSERS) == ["graph500", "json", "regex"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"parser": "graph500"}, "params.command: missing"),
        ({"command": 3, "parser": "graph500"}, "params.command: must be a non-empty"),
        (
            {"command": "./a {scael}", "parser": "graph500"},
            r"params.command: unknown placeholder \{scael\}",
        ),
        ({"command": "./a"}, "params.parser: missing; allowed: graph500, json, regex"),
        (
            {"command": "./a", "parser": "xml"},
            "params.parser: unknown parser 'xml'; allowed: graph500, json, regex",
        ),
        (
            {"command": "./a", "parser": "regex"},
            "params.patterns: parser 'regex' needs",
        ),
        (
            {"command": "./a", "parser": "regex", "patterns": {"t": "t=\\S+"}},
            "params.patterns.t: .* has 0 groups",
        ),
        (
            {"command": "./a", "parser": "regex", "patterns": {"t": "(a)(b)"}},
            "params.patterns.t: .* has 2 groups",
        ),
        (
            {"command": "./a", "parser": "regex", "patterns": {"t": "(a"}},
            "params.patterns.t: .* is not a regular expression",
        ),
        (
            {"command": "./a", "parser": "regex", "patterns": ["(a)"]},
            "params.patterns: expected a mapping",
        ),
        (
            {
                "command": "./a",
                "parser": "regex",
                "patterns": {"t": "(a)"},
                "units": {"x": "s"},
            },
            "params.units: x not among the pattern names",
        ),
        (
            {"command": "./a", "parser": "graph500", "patterns": {"t": "(a)"}},
            "params.patterns: only used by parser 'regex'",
        ),
        (["./a"], "params: kernel 'external' needs a mapping"),
    ],
)
def test_validate_params_messages(params, message):
    with pytest.raises(ValueError, match="^" + message) as info:
        validate_params(params, sweep_keys=["nodes", "ppn", "scale"])
    assert "\n" not in str(info.value)


def test_validate_params_accepts_fixed_params_as_placeholders():
    validate_params(
        {
            "command": "{mpiexec} -n {ranks} ./a {scale} {edgefactor}",
            "parser": "graph500",
            "edgefactor": 16,
        },
        sweep_keys=["scale"],
    )
    # without the sweep keys only the syntax can be checked
    validate_params({"command": "./a {anything}", "parser": "json"})


def test_emulated_throttle_is_refused_for_external_programs():
    check_throttle("none")
    check_throttle("netns")
    with pytest.raises(
        ValueError, match=r"^throttle\.mode: 'emulated' cannot throttle"
    ):
        check_throttle("emulated")


# --- through the framework ------------------------------------------------------------


@pytest.mark.slow
def test_sweep_of_an_external_program_lands_in_the_dataset(tmp_path, client):
    """A sweep over reference outputs (printed by cat) becomes Dataset variables."""
    from scaleprobe.framework import run_sweep

    # The outputs were printed by two ranks; cat replays them as the point's one
    # rank, so they say one (a record whose rank count differs is invalid).
    for name, version in (
        ("graph500_3.0_scale12_np2.txt", "v3"),
        ("graph500_2.1_simple_scale12_np2.txt", "v2"),
    ):
        text = re.sub(r"(?m)^(num_mpi_processes:\s+)2$", r"\g<1>1", read(name))
        (tmp_path / f"{version}.txt").write_text(text)
    spec = {
        "name": "external-fixtures",
        "kernel": "external",
        "params": {
            "command": "cat {directory}/{version}.txt",
            "parser": "graph500",
            "directory": str(tmp_path),
        },
        "sweep": {
            "nodes": 1,
            "ppn": 1,
            "bandwidth": 100,
            "version": ["v2", "v3"],
            "run": 1,
        },
        "throttle": {"mode": "none"},
        "timeout": 30,
        "output": str(tmp_path / "results.zarr"),
    }
    ds = run_sweep(spec, client=client, progress=False)
    teps = ds["teps"].sel(version="v3").squeeze()
    assert float(teps) == 6.39274e07
    assert float(ds["time"].sel(version="v2").squeeze()) == 0.000925497
    assert ds["teps"].attrs["units"] == "edges/s"
    assert float(ds["median_nedge"].sel(version="v2").squeeze()) == 65535
    assert set(ds["status"].values.ravel().tolist()) == {"ok"}
