"""NPB EP, IS and CG without MPI: the generator, and NPB's class S verification values
reproduced serially by the kernels' own functions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scaleprobe.kernels.npb import cg, ep
from scaleprobe.kernels.npb import is_ as integer_sort
from scaleprobe.kernels.npb._random import MULTIPLIER, randlc, skip, stream


def test_stream_is_the_sequential_generator_from_any_start():
    state, expected = 271828183, []
    for _ in range(70_000):  # more than one vectorised block of powers
        state, value = randlc(state)
        expected.append(value)
    np.testing.assert_array_equal(stream(271828183, 70_000, block=1 << 16), expected)
    # a jump lands on the same numbers as walking there
    np.testing.assert_array_equal(stream(skip(271828183, 1000), 5), expected[1000:1005])
    assert all(0 < r < 1 for r in expected[:100])
    assert randlc(1)[0] == MULTIPLIER


def test_stream_writes_into_given_buffers_and_checks_them():
    out = np.full(10, -1.0)
    work = np.zeros(4, dtype=np.uint64)
    drawn = stream(271828183, 7, block=4, out=out, work=work)
    np.testing.assert_array_equal(drawn, stream(271828183, 7))
    assert np.shares_memory(drawn, out)
    assert out[7:].tolist() == [-1.0] * 3  # beyond count untouched
    with pytest.raises(ValueError, match="at least 7 numbers"):
        stream(1, 7, out=np.empty(6))
    with pytest.raises(ValueError, match="1-d float64"):
        stream(1, 3, out=np.empty(3, dtype=np.float32))
    with pytest.raises(ValueError, match="at least 4 integers"):
        stream(1, 7, block=4, work=np.empty(3, dtype=np.uint64))


_PEAK_OF_A_REUSED_CHUNK = """
import tracemalloc
import numpy as np
from scaleprobe.kernels.npb import ep
pairs = ep._CHUNK_BATCHES << ep.BATCH_LOG2
work = ep._Workspace(pairs)
first = work.chunk(ep.SEED, pairs)
tracemalloc.start()
second = work.chunk(ep.SEED, pairs)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
np.testing.assert_array_equal(first, second)
print(peak)
"""


def test_ep_reuses_one_workspace_for_every_chunk():
    # a chunk of 2**16 pairs draws 1 MiB of numbers; in a fresh workspace it peaks
    # at 7.9 MB (its 5.8 MB of arrays and the generator's temporaries), in the
    # reused one at 0.82 MB. Measured in a process of its own: tracemalloc counts
    # every allocation of the process, other threads' too (a full run of the suite
    # once saw 0.27 MB more here).
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _PEAK_OF_A_REUSED_CHUNK],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    pairs = ep._CHUNK_BATCHES << ep.BATCH_LOG2
    assert int(done.stdout) < 2 * pairs * 8
    work = ep._Workspace(pairs)
    held = sum(a.nbytes for a in vars(work).values() if isinstance(a, np.ndarray))
    assert ep._Workspace.footprint(pairs) == held


def test_ep_class_s_matches_npb_verification_values():
    sums = ep.ep_sums(24, 0, 1 << 8)
    sx, sy = sums[0], sums[1]
    assert ep.verify(24, sx, sy) == 1.0
    assert sx == pytest.approx(-3.247834652034740e3, rel=1e-12)
    assert sy == pytest.approx(-6.958407078382297e3, rel=1e-12)
    # the polar method accepts pi/4 of the pairs
    assert sums[2:].sum() / 2**24 == pytest.approx(math.pi / 4, rel=1e-3)
    assert ep.verify(24, sx * (1 + 1e-7), sy) == 0.0
    assert math.isnan(ep.verify(23, sx, sy))


def test_ep_batches_split_over_ranks_add_up():
    whole = ep.ep_sums(18, 0, 4)
    parts = sum(ep.ep_sums(18, first, count) for first, count in [(0, 1), (1, 3)])
    np.testing.assert_allclose(parts, whole, rtol=1e-12)
    with pytest.raises(ValueError, match="outside the 4 batches"):
        ep.ep_sums(18, 3, 2)


def _serial_is(problem_class):
    """IS ranked serially, as NPB's serial code does: passed partial checks."""
    keys_log2, max_log2, _ = integer_sort.CLASSES[problem_class]
    keys = integer_sort.make_keys(problem_class, 0, 1 << keys_log2)
    tests = integer_sort._TESTS[problem_class][0]
    passed = 0
    for iteration in range(1, integer_sort.ITERATIONS + 1):
        keys[iteration] = iteration
        keys[iteration + integer_sort.ITERATIONS] = (1 << max_log2) - iteration
        below = np.cumsum(np.bincount(keys, minlength=1 << max_log2))
        for test, index in enumerate(tests):
            key = int(keys[index])
            if 0 < key < len(keys):
                passed += int(below[key - 1]) == integer_sort.expected_rank(
                    problem_class, test, iteration
                )
    return passed, keys


def test_is_class_s_passes_npb_partial_verification():
    passed, keys = _serial_is("S")
    assert passed == 5 * integer_sort.ITERATIONS
    assert keys.min() >= 0
    assert keys.max() < 2**11
    # a key of the wrong stream would not pass
    assert integer_sort.expected_rank("S", 0, 3) == 3
    assert integer_sort.expected_rank("W", 0, 3) == 1249 + 1
    assert integer_sort.expected_rank("A", 3, 3) == 8288932 - 2
    assert integer_sort.expected_rank("B", 1, 3) == 10244 + 3


def test_is_one_rank_sorter_ranks_every_iteration_in_reused_arrays():
    class OneRank:
        rank, size = 0, 1

    sorter = integer_sort._Sorter(OneRank(), "S")
    keys_log2, _, _ = integer_sort.CLASSES["S"]
    passed, buffers = 0, set()
    for iteration in range(1, integer_sort.ITERATIONS + 1):
        totals = np.asarray(sorter.local_counts(iteration))
        _, ordered = sorter.split(totals)
        received = sorter.receive_buffer(len(ordered))
        received[:] = ordered
        passed += sorter.rank_keys(received, totals, iteration)[0]
        buffers.add((ordered.ctypes.data, received.ctypes.data))
    assert passed == 5 * integer_sort.ITERATIONS
    assert len(buffers) == 1  # the same arrays every iteration
    assert np.all(np.diff(ordered >> sorter.shift) >= 0)  # grouped by bucket
    # more keys than the buffer holds: a larger one, with a margin
    grown = sorter.receive_buffer((1 << keys_log2) + 1)
    assert len(grown) == (1 << keys_log2) + 1
    assert len(sorter.received) > len(grown)


def test_is_buckets_give_every_rank_about_its_share():
    totals = np.bincount(integer_sort.make_keys("S", 0, 1 << 16) >> 2, minlength=512)
    edges = integer_sort._assign_buckets(totals, (1 << 16) // 4, 4)
    assert edges[0] == 0
    assert edges[-1] == 512
    assert np.all(np.diff(edges) >= 0)
    shares = [totals[a:b].sum() for a, b in itertools.pairwise(edges)]
    assert sum(shares) == 1 << 16
    assert max(shares) < 1.2 * (1 << 14)


def test_cg_class_s_matches_npb_zeta():
    na, nonzer, niter, shift, reference = cg.CLASSES["S"]
    matrix = cg.make_matrix(na, nonzer, shift)
    assert abs(matrix - matrix.T).max() < 1e-12 * abs(matrix).max()
    x, zeta = np.ones(na), math.nan

    def alone(vector):
        return vector

    def dot(values):
        return np.asarray(values)

    for _ in range(niter):
        z, rnorm = cg.conjugate_gradient(matrix, x, alone, dot)
        zeta = shift + 1.0 / (x @ z)
        x = z / math.sqrt(z @ z)
    assert abs(zeta - reference) / reference <= cg.EPSILON
    assert rnorm < 1e-10


def test_cg_serial_reference_gives_npbs_zeta_of_class_w():
    na, nonzer, niter, shift, reference = cg.CLASSES["W"]
    zeta = cg.reference_zeta(cg.make_matrix(na, nonzer, shift), niter, shift)
    assert abs(zeta - reference) / reference <= 1e-12


def _power_method(matrix, niter, shift, gather):
    x, zeta = np.ones(matrix.shape[0]), math.nan
    for _ in range(niter):
        z, _ = cg.conjugate_gradient(matrix, x, gather, np.asarray)
        zeta = shift + 1.0 / (x @ z)
        x = z / math.sqrt(z @ z)
    return zeta


def test_cg_serial_reference_tells_a_misplaced_part_of_the_gathered_vector():
    # a problem of one's own (class U): the kernel's power method agrees with the
    # reference to round-off; a gather that puts the last rank's 10 entries in the
    # wrong order (what wrong Allgatherv displacements would do) does not
    matrix = cg.make_matrix(2000, 7, 12.0)
    reference = cg.reference_zeta(matrix, 5, 12.0)

    def whole(part):
        return part

    def misplaced(part):
        return np.concatenate([part[:-10], part[-10:][::-1]])

    right = _power_method(matrix, 5, 12.0, whole)
    wrong = _power_method(matrix, 5, 12.0, misplaced)
    assert abs(right - reference) / reference <= cg.EPSILON
    assert abs(wrong - reference) / reference > 1e3 * cg.EPSILON


def test_cg_serial_reference_is_nan_where_the_solves_fail():
    assert math.isnan(cg.reference_zeta(sp.csr_matrix((200, 200)), 3, 1.0))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--na", "50"], "--na must be in [100, 2**31), got 50"),
        (["--na", "500", "--nonzer", "500"], "--nonzer must be at least 1 and below"),
        (["--niter", "0"], "--niter must be at least 1, got 0"),
        (["--shift", "nan"], "--shift must be a finite number, got nan"),
    ],
)
def test_cg_problem_of_ones_own_refuses_what_npb_cannot_build(argv, message, capsys):
    with pytest.raises(SystemExit) as raised:
        cg.main(argv)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err
