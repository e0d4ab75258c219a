"""CommunicationPredictor: known-answer fits per area, robustness, round trip."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scaleprobe.kernels.comm.pattern import METRICS, CommPattern, place_nodes
from scaleprobe.models import (
    CommunicationPredictor,
    DegenerateFitWarning,
    ExtrapolationWarning,
    fit_ensemble,
    load_models,
    save_models,
)

KIB = 1024

# fresh random patterns fall slightly outside the training ranges; that warning is
# tested on its own below
pytestmark = pytest.mark.filterwarnings(
    "ignore::scaleprobe.models.ExtrapolationWarning"
)


def _metrics(samples, seed):
    """Metrics of random ping-pong-like patterns: real patterns, not invented rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(samples):
        nodes = int(rng.integers(2, 17))
        ppn = int(rng.integers(1, 5))
        ranks = nodes * ppn
        messages = int(rng.integers(1, 5))
        size = float(2 ** rng.integers(7, 25))
        partners = [[] for _ in range(ranks)]
        for _ in range(messages):
            order = rng.permutation(ranks)
            for i in range(0, ranks - 1, 2):
                a, b = int(order[i]), int(order[i + 1])
                partners[a].append(b)
                partners[b].append(a)
        placement = place_nodes(
            nodes,
            allocation="random",
            machine_nodes=200,
            seed=int(rng.integers(1 << 30)),
        )
        pattern = CommPattern.from_partners(
            [p or [(r + 1) % ranks] for r, p in enumerate(partners)], size
        )
        rows.append(pattern.metrics(ppn=ppn, placement=placement, switches_per_rack=4))
    return pd.DataFrame(rows, columns=list(METRICS))


def _law(X):
    """A known time per area, linear in the metrics (and one interaction)."""
    ia = 2e-6 + X["PT"] / 4e9
    ib = 5e-6 + X["PT"] / 2e9
    ii = 1e-5 + X["NT"] / 1e9 + X["V"] * X["SWR"] / 1e12
    return np.where(X["NT"] > 128 * KIB, ii, np.where(X["S"] > 4 * KIB, ib, ia))


@pytest.fixture(scope="module")
def data():
    X = _metrics(700, seed=1)
    rng = np.random.default_rng(2)
    y = _law(X) * rng.normal(1.0, 0.01, len(X))
    outliers = rng.random(len(X)) < 0.05
    y = np.where(outliers, 3.0 * y, y)  # OS noise: a few runs three times slower
    return X, y, outliers


@pytest.fixture(scope="module")
def fitted(data):
    X, y, _ = data
    return CommunicationPredictor().fit(X, y)


def test_known_law_recovered_per_area_despite_outliers(fitted):
    model = fitted
    test = _metrics(300, seed=9)
    truth = _law(test)
    error = np.abs(model.predict(test) - truth) / truth
    names = model.area_names(test)
    for area in ("Ia", "Ib", "II"):
        assert (names == area).sum() > 10
        assert np.median(error[names == area]) < 0.02, model.describe()
    assert np.mean(error) < 0.05, model.describe()
    assert "NT" in model.areas_["II"]["terms"]
    assert not any(area["fallback"] for area in model.areas_.values())


def test_robust_fit_beats_least_squares_on_outliers(data, fitted):
    X, y, _ = data
    test = _metrics(200, seed=5)
    truth = _law(test)
    robust = fitted
    # huber_k large: every residual is in the quadratic zone, i.e. least squares
    plain = CommunicationPredictor(huber_k=1e9).fit(X, y)
    err_robust = np.mean(np.abs(robust.predict(test) - truth) / truth)
    err_plain = np.mean(np.abs(plain.predict(test) - truth) / truth)
    assert err_robust < 0.5 * err_plain


def test_pearson_table_ranks_node_traffic_high(fitted):
    model = fitted
    assert set(model.correlations_) == set(METRICS)
    assert model.correlations_["V"] > 0.8
    assert model.correlations_["V"] > abs(model.correlations_["SWR"])


def test_area_assignment_at_the_thresholds():
    X = pd.DataFrame(
        {"S": [4096.0, 4097.0, 100.0, 1e6], "NT": [131072.0, 131072.0, 131073.0, 10.0]}
    )
    model = CommunicationPredictor(min_area_samples=1).fit(X, [1.0, 2.0, 3.0, 4.0])
    assert model.area_names(X).tolist() == ["Ia", "Ib", "II", "Ib"]
    shifted = CommunicationPredictor(
        size_threshold=5000, node_traffic_threshold=2e5, min_area_samples=1
    ).fit(X, [1.0, 2.0, 3.0, 4.0])
    assert shifted.area_names(X).tolist() == ["Ia", "Ia", "Ia", "Ib"]


def test_sparse_area_falls_back_with_a_warning(data):
    X, y, _ = data
    keep = (X["NT"] > 128 * KIB) | (np.arange(len(X)) < 3)
    with pytest.warns(DegenerateFitWarning, match="rows"):
        model = CommunicationPredictor().fit(X[keep], y[keep])
    assert any(area["fallback"] for area in model.areas_.values())


@pytest.mark.filterwarnings("error::scaleprobe.models.ExtrapolationWarning")
def test_warns_beyond_the_trained_metrics():
    X = pd.DataFrame({"S": [1e3, 2e3, 4e3, 8e3], "NT": [1e3, 2e3, 4e3, 8e3]})
    y = 1e-6 + X["NT"] / 1e9
    model = CommunicationPredictor(min_area_samples=1).fit(X, y)
    model.predict(X)  # inside: no warning
    with pytest.warns(ExtrapolationWarning, match="NT"):
        model.predict(pd.DataFrame({"S": [4e3], "NT": [1e5]}))


def test_bad_parameters_and_times():
    X = pd.DataFrame({"S": [1.0, 2.0], "NT": [1.0, 2.0]})
    with pytest.raises(ValueError, match="positive communication times"):
        CommunicationPredictor().fit(X, [1.0, -1.0])
    with pytest.raises(ValueError, match="loss must be"):
        CommunicationPredictor(loss="squared").fit(X, [1.0, 2.0])
    with pytest.raises(ValueError, match="max_terms"):
        CommunicationPredictor(max_terms=0).fit(X, [1.0, 2.0])


@pytest.mark.slow
def test_round_trip_through_fit_ensemble_and_a_model_file(data, tmp_path):
    X, y, _ = data
    frame = X.assign(nodes=X["N"]).iloc[:60]
    light = CommunicationPredictor(max_terms=2, candidates=3)  # the file is tested
    fit = fit_ensemble((frame, y[:60]), models={"comm": light})
    path = tmp_path / "models.json"
    save_models(path, fit)
    loaded = load_models(path).models["comm"]
    test = _metrics(50, seed=11).assign(nodes=lambda f: f["N"])
    assert np.allclose(loaded.predict(test), fit.models["comm"].predict(test))
    assert loaded.describe() == fit.models["comm"].describe()


def test_warns_when_a_row_lies_beyond_its_areas_training_rows():
    """Inside the trained range overall, but beyond what its own area saw."""
    sizes = np.array([128.0, 2048.0, 16384.0, 131072.0] * 6)
    partners = np.repeat([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 4)
    X = pd.DataFrame({"S": sizes, "NT": sizes * partners})
    y = 1e-5 + X["NT"] / 1e9 + X["S"] / 2e8
    model = CommunicationPredictor(min_area_samples=4).fit(X, y)
    assert model.areas_["Ia"]["ranges"]["S"] == [128.0, 2048.0]
    assert "S" in {p for t in model.areas_["Ia"]["terms"] for p in t.split("*")}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        model.predict(X)  # every row inside its area's rows: no warning
    assert not model.beyond_area(X).any()
    # S = 3600 B is inside the overall 128 B..128 KiB, but area Ia (S <= 4 KiB)
    # was trained on 128 B and 2 KiB messages only
    row = pd.DataFrame({"S": [3600.0], "NT": [7200.0]})
    assert model.area_names(row).tolist() == ["Ia"]
    assert model.beyond_area(pd.concat([X.iloc[:1], row])).tolist() == [False, True]
    with pytest.warns(ExtrapolationWarning) as caught:
        model.predict(row)
    texts = [str(w.message) for w in caught]
    assert any(t.startswith("area Ia: S 3600 (trained 128..2048)") for t in texts)
    assert not any("outside the trained range" in t for t in texts)  # overall: inside
