"""FiM-Cal known answers: hardware laws of known coefficients are recovered and a
large data set at many processes is predicted from small ones at 1, 2, 4."""

from __future__ import annotations

import numpy as np
import pytest
from scaleprobe.models import ScaleprobeWarning
from scaleprobe.models.fim.cal import FiMCal
from scaleprobe.models.fim.markov import calculation_time

F = 2e9


def _training(cycles_per_point=80.0, overhead=1e6):
    sizes = np.repeat([1e5, 2e5, 4e5], 3)
    procs = np.tile([1, 2, 4], 3)
    total = overhead + cycles_per_point * sizes
    hardware = np.column_stack([np.full(9, 0.7), total, 0.1 * total])
    seconds = np.array(
        [
            calculation_time(0.7, c, 0.1 * c, F, int(t))
            for c, t in zip(total, procs, strict=True)
        ]
    )
    return np.column_stack([sizes, procs]), seconds, hardware


def test_recovers_the_hardware_law_and_extrapolates():
    X, y, hardware = _training()
    model = FiMCal(frequency=F).fit(X, y, hardware=hardware)
    np.testing.assert_allclose(model.coef_[1], [1e6, 80.0], rtol=1e-8)
    assert model.alpha_ == pytest.approx(1.0, abs=1e-5)
    big = np.array([[1e7, 8], [1e7, 32]])
    expected = (1e6 + 80.0 * 1e7) / F / big[:, 1]
    np.testing.assert_allclose(model.predict(big), expected, rtol=1e-5)
    np.testing.assert_allclose(model.predict_hardware(big)[:, 1], 1e6 + 8e8, rtol=1e-6)


@pytest.mark.parametrize("alpha", ["optimize", "published"])
def test_alpha_corrects_a_biased_counter(alpha):
    X, y, hardware = _training()
    hardware = hardware * [1.0, 0.8, 0.8]  # counters that miss a fifth of the cycles
    model = FiMCal(frequency=F, alpha=alpha, epsilon=1e-4).fit(X, y, hardware=hardware)
    assert model.alpha_ == pytest.approx(1.25, rel=0.02)
    np.testing.assert_allclose(model.predict(X), y, rtol=0.02)


def test_without_counters_tc_comes_from_cpu_time():
    X, y, _ = _training()
    model = FiMCal(frequency=F).fit(X, y)
    np.testing.assert_allclose(model.predict(X), y, rtol=1e-4)


def test_synchronized_variant_predicts_slower_than_published():
    X, y, hardware = _training()
    published = FiMCal(frequency=F).fit(X, y, hardware=hardware)
    synced = FiMCal(frequency=F, variant="synchronized", alpha="published", tau=10.0)
    synced.fit(X, y, hardware=hardware)
    big = np.array([[1e6, 16]])
    assert synced.predict(big)[0] > published.predict(big)[0]


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"variant": "x"}, "variant"),
        ({"alpha": 0}, "alpha"),
        ({"frequency": 0}, "freq"),
    ],
)
def test_bad_parameters(params, match):
    X, y, _ = _training()
    with pytest.raises(ValueError, match=match):
        FiMCal(**params).fit(X, y)


def test_bad_hardware_and_counts():
    X, y, _ = _training()
    with pytest.raises(ValueError, match="hardware must have shape"):
        FiMCal().fit(X, y, hardware=np.ones((9, 2)))
    with pytest.raises(ValueError, match="process count"):
        FiMCal().fit(X * [1, 0], y)


def test_published_algorithm_warns_when_it_cannot_reach_tau():
    X, y, hardware = _training()
    noisy = y * np.tile([1.0, 1.5, 0.7], 3)
    with pytest.warns(ScaleprobeWarning, match="Algorithm 1"):
        FiMCal(frequency=F, alpha="published").fit(X, noisy, hardware=hardware)


def _growing(exponent=1.2):
    """Cycles growing faster than the size (a cost per unit that rises with it)."""
    sizes = np.repeat([1e5, 4e5, 1.6e6], 3)
    procs = np.tile([1, 2, 4], 3)
    total = 50.0 * sizes**exponent
    hardware = np.column_stack([np.full(9, 0.7), total, np.zeros(9)])
    pairs = zip(total, procs, strict=True)
    seconds = np.array([calculation_time(0.7, c, 0.0, F, int(t)) for c, t in pairs])
    return np.column_stack([sizes, procs]), seconds, hardware


def test_a_cost_per_unit_growing_with_size_is_extrapolated_as_a_power():
    X, y, hardware = _growing()
    big = np.array([[2.56e7, 1], [2.56e7, 32]])
    truth = 50.0 * 2.56e7**1.2
    model = FiMCal(frequency=F).fit(X, y, hardware=hardware)
    assert model.forms_ == ("power", "power", "linear")  # SC = 0 stays linear
    assert model.size_errors_["power"] < 1e-6 < model.size_errors_["linear"]
    np.testing.assert_allclose(model.predict_hardware(big)[:, 1], truth, rtol=1e-4)
    np.testing.assert_allclose(model.predict(big), truth / F / big[:, 1], rtol=1e-3)
    # Eq. 11 as published carries the cycles per unit of the training sizes on
    published = FiMCal(frequency=F, size_law="linear").fit(X, y, hardware=hardware)
    assert published.forms_ == ("linear",) * 3
    assert published.predict_hardware(big)[0, 1] < 0.7 * truth


def test_a_linear_cost_keeps_the_published_form():
    X, y, hardware = _training()
    model = FiMCal(frequency=F).fit(X, y, hardware=hardware)
    assert model.forms_ == ("linear",) * 3
    assert model.size_errors_["linear"] < model.size_errors_["power"]


def test_a_power_law_falling_per_unit_is_not_taken():
    # cycles of exactly 50 * size**0.9: the power law predicts the held-out size
    # without error, but it has the cycles per unit fall without bound
    X, y, hardware = _growing(exponent=0.9)
    model = FiMCal(frequency=F).fit(X, y, hardware=hardware)
    assert model.size_errors_["power"] < 1e-6 < model.size_errors_["linear"]
    assert model.size_degrees_[(0,)] == pytest.approx(0.9, abs=1e-9)
    assert model.forms_ == ("linear",) * 3
    # a degree of 1.2 (the test above) passes the same check
    grow = FiMCal(frequency=F).fit(*_growing()[:2], hardware=_growing()[2])
    assert grow.size_degrees_[(0,)] == pytest.approx(1.2, abs=1e-9)


# NPB IS's cycles of all ranks (medians of three runs) at 2**16, 2**20, 2**23 keys on
# 1, 2 and 4 ranks, as measured on a 2-core host with a 32 MiB cache
_IS_CYCLES = [
    [2.252067e7, 5.670007e8, 9.396883e9],
    [3.370165e7, 4.967750e8, 7.893479e9],
    [5.073342e7, 5.093164e8, 6.131378e9],
]


def test_a_linear_law_below_zero_at_a_training_size_is_not_taken():
    # the linear law predicts the held-out 2**23 keys a little better (0.611 against
    # 0.631), but through every point its intercept is -2.4e8 cycles: 2**16 keys
    # would cost less than nothing, and the power law (degree 1.11) is taken
    total = np.array(_IS_CYCLES).ravel()
    sizes = np.tile([2.0**16, 2.0**20, 2.0**23], 3)
    procs = np.repeat([1, 2, 4], 3)
    hardware = np.column_stack([1 - 1 / total, total, np.zeros(9)])
    pairs = zip(total, procs, strict=True)
    seconds = np.array(
        [calculation_time(1 - 1 / c, c, 0.0, F, int(t)) for c, t in pairs]
    )
    X = np.column_stack([sizes, procs])
    model = FiMCal(frequency=F).fit(X, seconds, hardware=hardware)
    assert model.size_errors_["linear"] < model.size_errors_["power"]
    assert model.size_degrees_[(0,)] == pytest.approx(1.11, abs=0.01)
    assert model.forms_[1] == "power"
    assert np.all(model.predict_hardware(X)[:, 1] > 0)
    published = FiMCal(frequency=F, size_law="linear").fit(
        X, seconds, hardware=hardware
    )
    assert published.coef_[1, 0] < -total.min()
    assert published.coef_[1] @ [1.0, 2.0**16] < 0


# K-means' cycles per iteration (millions) at 16K, 32K, 64K points on 1, 2, 4 ranks,
# three runs each, and at 2M points on 1 rank, as measured on a 2-core host without
# counters (every rank computing alone)
_KMEANS_CYCLES = [
    [[23.00, 23.33, 23.96], [24.21, 22.68, 24.91], [25.33, 27.78, 26.70]],
    [[44.74, 46.33, 47.06], [42.64, 41.89, 44.19], [48.51, 49.36, 50.54]],
    [[86.42, 83.77, 83.84], [86.62, 90.76, 81.03], [88.79, 107.8, 87.01]],
]
_KMEANS_LARGE = 2**21, 2483.0


def test_kmeans_cycles_per_point_falling_keep_the_linear_law():
    total = np.array(_KMEANS_CYCLES).ravel() * 1e6
    sizes = np.repeat([2.0**14, 2.0**15, 2.0**16], 9)
    procs = np.tile(np.repeat([1, 2, 4], 3), 3)
    hardware = np.column_stack([1 - 1 / total, total, np.zeros(27)])
    pairs = zip(total, procs, strict=True)
    seconds = np.array(
        [calculation_time(1 - 1 / c, c, 0.0, F, int(t)) for c, t in pairs]
    )
    X = np.column_stack([sizes, procs])
    big = np.array([[_KMEANS_LARGE[0], 1]])
    measured = _KMEANS_LARGE[1] * 1e6
    model = FiMCal(frequency=F, process_law="constant")
    model.fit(X, seconds, hardware=hardware)
    # the power law wins the hold-out at 64K points, with a degree below 1
    assert model.size_errors_["power"] < model.size_errors_["linear"]
    assert model.size_degrees_[(0,)] < 1.0
    assert model.forms_[1] == "linear"
    linear = model.predict_hardware(big)[0, 1]
    power = FiMCal(frequency=F, process_law="constant", size_law="power")
    power = power.fit(X, seconds, hardware=hardware).predict_hardware(big)[0, 1]
    assert abs(linear / measured - 1) < abs(power / measured - 1)
    assert abs(linear / measured - 1) < 0.1


def test_two_sizes_cannot_check_the_form():
    X, y, hardware = _growing()
    two = X[:, 0] < 1e6
    model = FiMCal(frequency=F).fit(X[two], y[two], hardware=hardware[two])
    assert model.forms_ == ("linear",) * 3
    assert model.size_errors_ == {}
    with pytest.raises(ValueError, match="size_law"):
        FiMCal(size_law="quadratic").fit(X, y)


def test_synchronized_variant_without_counters():
    # U = 1 - 1/TC, derived from CPU time, exceeds what one process's share of the
    # cycles allows (Eq. 2); the variant must take the largest U the share allows
    X, y, _ = _training()
    model = FiMCal(frequency=F, variant="synchronized").fit(X, y)
    published = FiMCal(frequency=F).fit(X, y)
    big = np.array([[1e6, 16]])
    assert np.isfinite(model.predict(big)).all()
    assert model.predict(big)[0] > published.predict(big)[0]


def test_parameters_that_grow_together_keep_the_one_that_extrapolates():
    # NPB CG's per-iteration cycles on 1, 2, 4 ranks for classes S, W, A (order
    # na, nonzeros nnz), as measured on a 2-core host without counters
    na = np.repeat([1400.0, 7000.0, 14000.0], 3)
    nnz = np.repeat([78148.0, 508402.0, 1853104.0], 3)
    procs = np.tile([1, 2, 4], 3)
    total = np.array([1.571, 3.056, 7.056, 5.586, 8.207, 13.05, 18.18, 20.27, 27.79])
    total = total * 1e7
    hardware = np.column_stack([1 - 1 / total, total, np.zeros(9)])
    pairs = zip(total, procs, strict=True)
    seconds = np.array(
        [calculation_time(1 - 1 / c, c, 0.0, F, int(t)) for c, t in pairs]
    )
    X = np.column_stack([na, nnz, procs])
    class_b = np.array([[75000.0, 13708072.0, 1]])
    # what the training sizes say a nonzero costs, carried to class B
    per_nonzero = total / nnz
    low, high = per_nonzero.min() * 13708072.0, per_nonzero.max() * 13708072.0
    # Eq. 11 pooled over the process counts, as published (the process law is
    # tested on its own)
    model = FiMCal(frequency=F, process_law="constant")
    model.fit(X, seconds, hardware=hardware)
    assert model.kept_ == (1,)  # the nonzeros alone
    assert model.forms_[1] == "linear"
    assert model.coef_[1, 1] == 0.0
    regressed = model.coef_[1] @ [1.0, *class_b[0, :2]]  # Eq. 11, before alpha
    assert low < regressed < high
    # two sizes cannot determine a law on both: it is not checked, nor taken
    assert all(kept != (0, 1) for kept, _ in model.subset_errors_)
    assert model.size_errors_ == {}
    # a law on both, fitted through the three sizes, extrapolates with exponents of
    # opposite signs (na**-0.68 nnz**1.10) to 46 % of what a nonzero costs
    both = FiMCal(frequency=F, size_law="power").fit(X, seconds, hardware=hardware)
    exponents = both.coef_[1, 1:]
    assert exponents[0] < 0 < exponents[1]
    assert np.exp(both.coef_[1] @ [1.0, *np.log(class_b[0, :2])]) < 0.6 * low


def _two_classes(law):
    """Two sizes whose order and nonzeros grow together (NPB CG's classes S and W)
    on 1, 2, 4 processes, the cycles ``law(na, nnz)``; and class A's size."""
    na = np.repeat([1400.0, 7000.0], 3)
    nnz = np.repeat([78148.0, 508402.0], 3)
    procs = np.tile([1, 2, 4], 2)
    total = law(na, nnz)
    hardware = np.column_stack([1 - 1 / total, total, np.zeros(6)])
    pairs = zip(total, procs, strict=True)
    seconds = np.array(
        [calculation_time(1 - 1 / c, c, 0.0, F, int(t)) for c, t in pairs]
    )
    return np.column_stack([na, nnz, procs]), seconds, hardware


def _through_two(values, total, at):
    """The line through two sizes' cycles, at ``at``."""
    (low, high), (c_low, c_high) = np.unique(values), np.unique(total)
    return c_low + (c_high - c_low) * (at - low) / (high - low)


@pytest.mark.parametrize("truth", ["nnz", "na"])
def test_two_sizes_that_grow_together_regress_on_one_and_span_the_other(truth):
    # two sizes fix one coefficient between the order and the nonzeros: least
    # squares on both traded one against the other and put class A at 1.6 % of
    # its cycles; FiM-Cal regresses on the one that grows most (nnz) and its
    # range spans the law on the other
    def law(na, nnz):
        return 2e6 + (80.0 * nnz if truth == "nnz" else 6000.0 * na)

    X, y, hardware = _two_classes(law)
    model = FiMCal(frequency=F, process_law="constant", parameter_names=("na", "nnz"))
    with pytest.warns(ScaleprobeWarning, match="cannot tell .* in nnz from .* in na"):
        model.fit(X, y, hardware=hardware)
    assert model.kept_ == (1,)
    assert model.size_alternatives_ == ((0,),)
    assert model.size_note().startswith(" on nnz, which the sizes cannot tell from na")
    class_a = np.array([[14000.0, 1853104.0, 1]])
    cycles = model.predict_hardware(class_a)[0, 1]
    on_nnz = _through_two(X[:, 1], hardware[:, 1], 1853104.0)
    on_na = _through_two(X[:, 0], hardware[:, 1], 14000.0)
    assert cycles == pytest.approx(on_nnz, rel=1e-4)
    low, high = model.predict_range(class_a, cycles=True)
    assert low[0] <= min(on_na, on_nnz) * (1 + 1e-4)
    assert high[0] >= max(on_na, on_nnz) * (1 - 1e-4)
    measured = law(14000.0, 1853104.0)
    assert low[0] * (1 - 1e-4) <= measured <= high[0] * (1 + 1e-4)
    if truth == "nnz":
        assert cycles == pytest.approx(measured, rel=1e-4)


def test_sizes_that_determine_every_parameter_have_no_alternatives():
    X, y, hardware = _training()
    model = FiMCal(frequency=F).fit(X, y, hardware=hardware)
    assert model.size_alternatives_ == ()
    assert model.size_note() == ""
    assert all(state["alternatives"] == [] for state in model.law_fits_.values())


def test_a_frames_columns_name_the_parameters_the_sizes_cannot_tell_apart():
    import pandas as pd

    X, y, hardware = _two_classes(lambda na, nnz: 2e6 + 80.0 * nnz)
    frame = pd.DataFrame(X, columns=["order", "nonzeros", "ranks"])
    with pytest.warns(ScaleprobeWarning, match="in nonzeros from cycles in order"):
        FiMCal(frequency=F).fit(frame, y, hardware=hardware)
    with pytest.warns(ScaleprobeWarning, match="in x1 from cycles in x0"):
        FiMCal(frequency=F).fit(X, y, hardware=hardware)
