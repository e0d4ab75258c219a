import pytest
import yaml
from scaleprobe.framework.cli import main
from scaleprobe.framework.spec import SpecError, load_spec

GOOD = """
name: pingpong-throttle
kernel: commbench.pingpong
params: {iterations: 50}
sweep:
  nodes: [1, 2, 4]
  ppn: 1
  bandwidth: [100, 50, 25, 10]
  msg_bytes: [65536, 1 MiB]
  run: 3
admissible: power_of_two
order: {shuffle: true, seed: 7}
throttle: {mode: emulated, link_bandwidth: 1 Gbit/s, latency: 5 us}
timeout: 120
output: results/pingpong.zarr
"""


def test_the_contract_spec_loads():
    spec = load_spec(GOOD)
    assert spec.dims == ("nodes", "ppn", "bandwidth", "msg_bytes", "run")
    assert spec.sweep["run"] == (0, 1, 2)
    assert spec.sweep["msg_bytes"] == (65536, 2**20)
    assert spec.kernel_axes == ("msg_bytes",)
    assert spec.throttle.link_bandwidth == pytest.approx(1.25e8)
    assert spec.throttle.latency == pytest.approx(5e-6)
    assert spec.timeout == 120
    assert spec.text == GOOD


def test_defaults_fill_missing_axes():
    spec = load_spec(
        {"name": "x", "kernel": "commbench.compute", "sweep": {"nodes": 2}}
    )
    assert spec.sweep == {"nodes": (2,), "ppn": (1,), "bandwidth": (100,), "run": (0,)}
    assert spec.shuffle is True


def _spec(**changes):
    raw = yaml.safe_load(GOOD)
    for key, value in changes.items():
        target = raw
        *parents, last = key.split(".")
        for p in parents:
            target = target[p]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value
    return raw


_DELETE = object()

BAD = [
    ({"colour": "blue"}, "spec key 'colour': unknown key"),
    ({"kernel": _DELETE}, "spec key 'kernel': is required"),
    ({"kernel": "graph9000"}, "spec key 'kernel': unknown kernel 'graph9000'"),
    ({"kernel": 42}, "spec key 'kernel': must be a kernel name"),
    ({"params": [1, 2]}, "spec key 'params': must be a mapping"),
    ({"sweep": {"ppn": 1}}, "spec key 'sweep.nodes': is required"),
    (
        {"sweep": {"node": [1, 2], "ppn": 1}},
        "spec key 'sweep.nodes': is required (list of int); did you mean it by 'node'?",
    ),
    (
        dict(**{"sweep.nodes": [2, -1]}),
        "spec key 'sweep.nodes': values must be positive integers",
    ),
    (
        dict(**{"sweep.nodes": [0]}),
        "spec key 'sweep.nodes': values must be positive integers",
    ),
    (
        dict(**{"sweep.nodes": []}),
        "spec key 'sweep.nodes': the list of values is empty",
    ),
    (
        dict(**{"sweep.nodes": ["two"]}),
        "spec key 'sweep.nodes': values must be positive integers",
    ),
    (
        dict(**{"sweep.bandwidth": [150]}),
        "spec key 'sweep.bandwidth': values are percent",
    ),
    (
        dict(**{"sweep.msg_bytes": ["1 MiB", "lots"]}),
        "spec key 'sweep.msg_bytes': cannot parse",
    ),
    (
        dict(**{"sweep.run": 0}),
        "spec key 'sweep.run': a repeat count must be at least 1",
    ),
    (dict(**{"sweep.ranks": [4]}), "spec key 'sweep.ranks': is derived"),
    (
        dict(**{"throttle.link_bandwidth": "1 Gbit"}),
        "spec key 'throttle.link_bandwidth': unknown bandwidth unit",
    ),
    (
        dict(**{"throttle.latency": "5 parsecs"}),
        "spec key 'throttle.latency': unknown duration unit",
    ),
    (
        dict(**{"throttle.latency": 5}),
        "spec key 'throttle.latency': 5 needs a unit, e.g. '5 us'",
    ),
    (
        dict(**{"throttle.memory_latency": "0.5"}),
        "spec key 'throttle.memory_latency': 0.5 needs a unit, e.g. '0.5 us'",
    ),
    (
        dict(**{"throttle.link_bandwidth": 1.25e8}),
        "spec key 'throttle.link_bandwidth': 125000000.0 needs a unit, "
        "e.g. '10 Gbit/s'",
    ),
    (dict(**{"throttle.mode": "warp"}), "spec key 'throttle.mode': got 'warp'"),
    (dict(**{"throttle.speed": 3}), "spec key 'throttle.speed': unknown key"),
    (
        {"admissible": "nodes > 100"},
        "spec key 'admissible': rule 'nodes > 100' admits none",
    ),
    ({"admissible": "cores > 2"}, "spec key 'admissible': unknown name 'cores'"),
    ({"timeout": "soon"}, "spec key 'timeout': cannot parse"),
    ({"timeout": 0}, "spec key 'timeout': must be positive"),
    ({"order": {"shuffle": "yes"}}, "spec key 'order.shuffle': must be true or false"),
    (
        {"params": {"msg_bytes": 4}},
        "spec key 'params.msg_bytes': is also a sweep axis",
    ),
    (
        {"max_concurrent_launches": 0},
        "spec key 'max_concurrent_launches': must be a positive integer",
    ),
]


@pytest.mark.parametrize(("changes", "message"), BAD)
def test_bad_specs_give_one_line_errors(changes, message):
    with pytest.raises(SpecError) as info:
        load_spec(_spec(**changes))
    text = str(info.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_unreadable_and_non_mapping_specs(tmp_path):
    with pytest.raises(SpecError, match="cannot read spec file"):
        load_spec(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(bad)
    bad.write_text("- just\n- a list\n")
    with pytest.raises(SpecError, match="a spec is a YAML mapping"):
        load_spec(bad)


@pytest.mark.parametrize(("changes", "message"), BAD[:12])
def test_cli_exits_2_with_one_line(tmp_path, capsys, changes, message):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_spec(**changes)))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("scaleprobe: error: " + message)
    assert len(err.splitlines()) == 1


def test_a_zero_latency_needs_no_unit():
    assert load_spec(_spec(**{"throttle.latency": 0})).throttle.latency == 0.0


def test_external_programs_are_checked_at_load_time(monkeypatch):
    base = {
        "name": "ext",
        "kernel": "external",
        "params": {
            "command": "{mpiexec} -n {ranks} ./bfs {scale} 16",
            "parser": "graph500",
        },
        "sweep": {"nodes": [1, 2], "scale": [10, 12]},
        "throttle": {"mode": "none"},
    }
    assert load_spec(base).kernel_axes == ("scale",)
    with pytest.raises(
        SpecError, match=r"^spec key 'throttle\.mode': an external program cannot"
    ):
        load_spec({**base, "throttle": {"mode": "emulated"}})
    bad = {**base, "params": {"command": "./bfs {scael}", "parser": "graph500"}}
    with pytest.raises(
        SpecError, match=r"^spec key 'params\.command': unknown placeholder \{scael\}"
    ):
        load_spec(bad)
    with pytest.raises(SpecError, match=r"^spec key 'params\.parser'"):
        load_spec({**base, "params": {"command": "./bfs", "parser": "nope"}})
    monkeypatch.setattr("scaleprobe.framework.netns.netns_unavailable", lambda: None)
    assert load_spec({**base, "throttle": {"mode": "netns"}}).throttle.mode == "netns"


def test_a_relative_output_lives_beside_its_spec_file(tmp_path, monkeypatch):
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "spec.yaml").write_text(GOOD)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    spec = load_spec(folder / "spec.yaml")
    assert spec.output == str(folder / "results" / "pingpong.zarr")
    absolute = GOOD.replace("results/pingpong.zarr", str(tmp_path / "abs.zarr"))
    (folder / "abs.yaml").write_text(absolute)
    assert load_spec(folder / "abs.yaml").output == str(tmp_path / "abs.zarr")
    assert load_spec(yaml.safe_load(GOOD)).output == "results/pingpong.zarr"


def test_the_schema_lists_every_key_once_with_its_five_attributes():
    import dataclasses

    from scaleprobe.framework.spec import SPEC_SCHEMA
    from scaleprobe.kernels.schema import Allocation, Topology

    names = [entry.name for entry in SPEC_SCHEMA]
    assert len(names) == len(set(names))
    for entry in SPEC_SCHEMA:
        assert entry.name
        assert entry.type
        assert entry.help.strip()
        assert isinstance(entry.required, bool)
        parent = entry.name.rpartition(".")[0]
        assert not parent or parent in names, entry.name
    # the machine's keys are the schema dataclasses' fields, not a copy that drifts
    for prefix, kind in (
        ("throttle.topology.", Topology),
        ("throttle.allocation.", Allocation),
    ):
        listed = [n[len(prefix) :] for n in names if n.startswith(prefix)]
        assert listed == [field.name for field in dataclasses.fields(kind)]
        for field in dataclasses.fields(kind):
            entry = next(e for e in SPEC_SCHEMA if e.name == prefix + field.name)
            assert entry.default == field.default


def test_the_parser_takes_its_keys_and_defaults_from_the_schema():
    import dask
    from scaleprobe.framework import config
    from scaleprobe.framework.spec import SPEC_SCHEMA

    top = [e.name for e in SPEC_SCHEMA if "." not in e.name]
    with pytest.raises(SpecError) as info:
        load_spec(_spec(colour="blue"))
    assert (
        str(info.value) == f"spec key 'colour': unknown key; allowed: {', '.join(top)}"
    )
    required = [e.name for e in SPEC_SCHEMA if e.required and "." not in e.name]
    assert required == ["name", "kernel", "sweep"]
    for key in required:
        with pytest.raises(SpecError, match=f"^spec key '{key}': is required"):
            load_spec(_spec(**{key: _DELETE}))
    throttle = [
        e.name[9:]
        for e in SPEC_SCHEMA
        if e.name.count(".") == 1 and e.name.startswith("throttle.")
    ]
    with pytest.raises(SpecError, match=f"allowed: {', '.join(throttle)}$"):
        load_spec(_spec(**{"throttle.speed": 3}))
    # a default backed by a setting is the setting's value when the spec is loaded
    timeout = next(e for e in SPEC_SCHEMA if e.name == "timeout")
    assert (timeout.setting, timeout.default) == ("launch.timeout", 600)
    assert timeout.default == config.default("launch.timeout")
    with dask.config.set({"scaleprobe.launch.timeout": 7}):
        assert load_spec(_spec(timeout=_DELETE)).timeout == 7
    seed = next(e for e in SPEC_SCHEMA if e.name == "order.seed")
    assert load_spec(_spec(order={})).seed == seed.default
