"""K-means and PageRank building blocks, and FiM's hardware parameters from counters
(a recorded ``perf stat`` output) or from CPU time when the machine has none."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scaleprobe.kernels.iterative import hardware
from scaleprobe.kernels.iterative.kmeans import (
    assign,
    kmeans_reference,
    read_image,
    synthetic_image,
)
from scaleprobe.kernels.iterative.pagerank import pagerank_reference, read_graph
from scaleprobe.kernels.iterative.profile import IterationProfile

DATA = Path(__file__).parent / "data"


def test_synthetic_image_is_reproducible_and_clustered():
    pixels = synthetic_image(4096, seed=5, regions=4)
    assert pixels.shape == (4096, 5)
    np.testing.assert_array_equal(pixels, synthetic_image(4096, seed=5, regions=4))
    assert not np.array_equal(pixels, synthetic_image(4096, seed=6, regions=4))
    # positions cover a 64 x 64 grid; colours come from 4 cells plus small noise
    assert sorted(set(np.round(pixels[:, 3] * 64 - 0.5).astype(int))) == list(range(64))
    # Lloyd's iterations never increase the sum of squared distances
    sse = [kmeans_reference(pixels, pixels[:4].copy(), n)[1] for n in (1, 3, 10)]
    assert sse[0] > sse[1] > sse[2] > 0


def test_ppm_and_npy_images_read_the_same_pixels(tmp_path):
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 10
    ppm = tmp_path / "small.ppm"
    ppm.write_bytes(b"P6\n# a comment\n3 2\n255\n" + rgb.tobytes())
    npy = tmp_path / "small.npy"
    np.save(npy, rgb)
    from_ppm, from_npy = read_image(str(ppm)), read_image(str(npy))
    np.testing.assert_allclose(from_ppm, from_npy)
    np.testing.assert_allclose(
        from_ppm[4], [120 / 255, 130 / 255, 140 / 255, 1.5 / 3, 1.5 / 2]
    )
    assert read_image(str(ppm), points=2).shape == (2, 5)
    bad = tmp_path / "ascii.ppm"
    bad.write_bytes(b"P3\n1 1\n255\n0 0 0\n")
    with pytest.raises(ValueError, match="only binary 8-bit PPM"):
        read_image(str(bad))


def test_assignment_sums_do_not_depend_on_the_split():
    pixels = synthetic_image(5000, seed=2)
    centroids = pixels[[0, 1000, 2000, 3000]]
    whole = assign(pixels, centroids)
    parts = assign(pixels[:1234], centroids) + assign(pixels[1234:], centroids)
    np.testing.assert_allclose(parts, whole, rtol=1e-12)
    assert whole[:, 5].sum() == 5000


def test_pagerank_matches_the_google_matrix(tmp_path):
    edges = np.array([[0, 1], [0, 2], [1, 2], [1, 4], [2, 0], [3, 2], [3, 3]])
    text = tmp_path / "graph.txt"
    text.write_text("# source target\n" + "\n".join(f"{a} {b}" for a, b in edges))
    source, target, vertices = read_graph(str(text))
    assert vertices == 5  # vertex 4 has no link at all: it is dangling
    rank = pagerank_reference(source, target, vertices, 200)
    google = np.zeros((vertices, vertices))
    out = np.bincount(source, minlength=vertices)
    for a, b in edges:
        google[b, a] += 1 / out[a]
    google[:, out == 0] = 1 / vertices
    google = 0.85 * google + 0.15 / vertices
    values, vectors = np.linalg.eig(google)
    expected = np.real(vectors[:, np.argmax(np.real(values))])
    np.testing.assert_allclose(rank, expected / expected.sum(), atol=1e-12)
    np.save(tmp_path / "graph.npy", edges)
    assert read_graph(str(tmp_path / "graph.npy"))[2] == 5
    np.save(tmp_path / "bad.npy", np.ones((3, 3)))
    with pytest.raises(ValueError, match="integer pairs"):
        read_graph(str(tmp_path / "bad.npy"))


@pytest.mark.parametrize("name", ["perf_stat_pmu.txt", "perf_stat_pmu.csv"])
def test_counter_path_from_a_perf_stat_output(name):
    events = hardware.parse_perf_stat((DATA / name).read_text())
    assert events["cycles"] == 3_086_400_000
    assert events["task-clock"] == pytest.approx(1.23456)
    params = hardware.hardware_parameters(
        {**events, "wall_time": events.get("wall_time", 1.250812345)}
    )
    assert params["counted"]
    assert params["estimated"] == []
    assert params["frequency"] == pytest.approx(2.5e9)
    assert params["total_cycles"] == 3_086_400_000
    assert params["stall_cycles"] == 1_012_345_678  # the larger of the two ends
    assert params["utilisation"] == pytest.approx(1.23456 / 1.250812345)


@pytest.mark.parametrize("name", ["perf_stat_vm.txt", "perf_stat_vm.csv"])
def test_without_a_pmu_cycles_are_estimated_from_cpu_time(name):
    events = hardware.parse_perf_stat((DATA / name).read_text())
    assert "cycles" not in events
    assert events["task-clock"] > 0
    params = hardware.hardware_parameters(
        {**events, "wall_time": 2.838334894}, frequency=2e9
    )
    assert not params["counted"]
    assert params["estimated"] == ["frequency", "total_cycles"]
    assert params["total_cycles"] == pytest.approx(events["task-clock"] * 2e9)
    assert math.isnan(params["stall_cycles"])
    # user + sys stand in for the task clock when perf printed only those
    human = hardware.parse_perf_stat((DATA / "perf_stat_vm.txt").read_text())
    del human["task-clock"]
    cpu = hardware.hardware_parameters(human, frequency=1e9)["cpu_time"]
    assert cpu == pytest.approx(0.109351 + 0.043921)


def test_counters_of_this_process_and_the_nominal_clock():
    region = hardware.HardwareCounters()
    for _ in range(2):
        region.start()
        sum(i * i for i in range(200_000))
        region.stop()
    events = region.events()
    region.close()
    assert events["cpu_time"] > 0
    assert events["wall_time"] >= events["cpu_time"] * 0.5
    params = hardware.hardware_parameters(events)
    # counted where the machine has a PMU, estimated (and listed) where it has not
    assert params["counted"] == ("cycles" in events)
    assert params["counted"] or "cycles" in region.unavailable
    assert params["total_cycles"] > 0
    assert 0 < params["utilisation"] <= 1
    assert hardware.nominal_frequency() > 1e8
    with pytest.raises(RuntimeError, match="without start"):
        region.stop()


def _cache_tree(root, caches):
    for index, (level, kind, size) in enumerate(caches):
        entry = root / f"index{index}"
        entry.mkdir(parents=True)
        (entry / "level").write_text(f"{level}\n")
        (entry / "type").write_text(f"{kind}\n")
        (entry / "size").write_text(f"{size}\n")
    return str(root)


def test_the_last_level_cache_is_the_highest_data_cache(tmp_path):
    caches = [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "512K")]
    two = _cache_tree(tmp_path / "two", caches)
    assert hardware.last_level_cache(two) == 512 * 2**10
    three = _cache_tree(tmp_path / "three", [*caches, (3, "Unified", "32768K")])
    assert hardware.last_level_cache(three) == 32 * 2**20
    # an instruction cache is no place for data; no cache known is NaN
    odd = _cache_tree(tmp_path / "odd", [(1, "Data", "48K"), (2, "Instruction", "1M")])
    assert hardware.last_level_cache(odd) == 48 * 2**10
    assert math.isnan(hardware.last_level_cache(str(tmp_path / "absent")))
    assert hardware.data_caches(three) == {1: 32 * 2**10, 2: 512 * 2**10, 3: 32 * 2**20}
    assert hardware.data_caches(str(tmp_path / "absent")) == {}


def test_profile_records_the_slowest_and_the_mean_rank_per_iteration():
    class TwoRanks:
        """This rank, and a second whose computation is 3x this one's."""

        core_slots = 0

        def __init__(self):
            self.now = 0.0

        def clock(self):
            return self.now

        def allgather(self, mine):
            return [mine, dict(mine, comp=[3 * c for c in mine["comp"]])]

    comm = TwoRanks()
    profile = IterationProfile(comm, {"bcast": 8}, counters=False)
    for work in (1.0, 2.0):
        profile.next_iteration()
        with profile.compute():
            comm.now += work
        with profile.collective("bcast", jobs=1):
            comm.now += 0.5  # not computation
    result = profile.result()
    metrics = result["metrics"]
    # per iteration: the ranks computed (1, 3) and (2, 6)
    assert result["profile"]["comp_time"] == [3.0, 6.0]
    assert metrics["comp_time_iterations"] == 9.0
    assert metrics["comp_time_iterations_mean"] == 6.0
    assert result["units"]["comp_time_iterations_mean"] == "s"
    assert "mean rank" in result["long_names"]["comp_time_iterations_mean"]


def test_the_profile_reports_fims_columns_and_the_schemas_collectives():
    from scaleprobe.kernels.iterative.profile import iteration_metrics
    from scaleprobe.kernels.schema import FIM_COLUMNS

    names = [m.name for m in iteration_metrics(["bcast"]) if m.per == "point"]
    assert set(FIM_COLUMNS) <= set(names)
    with pytest.raises(ValueError, match=r"kinds \['broadcast'\] are not among"):
        IterationProfile(None, {"broadcast": 8}, counters=False)
