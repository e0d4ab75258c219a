from scaleprobe.framework.planning import plan, point_key
from scaleprobe.framework.spec import load_spec


def _spec(**extra):
    raw = {
        "name": "p",
        "kernel": "commbench.compute",
        "sweep": {
            "nodes": [1, 2, 3, 4, 8],
            "ppn": [1, 2],
            "bandwidth": [100, 50],
            "run": 2,
        },
    }
    raw.update(extra)
    return load_spec(raw)


def test_cartesian_product_filtered_by_rule():
    points = plan(_spec(admissible="square", order={"shuffle": False}))
    ranks = sorted({p.ranks for p in points})
    assert ranks == [1, 4, 16]
    # (1,1), (2,2), (4,1), (8,2) node/ppn pairs x 2 bandwidths x 2 runs
    assert len(points) == 4 * 2 * 2
    assert all(p.coords["nodes"] * p.coords["ppn"] == p.ranks for p in points)


def test_unshuffled_order_is_the_product_order():
    points = plan(_spec(order={"shuffle": False}))
    assert [p.index for p in points] == sorted(p.index for p in points)
    assert len(points) == 5 * 2 * 2 * 2


def test_shuffle_is_seeded_and_complete():
    a = plan(_spec(order={"shuffle": True, "seed": 3}))
    b = plan(_spec(order={"shuffle": True, "seed": 3}))
    c = plan(_spec(order={"shuffle": True, "seed": 4}))
    assert [p.key for p in a] == [p.key for p in b]
    assert [p.key for p in a] != [p.key for p in c]
    assert sorted(p.key for p in a) == sorted(p.key for p in c)
    assert [p.index for p in a] != sorted(p.index for p in a)


def test_done_points_are_left_out_and_keys_are_stable():
    full = plan(_spec())
    done = {p.key for p in full[:7]}
    rest = plan(_spec(), done=done)
    assert len(rest) == len(full) - 7
    assert not done & {p.key for p in rest}
    assert point_key({"nodes": 1, "ppn": 2}) == point_key({"ppn": 2, "nodes": 1})
    assert len({p.key for p in full}) == len(full)


def test_the_package_exports_the_function_plan_beside_its_module():
    import scaleprobe.framework as framework
    import scaleprobe.framework.planning as planning

    assert framework.plan is planning.plan
    assert callable(framework.plan)
    assert framework.Point is planning.Point
