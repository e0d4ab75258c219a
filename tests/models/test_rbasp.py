"""RBASP (Eq. 17 of Bhimani et al. 2019): known answers, training protocol, errors."""

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    RBASP,
    ExtrapolationWarning,
    InsufficientDataWarning,
    fit_ensemble,
    load_models,
    save_models,
)


def _runs(q, sizes, law):
    rows = [(float(p), float(n), float(r)) for p in q for n in sizes for r in (0, 1)]
    X = pd.DataFrame(rows, columns=["ranks", "size", "run"])
    return X, law(X)


def _law(X):
    q, n = X["ranks"], X["size"]
    return np.exp2(1.5 + 0.25 * n - 0.9 * q + 0.08 * q**2)


def test_recovers_the_published_form_from_q_1_2_4():
    X, y = _runs([1, 2, 4], [1, 2, 3], _law)
    model = RBASP().fit(X, y)
    assert model.parameters_ == ["size"]  # ranks is q, run a replicate
    np.testing.assert_allclose(
        [model.intercept_, *model.coef_], [1.5, 0.25, -0.9, 0.08], atol=1e-9
    )
    assert model.q_range_ == (1.0, 4.0)
    far = pd.DataFrame({"ranks": [8.0, 16.0], "size": [5.0, 5.0]})
    with pytest.warns(ExtrapolationWarning, match="up to 4 to 16"):
        predicted = model.predict(far)
    np.testing.assert_allclose(predicted, _law(far), rtol=1e-9)


def test_linear_g_cannot_bend_and_says_so_by_its_error():
    X, y = _runs([1, 2, 4], [1, 2], _law)
    linear = RBASP(g="linear").fit(X, y)
    assert linear.coef_.shape == (2,)
    with pytest.warns(ExtrapolationWarning):
        at16 = linear.predict(pd.DataFrame({"ranks": [16.0], "size": [1.0]}))
    truth = _law(pd.DataFrame({"ranks": [16.0], "size": [1.0]})).to_numpy()
    assert abs(at16[0] / truth[0] - 1) > 0.5  # a line in q misses the curvature


def test_arrays_take_q_first():
    q = np.array([1.0, 2.0, 4.0, 1.0, 2.0, 4.0])
    x = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    y = np.exp2(2 - q + 0.1 * q**2 + 3 * x)
    model = RBASP().fit(np.column_stack([q, x]), y)
    assert model.parameters_ == ["x1"]
    np.testing.assert_allclose(model.predict(np.column_stack([q, x])), y, rtol=1e-9)


def test_bad_input_is_refused_clearly():
    X, y = _runs([1, 2, 4], [1], _law)
    with pytest.raises(ValueError, match="g must be one of"):
        RBASP(g="cubic").fit(X, y)
    with pytest.raises(ValueError, match="y must be positive"):
        RBASP().fit(X, -y)
    with pytest.raises(ValueError, match="process-count column 'nodes'"):
        RBASP(over="nodes").fit(X, y)
    model = RBASP().fit(X, y)
    with pytest.raises(ValueError, match="lacks"):
        model.predict(pd.DataFrame({"ranks": [8.0]}))


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_in_the_ensemble_and_a_model_file(tmp_path):
    nodes = [1, 2, 4, 8]
    rows = [(float(n), 1.0, float(n), float(r)) for n in nodes for r in range(3)]
    X = pd.DataFrame(rows, columns=["nodes", "ppn", "ranks", "run"])
    rng = np.random.default_rng(2)
    y = (10 / X["nodes"] + 0.5) * np.exp(0.02 * rng.standard_normal(len(X)))
    fit = fit_ensemble((X, y.to_numpy()), models={"rbasp": RBASP()})
    assert "rbasp" in set(fit.summary["model"])
    loaded = load_models(save_models(tmp_path / "m.json", fit))
    a = fit.project("rbasp", nodes=[16, 32])["time_predicted"].values
    b = loaded.project("rbasp", nodes=[16, 32])["time_predicted"].values
    np.testing.assert_allclose(a, b)


def test_sizes_that_grow_together_regress_on_the_one_that_grows_most():
    # two classes whose order and nonzeros grow together (NPB CG's S and W): least
    # squares on both traded -0.016 per unit of order against 0.0002 per nonzero
    rows = [
        (float(q), na, nnz, float(r))
        for q in (1, 2, 4)
        for na, nnz in ((1400.0, 78148.0), (7000.0, 508402.0))
        for r in (0, 1)
    ]
    X = pd.DataFrame(rows, columns=["ranks", "na", "nnz", "run"])

    def law(frame):
        q = frame["ranks"]
        return np.exp2(-5.0 + 4e-6 * frame["nnz"] - 0.3 * q + 0.02 * q**2)

    with pytest.warns(InsufficientDataWarning, match="law in nnz from one in na"):
        model = RBASP().fit(X, law(X))
    assert model.kept_ == (1,)
    np.testing.assert_allclose(
        [model.intercept_, *model.coef_], [-5.0, 0.0, 4e-6, -0.3, 0.02], atol=1e-9
    )
    class_a = pd.DataFrame({"ranks": [1.0], "na": [14000.0], "nnz": [1853104.0]})
    np.testing.assert_allclose(model.predict(class_a), law(class_a), rtol=1e-6)
