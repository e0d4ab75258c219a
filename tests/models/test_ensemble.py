"""fit_ensemble: the one fit workflow, honest about what the data can tell."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    DegenerateFitWarning,
    InsufficientDataWarning,
    NoiseWarning,
    PMNFSearch,
    ScalingLaw,
    UnreliableModelWarning,
    fit_ensemble,
)


def _frame(nodes, runs=3, bandwidth=None):
    rows = [(n, r) for n in nodes for r in range(runs)]
    X = pd.DataFrame(rows, columns=["nodes", "run"], dtype=float)
    X.insert(1, "ppn", 1.0)
    X.insert(2, "ranks", X["nodes"])
    if bandwidth is not None:
        X = pd.concat([X.assign(bandwidth=b) for b in bandwidth], ignore_index=True)
    return X


def _times(X, law, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    return law(X) * np.exp(noise * rng.standard_normal(len(X)))


@pytest.mark.parametrize("counts", [3, 4])
def test_three_or_four_node_counts_give_a_projection(counts):
    X = _frame([2, 4, 8, 16][:counts])
    y = _times(X, lambda X: 100 / X["nodes"] + 1)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        fit = fit_ensemble((X, y))
    assert fit.selected is not None
    proj = fit.project(nodes=[32, 1024])
    lower, upper = proj["time_lower"].values, proj["time_upper"].values
    assert np.all(np.isfinite(lower))
    assert np.all(np.isfinite(upper))
    assert np.all(lower <= proj["time_predicted"].values)
    assert np.all(proj["time_predicted"].values <= upper)


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
def test_two_node_counts_cannot_check_extrapolation():
    X = _frame([2, 4])
    y = _times(X, lambda X: 100 / X["nodes"])
    with pytest.warns(InsufficientDataWarning) as caught:
        fit = fit_ensemble((X, y))
    assert any("extrapolation cannot be checked" in str(w.message) for w in caught)
    assert "extrapolation" not in set(fit.summary["cv"])
    assert fit.selected is None
    assert "held-out" in fit.verdict.reason
    # Every law is still fitted and can be projected by name, with an interval.
    proj = fit.project("pmnf", nodes=[8])
    assert np.isfinite(proj["time_upper"].values).all()


@pytest.mark.slow  # fits whole ensembles: half a minute
def test_bandwidth_blind_models_are_not_selected_when_bandwidth_varies():
    X = _frame([2, 3, 4, 6, 8, 12], bandwidth=[100.0, 50.0, 25.0])
    y = _times(
        X,
        lambda X: (
            50 / X["nodes"] + 2 * 1.5 ** (100 / X["bandwidth"]) / np.sqrt(X["nodes"])
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateFitWarning)
        fit = fit_ensemble((X, y))
    assert fit.selected in ("refined", "pmnf")
    assert "base is not selected: ignores bandwidth, which varies" in fit.notes
    slow = fit.project(nodes=[64], bandwidth=[25.0])["time_predicted"].item()
    fast = fit.project(nodes=[64], bandwidth=[100.0])["time_predicted"].item()
    assert slow > fast


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
def test_no_model_within_fifty_percent_is_said_plainly():
    X = _frame([2, 3, 4, 6, 8, 12, 16])
    rng = np.random.default_rng(3)
    level = dict(
        zip([2, 3, 4, 6, 8, 12, 16], np.exp(1.5 * rng.standard_normal(7)), strict=True)
    )
    y = _times(X, lambda X: X["nodes"].map(level))
    with pytest.warns(UnreliableModelWarning, match="no model extrapolates"):
        fit = fit_ensemble((X, y))
    assert fit.selected is None
    assert "cannot tell" in fit.verdict.reason
    with pytest.raises(ValueError, match="no model to project"):
        fit.project(nodes=[64])
    assert "cannot tell" in fit.describe()


@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
def test_a_law_worse_than_the_naive_baseline_gives_way_to_the_trend():
    X = _frame([2, 3, 4, 6, 8, 12])
    y = _times(X, lambda X: 1 + 0.2 * np.log2(X["nodes"]), noise=0.005)
    # One power law without a constant cannot bend like 1 + log p; the local slope
    # of the last two points can.
    power = PMNFSearch(
        parameter="nodes", max_terms=1, constant=False, log_exponents=(0,)
    )
    with pytest.warns(UnreliableModelWarning, match="worse than the naive baseline"):
        fit = fit_ensemble((X, y), models={"power": power})
    assert fit.selected == "baseline"
    assert "naive trend" in fit.verdict.reason
    assert "no latency floor" in fit.verdict.reason
    assert any(n.startswith("power is not selected") for n in fit.notes)
    projected = fit.project(nodes=[24, 48])
    truth = 1 + 0.2 * np.log2([24, 48])
    centre = projected["time_predicted"].values.ravel()
    assert np.all(np.abs(centre / truth - 1) < 0.05)
    centre = centre.reshape(projected["time_lower"].shape)
    assert np.all(projected["time_lower"].values <= centre)
    assert np.all(projected["time_upper"].values >= centre)


@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
def test_a_law_that_beats_the_baseline_by_the_margin_is_trusted():
    X = _frame([2, 3, 4, 6, 8, 12])
    y = _times(X, lambda X: 8 / X["nodes"] + 0.5, noise=0.01)
    # The local slope of the last two points misses the constant; the law has it.
    fit = fit_ensemble((X, y), models={"law": PMNFSearch(parameter="nodes")})
    table = fit.summary.set_index(["model", "cv"])["smape"]
    assert table[("law", "extrapolation")] < 0.9 * table[("baseline", "extrapolation")]
    assert fit.selected == "law"


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.UnreliableModelWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
@pytest.mark.slow
def test_noise_as_large_as_the_bandwidth_effect_warns():
    X = _frame([2, 3, 4, 6], runs=4, bandwidth=[100.0, 25.0])
    y = _times(
        X, lambda X: 10 / X["nodes"] * (1 + 0.01 * (X["bandwidth"] < 50)), noise=0.2
    )
    with pytest.warns(NoiseWarning, match="spread"):
        fit_ensemble((X, y))


@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_a_crossover_at_the_smallest_node_count_warns():
    X = _frame([2, 3, 4, 6, 8])
    y = _times(X, lambda X: 1 / np.sqrt(X["nodes"]), noise=0.01)
    with pytest.warns(DegenerateFitWarning) as caught:
        fit_ensemble((X, y), models={"base": ScalingLaw(form="base")})
    assert any("crossover" in str(w.message) for w in caught)


@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_describe_reads_every_score_against_the_baseline():
    X = _frame([2, 3, 4, 6, 8, 12, 16])
    y = _times(X, lambda X: 100 / X["nodes"] + 2 / np.sqrt(X["nodes"]))
    fit = fit_ensemble((X, y), models={"pmnf": PMNFSearch(parameter="nodes")})
    text = fit.describe()
    assert "baseline" in text
    assert "pmnf" in text
    assert fit.verdict.reason in text
    assert set(fit.score_table()["model"]) == {"pmnf", "baseline"}
    assert fit.training["configurations"] == 7
    assert fit.training["measurements"] == 21


@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.ExtrapolationWarning")
def test_the_interval_holds_every_plausible_alternative():
    X = _frame([2, 3, 4, 6, 8, 12])
    y = _times(X, lambda X: 100 / X["nodes"] + 2 / np.sqrt(X["nodes"]), noise=0.05)
    fit = fit_ensemble((X, y))
    assert fit.selected is not None
    plausible = fit.plausible
    assert plausible, fit.describe()
    nodes = [64, 256, 1024]
    projected = fit.project(nodes=nodes)
    assert projected.attrs["interval_models"].split(", ")[0] == fit.selected
    lower = projected["time_lower"].values.ravel()
    upper = projected["time_upper"].values.ravel()
    for other in plausible:
        alternative = fit.project(other, nodes=nodes)
        centre = alternative["time_predicted"].values.ravel()
        assert np.all(lower <= centre * (1 + 1e-12)), other
        assert np.all(upper >= centre * (1 - 1e-12)), other
    # Projecting a model by name keeps its own interval: the join is the default's.
    assert "interval_models" not in fit.project(plausible[0], nodes=nodes).attrs
