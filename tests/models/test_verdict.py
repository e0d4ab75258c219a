"""The model to trust is chosen in one place; its verdict is what everyone prints."""

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    ScalingLaw,
    Verdict,
    choose_model,
    default_cv,
    fit_ensemble,
    load_models,
    render_verdict,
    save_models,
)
from scaleprobe.models.selection.rules import RELIABLE_SMAPE


def _frame(nodes, runs=3, bandwidth=None):
    rows = [(n, r) for n in nodes for r in range(runs)]
    X = pd.DataFrame(rows, columns=["nodes", "run"], dtype=float)
    X.insert(1, "ppn", 1.0)
    X.insert(2, "ranks", X["nodes"])
    if bandwidth is not None:
        X = pd.concat([X.assign(bandwidth=b) for b in bandwidth], ignore_index=True)
    return X


def _times(X, law, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return law(X) * np.exp(noise * rng.standard_normal(len(X)))


def _law(X):
    """Eq. 6 of Medya et al. 2017: the bandwidth slows the communication term."""
    return 8 / X["nodes"] + 0.5 * 1.5 ** (100 / X["bandwidth"]) / np.sqrt(X["nodes"])


@pytest.fixture(scope="module")
def fit():
    X = _frame([2, 3, 4, 6, 8, 12], bandwidth=[100.0, 25.0])
    y = _times(X, _law)
    models = {
        "law": ScalingLaw(form="refined"),
        "blind": ScalingLaw(form="base"),  # bandwidth varies: it cannot be right
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_ensemble((X, y), models=models)


def test_the_verdict_names_the_trusted_model_the_refused_and_the_scores(fit):
    verdict = fit.verdict
    assert isinstance(verdict, Verdict)
    assert verdict.trusted == fit.selected == "law"
    assert verdict.cv == "extrapolation"
    assert ("blind", "ignores bandwidth, which varies") in verdict.refused
    assert set(verdict.scores) == {"law", "blind", "baseline"}
    assert verdict.scores["law"] < RELIABLE_SMAPE
    table = fit.summary.set_index(["model", "cv"])["smape"]
    assert verdict.scores["law"] == table[("law", "extrapolation")]
    assert f"SMAPE {verdict.scores['law']:.1f} %" in verdict.reason
    # the fit's notes hold the verdict's lines, in its order
    assert "blind is not selected: ignores bandwidth, which varies" in fit.notes
    assert [n for n in fit.notes if n in verdict.lines()] == verdict.lines()


def test_nobody_changes_a_verdict(fit):
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.verdict.trusted = "blind"
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.verdict = Verdict("blind", "changed afterwards")


def test_the_one_decision_gives_the_fits_verdict_again(fit):
    X = _frame([2, 3, 4, 6, 8, 12], bandwidth=[100.0, 25.0])
    y = _times(X, _law)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = choose_model(
            fit.models,
            fit.scores,
            X,
            np.asarray(y, dtype=float),
            training=fit.training,
            splitters=default_cv("nodes"),
        )
    assert again.trusted == fit.verdict.trusted
    assert again.refused == fit.verdict.refused
    assert again.plausible == fit.verdict.plausible
    assert again.reason == fit.verdict.reason


def test_what_is_printed_is_the_verdict_rendered(fit):
    text = render_verdict(fit.verdict)
    lines = text.splitlines()
    assert lines[0] == "trusted: law"
    assert lines[1] == fit.verdict.reason
    assert lines[2].startswith("SMAPE (%) on extrapolation: law ")
    assert "not trusted:\n  blind: ignores bandwidth, which varies" in text
    assert text in fit.describe()
    none = render_verdict(Verdict(None, "no model extrapolates within 50 % SMAPE"))
    assert none.splitlines()[0] == "trusted: none"


def test_a_model_file_keeps_the_verdict_whole(fit, tmp_path):
    path = save_models(tmp_path / "models.json", fit)
    loaded = load_models(path)
    assert loaded.verdict.trusted == fit.verdict.trusted
    assert loaded.verdict.refused == fit.verdict.refused
    assert loaded.verdict.notes == fit.verdict.notes
    assert loaded.verdict.plausible == fit.verdict.plausible
    assert loaded.verdict.scores == pytest.approx(fit.verdict.scores)
    assert render_verdict(loaded.verdict) == render_verdict(fit.verdict)


def test_a_model_that_is_no_performance_model_is_refused():
    from sklearn.linear_model import LinearRegression

    X = _frame([2, 4, 8])
    with pytest.raises(TypeError, match="'lr' \\(LinearRegression\\) is not a Perf"):
        fit_ensemble((X, np.ones(len(X))), models={"lr": LinearRegression()})


def _scores(smape_by_fold):
    """Scores of the extrapolation cross-validation: ``{model: [fold 0, fold 1]}``
    SMAPE (fold 0 holds out the largest count)."""
    import xarray as xr

    names = list(smape_by_fold)
    values = np.array([[[smape_by_fold[n]]] for n in names], dtype=float)
    return xr.Dataset(
        {"smape": (("model", "cv", "group", "fold"), values)},
        coords={
            "model": names,
            "cv": ["extrapolation"],
            "group": ["all"],
            "fold": [0, 1],
        },
    )


def _judge(smape_by_fold):
    from scaleprobe.models import PowerLawBaseline

    X = _frame([2, 4, 8, 16, 32])
    y = _times(X, lambda X: 10 / X["nodes"] + 1)
    models = {
        "pmnf": ScalingLaw(form="base").fit(X, y),
        "baseline": PowerLawBaseline().fit(X, y),
    }
    training = {"column": "nodes", "feature_ranges": {"nodes": [2, 32]}, "ppn": [1]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        verdict = choose_model(
            models,
            _scores(smape_by_fold),
            X,
            y,
            training=training,
            splitters=default_cv("nodes"),
        )
    return verdict, caught


def test_a_law_within_the_limit_is_not_refused_for_an_unreliable_baseline():
    # the notes once said pmnf did not beat the baseline by 10 %, and the verdict
    # then refused everything for the baseline's 52.5 %
    verdict, _ = _judge({"pmnf": [40.0, 57.8], "baseline": [50.0, 55.0]})
    assert verdict.trusted == "pmnf"
    assert verdict.scores == {"pmnf": pytest.approx(48.9), "baseline": 52.5}
    refused = dict(verdict.refused)
    assert refused["baseline"] == (
        "SMAPE 52.5 % on extrapolation to held-out node counts is above the 50 % limit"
    )
    assert not any("does not beat" in line for line in verdict.lines())


def test_the_naive_trend_that_held_its_own_check_is_a_labelled_fallback():
    verdict, caught = _judge({"pmnf": [70.0, 90.0], "baseline": [6.0, 170.0]})
    assert verdict.trusted == "baseline"
    assert verdict.fallback
    assert "held its own held-out check (SMAPE 6.0 %" in verdict.reason
    assert "(best: pmnf, 80 %" in verdict.reason  # the best of all, as scored
    assert render_verdict(verdict).startswith("trusted: baseline (fallback")
    assert Verdict.from_dict(verdict.to_dict()).fallback
    assert not [w for w in caught if "no model extrapolates" in str(w.message)]


def test_nothing_is_trusted_when_the_trend_missed_its_own_check_too():
    verdict, caught = _judge({"pmnf": [70.0, 90.0], "baseline": [60.0, 150.0]})
    assert verdict.trusted is None
    assert not verdict.fallback
    assert "(best: pmnf, 80 %" in verdict.reason
    assert "missed its own check by 60 %" in verdict.reason
    for name, why in verdict.refused:  # every note agrees: each is above the limit
        assert "above the 50 % limit" in why, (name, why)
    assert any("no model extrapolates" in str(w.message) for w in caught)


def test_when_every_law_is_set_aside_the_trend_is_judged_not_the_folds_blamed():
    # the only law ignores bandwidth, which varies: it is set aside, and the trend
    # (which held the held-out counts) is what is left; the folds were not too few
    X = _frame([2, 3, 4, 6, 8, 12], bandwidth=[100.0, 25.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_ensemble(
            (X, _times(X, _law)), models={"blind": ScalingLaw(form="base")}
        )
    verdict = fit.verdict
    assert verdict.trusted == "baseline"
    assert ("blind", "ignores bandwidth, which varies") in verdict.refused
    assert verdict.scores["baseline"] < RELIABLE_SMAPE
    assert "too few node counts" not in verdict.reason
    assert not [w for w in caught if "too few node counts" in str(w.message)]
