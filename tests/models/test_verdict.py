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
