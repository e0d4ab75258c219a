"""The harness's ``--threads``: checked, defaulted from the launch, echoed."""

import pytest
from scaleprobe.kernels import example
from scaleprobe.kernels.schema import THREADS_ENV, LinkConfig, Record

LINK = LinkConfig(mode="emulated", core_slots=0).to_env()


@pytest.mark.parametrize("bad", ["0", "two", "-3"])
def test_a_bad_thread_count_exits_2_with_one_line_before_mpi(bad, capsys):
    with pytest.raises(SystemExit) as raised:
        example.main(["--threads", bad])
    assert raised.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "python -m scaleprobe.kernels.example: error: --threads (or "
        f"$SCALEPROBE_THREADS) must be an integer >= 1, got {bad}"
    )


def test_the_environment_gives_the_default(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, "3")
    assert example.KERNEL.build_parser().parse_args([]).threads == "3"
    monkeypatch.delenv(THREADS_ENV)
    assert example.KERNEL.build_parser().parse_args([]).threads == "1"


@pytest.mark.mpi
def test_the_record_echoes_the_threads_the_ranks_ran(mpi_run):
    done = mpi_run(2, "-m", "scaleprobe.kernels.example", "--values", "8", env={**LINK})
    assert Record.parse(done.stdout).threads == 1
    done = mpi_run(
        2,
        "-m",
        "scaleprobe.kernels.example",
        "--values",
        "8",
        env={**LINK, THREADS_ENV: "2"},
    )
    record = Record.parse(done.stdout)
    assert record.threads == 2
    assert "threads" not in record.parameters  # a field of its own, not a parameter
    done = mpi_run(
        2,
        "-m",
        "scaleprobe.kernels.example",
        "--threads",
        "4",
        env={**LINK, THREADS_ENV: "2"},
    )
    assert Record.parse(done.stdout).threads == 4  # the argument wins
