"""The kernel harness: declarations, ranges, records, and a new kernel under MPI."""

from __future__ import annotations

import argparse
import math

import pytest
from scaleprobe.kernels import example
from scaleprobe.kernels.comm import add_comm_arguments
from scaleprobe.kernels.harness import (
    Arguments,
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
    declaration_from_parser,
)
from scaleprobe.kernels.schema import SUMMARY_UNITS, LinkConfig, Record, RecordError


@pytest.mark.parametrize(
    ("parameter", "value", "problem"),
    [
        (Parameter("iterations", "int", 20, minimum=1), 20, ""),
        (
            Parameter("iterations", "int", 20, minimum=1),
            -5,
            "--iterations must be at least 1, got -5 (an integer >= 1)",
        ),
        (
            Parameter("scale", "int", 14, minimum=1, maximum=40),
            0,
            "--scale must be in [1, 40], got 0 (an integer >= 1 and <= 40)",
        ),
        (
            Parameter(
                "na", "int", None, minimum=100, maximum=2**31, exclusive_maximum=True
            ),
            50,
            "--na must be in [100, 2**31), got 50 (an integer >= 100 and < 2**31)",
        ),
        (Parameter("na", "int", None, minimum=100), None, ""),
        (
            Parameter(
                "damping",
                "float",
                0.85,
                minimum=0,
                maximum=1,
                exclusive_minimum=True,
                exclusive_maximum=True,
            ),
            0.0,
            "--damping must be in (0, 1), got 0.0 (a number > 0 and < 1)",
        ),
        (
            Parameter("shift", "float", None),
            math.nan,
            "--shift must be a finite number, got nan",
        ),
        (
            Parameter("msg_bytes", "size", 64, "bytes", maximum=1024),
            2048,
            "--msg-bytes must be at most 1024, got 2048 (a size in bytes <= 1024)",
        ),
        (
            Parameter("variant", "choice", "a", choices=("a", "b")),
            "c",
            "--variant must be one of a, b, got 'c'",
        ),
        (Parameter("image", "text"), "anything", ""),
    ],
)
def test_a_parameter_names_itself_the_value_and_the_range(parameter, value, problem):
    assert parameter.problem(value) == problem


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda: Parameter("n", "integer"), "kind must be one of"),
        (lambda: Parameter("n", "text", minimum=1), "only numbers have a range"),
        (lambda: Parameter("n", "int", choices=("1",)), "choices go with kind"),
        (lambda: Parameter("n", "choice"), "choices go with kind"),
        (lambda: Parameter("two words", "int"), "must be a word"),
        (lambda: KernelDeclaration("k", "k", min_ranks=0), "min_ranks must be"),
        (
            lambda: KernelDeclaration(
                "k", "k", parameters=(Parameter("n", "int"), Parameter("n", "int"))
            ),
            r"declares \['n'\] twice",
        ),
        (
            lambda: KernelDeclaration(
                "k", "k", metrics=(Metric("x", "s"), Metric("x", "bytes", per="trial"))
            ),
            "declares 'x' in 's' and in 'bytes'",
        ),
    ],
)
def test_a_bad_declaration_is_refused_when_made(declare, message):
    with pytest.raises(ValueError, match=message):
        declare()


def test_the_command_line_is_built_from_the_parameters():
    declared = KernelDeclaration(
        "k",
        "A kernel.",
        parameters=(
            Parameter("msg_bytes", "size", 1 << 20, "bytes", minimum=0),
            Parameter("trials", "bool", False),
            Parameter("class", "choice", "S", choices=("S", "W")),
            Parameter("points", "int", None, minimum=1),
        ),
    )
    args = declared.parse(["--msg-bytes", "64 KiB", "--trials", "--class", "W"])
    assert args.as_dict() == {
        "msg_bytes": 65536,
        "trials": True,
        "class": "W",
        "points": None,
    }
    assert args["class"] == "W"
    assert declared.parse(["--no-trials"]).trials is False
    # the communicator's flags come with an instrumented kernel
    assert declared.build_parser().parse_args(["--ppn", "2"]).ppn == 2
    help_text = declared.build_parser().format_help()
    assert "[a size in bytes >= 0; default 1048576 bytes]" in help_text


def test_the_summary_completes_what_a_kernel_declares():
    declared = KernelDeclaration("k", "k", metrics=(Metric("time", "s", "mine"),))
    names = {m.name for m in declared.metrics}
    # the summary's time is the whole run's when the kernel times a region itself
    assert "total_time" in names
    assert names - {"time", "total_time"} == set(SUMMARY_UNITS) - {"time"}
    assert declared.units["bytes_sent"] == "bytes"
    plain = KernelDeclaration("k", "k", instrumented=False)
    assert plain.metrics == ()


def _declared():
    return KernelDeclaration(
        "k",
        "k",
        metrics=(
            Metric("time", "s", "the region"),
            Metric("time", "s", "one trial", per="trial"),
            Metric("comp_time", "s", "per level", per="level"),
            Metric("frontier", "vertices", "per level", per="level"),
            Metric("count", "1", "per step", per="step"),
        ),
    )


def test_a_record_merges_the_summary_and_describes_every_variable():
    measured = Measurement(
        metrics={"time": 2.0},
        trials=[{"time": 1.0, "profiles": {"level": {"comp_time": [0.5, 0.5]}}}],
        profiles={"step": {"count": [1, 2]}},
        summary={"time": 3.0, "comp_time": 1.5},
        parameters={"class": "U"},
    )
    record = _declared().record(
        measured, link=LinkConfig(), parameters={"class": "S", "n": 1}
    )
    assert record.status == "ok"
    assert record.metrics == {"total_time": 3.0, "comp_time": 1.5, "time": 2.0}
    assert record.units == {
        "time": "s",
        "total_time": "s",
        "comp_time": "s",
        "count": "1",
        # stored beside the point's comp_time: same unit under the store's name
        "comp_time_trial_level": "s",
    }
    assert record.parameters == {"class": "U", "n": 1}
    assert Record.parse(record.to_line()) == record


def test_a_record_refuses_what_the_declaration_does_not_name():
    measured = Measurement(metrics={"time": 1.0, "speed": 3.0})
    with pytest.raises(RecordError, match=r"emitted speed \(per point\)"):
        _declared().record(measured)
    wrong_place = Measurement(metrics={}, profiles={"level": {"count": [1]}})
    with pytest.raises(RecordError, match=r"count \(per level\)"):
        _declared().record(wrong_place)


def test_a_failed_verification_keeps_the_metrics_and_says_why():
    record = _declared().record(Measurement(metrics={"time": 1.0}, reason="wrong"))
    assert (record.status, record.reason, record.metrics) == (
        "invalid",
        "wrong",
        {"time": 1.0},
    )


def test_refusals_are_the_fewest_ranks_then_the_declared_checks():
    def whole(args, ranks, ppn):
        return "" if ranks % ppn == 0 else f"{ranks} ranks are not whole nodes"

    declared = KernelDeclaration("k", "k", min_ranks=2, checks=(whole,))
    args = Arguments()
    assert declared.refusal(args, 1) == "k needs at least 2 ranks, got 1"
    assert declared.refusal(args, 3, ppn=2) == "3 ranks are not whole nodes"
    assert declared.refusal(args, 4, ppn=2) == ""


def test_a_kernel_with_only_a_parser_gets_a_declaration_without_ranges():
    parser = argparse.ArgumentParser(description="Sum sizes.\n\nMore.")
    parser.add_argument("--size", type=int, required=True, help="a size")
    parser.add_argument("--rate", type=float, default=1.5)
    parser.add_argument("--mode", choices=("a", "b"), default="a")
    parser.add_argument("--check", action=argparse.BooleanOptionalAction)
    parser.add_argument("--label")
    add_comm_arguments(parser)  # the launch's flags, not the kernel's parameters
    declared = declaration_from_parser("mylab.sum", parser, min_ranks=2)
    assert declared.summary == "Sum sizes."
    assert declared.min_ranks == 2
    assert [(p.name, p.kind) for p in declared.parameters] == [
        ("size", "int"),
        ("rate", "float"),
        ("mode", "choice"),
        ("check", "bool"),
        ("label", "text"),
    ]
    assert all(p.minimum is p.maximum is None for p in declared.parameters)
    assert declared.metrics == ()


def test_a_bad_value_exits_2_with_one_line_before_mpi(capsys):
    with pytest.raises(SystemExit) as raised:
        example.main(["--repeats", "0"])
    assert raised.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "python -m scaleprobe.kernels.example: error: --repeats must be at least 1, "
        "got 0 (an integer >= 1)"
    )
    with pytest.raises(SystemExit) as raised:
        example.main(["--repeats", "many"])
    assert raised.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.mpi
def test_the_example_kernel_runs_through_the_harness(mpi_run):
    done = mpi_run(
        2,
        "-m",
        "scaleprobe.kernels.example",
        "--values",
        "64",
        "--repeats",
        "3",
        env={
            "SCALEPROBE_LINK": LinkConfig(mode="emulated", core_slots=0).to_env()[
                "SCALEPROBE_LINK"
            ]
        },
    )
    record = Record.parse(done.stdout)
    assert (record.kernel, record.status) == ("example", "ok")
    assert record.metrics["total"] == 1.0 + 2.0  # rank r adds r + 1
    assert len(record.trials) == 3
    assert record.metrics["time"] == sorted(t["time"] for t in record.trials)[1]
    assert record.placement.ranks == 2
    assert sum(record.placement.ranks_per_host) == 2
    assert record.link.mode == "emulated"
    assert record.parameters == {"values": 64, "repeats": 3}
    declared = example.KERNEL.units
    assert all(record.units[name] == declared[name] for name in record.metrics)
    # a vector of 64 doubles crosses between the ranks' emulated nodes
    assert record.metrics["bytes_inter"] > 0
    assert record.mismatch(ranks=2) == ""


@pytest.mark.mpi
def test_too_few_ranks_give_an_invalid_record_with_the_reason(mpi_run):
    record = Record.parse(mpi_run(1, "-m", "scaleprobe.kernels.example").stdout)
    assert record.status == "invalid"
    assert record.reason == "example needs at least 2 ranks, got 1"
    assert record.placement.ranks == 1
    assert record.link is not None
