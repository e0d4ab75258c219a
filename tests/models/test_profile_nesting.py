"""A call path projected above its caller, in a metric whose measurements nest, is
called out: by a warning, in ``project``'s tables and in the report."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _profiles import synthetic_profile
from scaleprobe.models import PhysicalLimitWarning
from scaleprobe.models.profiles import ProfileTable, fit_profile
from scaleprobe.models.profiles.nesting import (
    callers,
    describe,
    marked_exclusive,
    nested_metrics,
)
from scaleprobe.models.profiles.report import write_profile_report
from scaleprobe.models.profiles.summary import render_ranking

#: Inclusive times: the barrier grows as p^2 and, under main at every measured
#: count (0.004 s to 65.5 s against main's 100 to 140 s), passes it between 256 and
#: 512 ranks.
INCLUSIVE = {
    "main": lambda p: 100.0 + 5.0 * np.log2(p),
    "main->solve": lambda p: 90.0 / p + 1.0,
    "main->MPI_Barrier": lambda p: 1e-3 * p**2,
    "main->solve->MPI_Allreduce": lambda p: 0.2 + 0.02 * np.log2(p),
}


@pytest.fixture(scope="module")
def inclusive():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_profile(synthetic_profile(INCLUSIVE, metric="time (inc)"))


def test_the_measurements_tell_a_metric_that_nests(inclusive):
    models = inclusive.models
    pairs = {models[c].callpath: models[p].callpath for c, p in callers(models).items()}
    assert pairs == {
        "main->solve": "main",
        "main->MPI_Barrier": "main",
        "main->solve->MPI_Allreduce": "main->solve",
    }
    assert nested_metrics(models) == {"time (inc)"}


def test_a_child_projected_above_its_caller_is_called_out(inclusive, tmp_path):
    with pytest.warns(PhysicalLimitWarning, match=r"1 call path\(s\) projected above"):
        projection = inclusive.project([512.0, 2048.0, 8192.0])
    (found,) = projection.conflicts()
    assert (found["series"], found["caller"]) == ("main->MPI_Barrier", "main")
    # 1e-3 p^2 passes 100 + 5 log2 p between 256 and 512 ranks: from 512 on
    assert found["at"] == 512.0
    assert found["predicted"] == pytest.approx(1e-3 * 512**2, rel=0.05)
    assert found["caller_predicted"] == pytest.approx(145.0, rel=0.05)
    text = render_ranking(projection)
    assert "cannot both be right (1 call path(s)" in text
    with pytest.warns(PhysicalLimitWarning):
        write_profile_report(inclusive, tmp_path / "report.md")
    assert "main->MPI_Barrier" in (tmp_path / "report.md").read_text()
    # within the measured counts nothing is out of order, and nothing is said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert inclusive.project([64.0, 256.0]).conflicts() == []


def test_a_refused_call_path_far_above_its_caller_is_no_conflict():
    # a call path whose values wander (seeded): no law holds, it is refused, and
    # the law kept for it runs far above main; a refused projection claims
    # nothing, so there is nothing for main's law to contradict
    counts = 2.0 ** np.arange(1, 9)
    values = 10 ** np.random.default_rng(1).uniform(-1, 1.5, counts.size)
    wander = dict(zip(counts, values, strict=True))
    laws = {
        "main": INCLUSIVE["main"],
        "main->solve": INCLUSIVE["main->solve"],
        "main->wild": lambda p: np.vectorize(wander.get)(p),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_profile(synthetic_profile(laws, metric="time (inc)", counts=counts))
    status = {m.name: m.status for m in fit.models}
    assert status == {
        "main": "trusted",
        "main->solve": "trusted",
        "main->wild": "refused",
    }
    assert nested_metrics(fit.models) == {"time (inc)"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PhysicalLimitWarning)
        projection = fit.project([1e4])
    names = [m.name for m in projection.models]
    wild, main = names.index("main->wild"), names.index("main")
    assert projection.predicted[wild, 0] > 100 * projection.predicted[main, 0]
    assert projection.conflicts() == []


def test_an_exclusive_metric_is_not_held_to_the_nesting():
    # exclusive times: main's own time is small, its callees' larger: children
    # above their caller everywhere, so no order is believed and nothing warns
    exclusive = {
        "main": lambda p: 1.0 + 0.0 * p,
        "main->solve": lambda p: 90.0 / p + 5.0,
        "main->MPI_Barrier": lambda p: 2.0 + 1e-3 * p**2,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_profile(synthetic_profile(exclusive, metric="time (exc)"))
    assert nested_metrics(fit.models) == set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PhysicalLimitWarning)
        assert fit.project([8192.0]).conflicts() == []


#: A region and its communication, the only call-path/caller pair: the
#: communication stays under the region at every measured count (0.5-1.05 s
#: against 10-1.1 s on 2-32 ranks) and passes it beyond.
TWO_LEVELS = {
    "r": lambda p: 0.47 + 19.13 / p,
    "r->comm": lambda p: 0.46 * p**0.237,
}


def test_one_pair_within_its_caller_is_held_to_the_order():
    table = synthetic_profile(TWO_LEVELS, counts=2.0 ** np.arange(1, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_profile(table)
    assert nested_metrics(fit.models) == {"time"}
    with pytest.warns(PhysicalLimitWarning, match=r"r->comm .* > r "):
        projection = fit.project([64.0, 1024.0])
    (found,) = projection.conflicts()
    assert (found["series"], found["caller"]) == ("r->comm", "r")


def test_one_pair_of_a_metric_named_exclusive_is_not_held():
    # the same numbers as an exclusive metric: one callee below its caller tells
    # nothing, so the name (or an inclusive twin in the profile) decides
    counts = 2.0 ** np.arange(1, 6)
    rows = [
        (float(p), path, metric, 0, float(law(p)))
        for metric in ("time", "time (inc)", "bytes (exc)")
        for path, law in TWO_LEVELS.items()
        for p in counts
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_profile(ProfileTable.from_rows(["p"], rows, source={"path": "x"}))
    # "time" has its inclusive twin "time (inc)": it is the exclusive one
    assert nested_metrics(fit.models) == {"time (inc)"}
    assert marked_exclusive("time", ["time", "time (inc)"])
    assert marked_exclusive("x", ["x", "inclusive#x"])
    assert not marked_exclusive("time", ["time", "bytes (inc)"])


def test_a_conflict_inside_the_measured_counts_is_not_called_an_extrapolation():
    def found(at):
        return {
            "series": "main->f",
            "caller": "main",
            "predicted": 2.0,
            "caller_predicted": 1.0,
            "at": at,
            "measured": (27.0, 343.0),
        }

    inside = describe([found(100.0)], "ranks")
    assert "inside the measured counts" in inside
    assert "extrapolated" not in inside
    assert "larger count" not in inside
    below = describe([found(8.0)], "ranks")
    assert "measure a smaller count to tell" in below
    assert "larger" not in below
    beyond = describe([found(8000.0)], "ranks")
    assert beyond.endswith("allows (measure a larger count to tell)")
