"""Which points a spec may ask for: kernels' minimum ranks, launches that start the
ranks they record, and campaigns of a size that can be planned."""

import pytest
from scaleprobe.framework.planning import below_min_ranks, oversubscription, plan
from scaleprobe.framework.spec import SpecError, load_spec
from scaleprobe.kernels.registry import kernel_min_ranks


def _pingpong(**sweep):
    return load_spec(
        {
            "name": "pp",
            "kernel": "commbench.pingpong",
            "sweep": {"nodes": [1, 2, 4], "ppn": [1, 2], **sweep},
            "order": {"shuffle": False},
        }
    )


def test_the_plan_leaves_out_points_below_the_kernels_minimum_ranks():
    assert kernel_min_ranks("commbench.pingpong") == 2
    assert kernel_min_ranks("commbench.compute") == 1
    spec = _pingpong()
    assert spec.min_ranks == 2
    planned = plan(spec)
    # nodes=1 ppn=1 is one rank: the one pair that cannot ping-pong
    assert [p.coords for p in below_min_ranks(spec)] == [
        {"nodes": 1, "ppn": 1, "bandwidth": 100, "run": 0}
    ]
    assert len(planned) == 5
    assert min(p.ranks for p in planned) == 2
    assert not {p.key for p in planned} & {p.key for p in below_min_ranks(spec)}


def test_a_sweep_with_no_point_big_enough_is_refused():
    with pytest.raises(SpecError) as info:
        _pingpong(nodes=[1], ppn=[1])
    assert str(info.value) == (
        "spec key 'sweep': kernel 'commbench.pingpong' needs at least 2 ranks, and "
        "no point has more than 1 (nodes x ppn); sweep more nodes or ppn"
    )


def _external(command, nodes, mode="none"):
    return {
        "name": "ext",
        "kernel": "external",
        "params": {"command": command, "parser": "json"},
        "sweep": {"nodes": nodes},
        "throttle": {"mode": mode},
    }


def test_an_external_template_must_start_the_points_ranks(monkeypatch):
    with pytest.raises(SpecError) as info:
        load_spec(_external("./program --size 3", [1, 2]))
    text = str(info.value)
    assert text.startswith(
        "spec key 'params.command': './program --size 3' has no {ranks}: it would "
        "not start the point's ranks (a point of 2 ranks would be stored as 2"
    )
    assert "'{mpiexec} -n {ranks} ./program ...'" in text
    # one rank needs no launcher; a system MPI's own launcher may start the ranks
    assert load_spec(_external("cat out.txt", [1])).kernel == "external"
    assert load_spec(_external("mpirun -np {ranks} ./a", [1, 2])).kernel == "external"
    # in netns only scaleprobe's launcher places the ranks in the nodes' namespaces
    monkeypatch.setattr("scaleprobe.framework.netns.netns_unavailable", lambda: None)
    with pytest.raises(
        SpecError, match=r"has no \{mpiexec\}: in throttle mode 'netns'"
    ):
        load_spec(_external("mpirun -np {ranks} ./a", [1, 2], mode="netns"))


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        ({"nodes": [1], "run": 10**12}, "spec key 'sweep.run': at most 1,000,000"),
        (
            {"nodes": list(range(1, 1001)), "run": 1001},
            "spec key 'sweep': 1,001,000 points (the product of the axes' lengths)",
        ),
    ],
)
def test_a_campaign_too_big_to_plan_is_refused_at_once(sweep, message):
    with pytest.raises(
        SpecError, match="^" + message.replace("(", r"\(").replace(")", r"\)")
    ):
        load_spec({"name": "big", "kernel": "commbench.compute", "sweep": sweep})


def test_oversubscription_is_told_in_wall_clock_modes_only():
    def spec(mode):
        return load_spec(
            {
                "name": "o",
                "kernel": "commbench.compute",
                "sweep": {"nodes": [1, 2, 4], "ppn": 2},
                "throttle": {"mode": mode},
            }
        )

    text = oversubscription(spec("none"), plan(spec("none")), cores=4)
    assert text.startswith(
        "1 point in throttle mode 'none' runs up to 8 ranks on a host of 4 cores"
    )
    assert oversubscription(spec("none"), plan(spec("none")), cores=8) is None
    assert oversubscription(spec("emulated"), plan(spec("emulated")), cores=1) is None
