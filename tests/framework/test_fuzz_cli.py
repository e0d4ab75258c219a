"""Fuzzing the command line: specs and argument lists, valid and broken.

The property, for every generated case: the exit code is 0, 1 or 2; a failure is one
line (argparse's usage block aside); no traceback; no hang; nothing written anywhere
but the output's own files. A ``run`` never reaches a cluster here: it is pointed at
a scheduler file that never appears, so valid specs go through every check, take the
output's lock and write its campaign, then stop at the cluster with exit 1.

The CI run tries ``MAX_EXAMPLES`` cases (the README says how many).
"""

import contextlib
import io
import os
import signal
import tempfile

import dask
import pytest
import yaml
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st
from scaleprobe.framework.cli import main

#: Cases the fuzz test tries (README: "Fuzzing").
MAX_EXAMPLES = 120

#: Seconds one command may take before the case counts as a hang.
HANG = 60

_anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.integers(-3, 9), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


def _or_broken(valid):
    return st.one_of(valid, valid, valid, _anything)


_values = st.lists(
    st.one_of(st.integers(-1, 6), st.sampled_from([10**9, 2.5, "2", "1 MiB"])),
    min_size=0,
    max_size=4,
)

_sweep = st.fixed_dictionaries(
    {"nodes": _or_broken(st.one_of(st.integers(1, 4), _values))},
    optional={
        "ppn": _or_broken(st.one_of(st.integers(1, 3), _values)),
        "bandwidth": _or_broken(
            st.lists(st.sampled_from([100, 50, 10, 0, 150, "50"]), max_size=3)
        ),
        "run": _or_broken(st.sampled_from([1, 2, 3, 0, -1, 10**12])),
        "behaviour": _or_broken(st.lists(st.sampled_from(["ok", "crash", "x"]))),
        "msg_bytes": _or_broken(st.lists(st.sampled_from([8, "64 KiB", "1 parsec"]))),
        "ranks": _anything,
        "Bad-Key": _anything,
    },
)

_throttle = st.fixed_dictionaries(
    {},
    optional={
        "mode": _or_broken(st.sampled_from(["none", "emulated", "netns", "warp"])),
        "latency": _or_broken(st.sampled_from(["5 us", 5, "5", "0", "fast", 0])),
        "link_bandwidth": _or_broken(st.sampled_from(["1 Gbit/s", 1e9, "10 Mbps"])),
        "core_slots": _or_broken(st.sampled_from([None, 0, 2, -1])),
        "speed": _anything,
    },
)

_spec = st.fixed_dictionaries(
    {
        "name": _or_broken(st.sampled_from(["fuzz", "a b"])),
        "kernel": _or_broken(
            st.sampled_from(
                [
                    "commbench.fault",
                    "commbench.compute",
                    "commbench.pingpong",
                    "external",
                    "commbench.nosuch",
                    "Bad Kernel",
                ]
            )
        ),
        "sweep": _or_broken(_sweep),
    },
    optional={
        "params": _or_broken(
            st.fixed_dictionaries(
                {},
                optional={
                    "sleep": _or_broken(st.sampled_from([0.0, 0.01, -1])),
                    "behaviour": _or_broken(st.sampled_from(["ok", "hang"])),
                    "iterations": _anything,
                    "command": _or_broken(
                        st.sampled_from(
                            ["{mpiexec} -n {ranks} true", "true {x", "./a {nodes}"]
                        )
                    ),
                    "parser": _or_broken(st.sampled_from(["json", "regex", "xml"])),
                    "ppn": _anything,
                },
            )
        ),
        "throttle": _or_broken(_throttle),
        "admissible": _or_broken(
            st.sampled_from(["any", "power_of_two", "ranks <=", "nodes > 2", "__x__"])
        ),
        "order": _or_broken(
            st.fixed_dictionaries(
                {}, optional={"shuffle": _anything, "seed": _anything}
            )
        ),
        "timeout": _or_broken(st.sampled_from([5, "2 min", 0, "soon", -1])),
        "output": _or_broken(
            st.sampled_from(["out/r.zarr", "out/r.nc", "out/", "spec.yaml", ""])
        ),
        "max_concurrent_launches": _or_broken(st.sampled_from([1, 2, 0])),
        "env": _or_broken(st.dictionaries(st.sampled_from(["A", "B"]), _anything)),
        "unknown_key": _anything,
    },
)

_valid_spec = st.fixed_dictionaries(
    {
        "name": st.just("fuzz"),
        "kernel": st.just("commbench.fault"),
        "params": st.fixed_dictionaries(
            {}, optional={"sleep": st.just(0.0), "behaviour": st.just("ok")}
        ),
        "sweep": st.fixed_dictionaries(
            {"nodes": st.sampled_from([1, [1, 2]])},
            optional={"run": st.integers(1, 3), "ppn": st.just(1)},
        ),
        "throttle": st.sampled_from([{"mode": "none"}, {"mode": "emulated"}]),
        "output": st.sampled_from(["out/r.zarr", "out/r.nc", "r2.zarr"]),
    },
    optional={"timeout": st.sampled_from([5, "2 min"])},
)

_spec_text = st.one_of(
    _valid_spec.map(lambda raw: yaml.safe_dump(raw, sort_keys=False)),
    _valid_spec.map(lambda raw: yaml.safe_dump(raw, sort_keys=False)),
    _spec.map(lambda raw: yaml.safe_dump(raw, sort_keys=False)),
    _spec.map(lambda raw: yaml.safe_dump(raw, sort_keys=False)),
    st.text(max_size=60),
    st.sampled_from(["name: [unclosed\n", "- a\n- list\n", "", "{}\n", "a: &x [*x]\n"]),
)

#: Tokens stand for paths of the case's folder (see ``_argv``).
_path = st.sampled_from(["SPEC", "OUT", "MISSING", "DIR", "FILE", "RESULTS", "STORE"])
_option = st.one_of(
    st.tuples(st.sampled_from(["--output", "--scheduler-file"]), _path),
    st.tuples(
        st.sampled_from(["--workers", "--retry", "--metric", "--nodes", "--target"]),
        st.sampled_from(["0", "-1", "two", "failed,timeout", "ok", "time", "4:8", ""]),
    ),
    # the mistakes of a new user: values without units, ranges that go down,
    # fractions of a node, text as a metric, a figure format not written
    st.tuples(
        st.sampled_from(
            ["--link-bandwidth", "--latency", "--nodes", "--bandwidth", "--metric"]
        ),
        st.sampled_from(
            ["100", "1", "100 Gbit/s", "1 us", "64:16", "2.5", "150", "status"]
        ),
    ),
    st.tuples(st.just("--plot"), st.sampled_from(["x.jpg", "x.png", "OUT"])),
    st.tuples(
        st.sampled_from(["--new-campaign", "--dask-mpi", "--help-me", "--version"])
    ),
    st.tuples(st.text(max_size=8)),
)
_argv = st.tuples(
    st.sampled_from(["run", "plan", "show", "fit", "project", "report", "nope", ""]),
    st.one_of(st.just(None), st.just(None), st.lists(_path, max_size=2)),
    st.lists(_option, max_size=3),
)

#: The argument each command takes when the case does not choose others.
_NATURAL = {
    "run": ["SPEC"],
    "plan": ["SPEC"],
    "show": ["STORE"],
    "fit": ["FILE"],
    "report": ["SPEC"],
    "project": ["MISSING", "--nodes", "4:8"],
}


def _tree(folder: str) -> dict:
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = (
                None if os.path.isdir(path) else os.stat(path).st_mtime_ns
            )
    return out


def _outputs(folder: str, argv: list[str], spec_text: str) -> set[str]:
    """Stems of the outputs this case may write (``--output`` and the spec's)."""
    stems = set()
    candidates = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--output"]
    try:
        raw = yaml.safe_load(spec_text)
        if isinstance(raw, dict) and isinstance(raw.get("output"), str):
            candidates.append(os.path.join(folder, raw["output"]))
        elif isinstance(raw, dict) and isinstance(raw.get("name"), str):
            candidates.append(os.path.join(folder, "results", f"{raw['name']}.zarr"))
    except yaml.YAMLError:
        pass
    for path in candidates:
        path = os.path.abspath(path).rstrip("/")
        root, ext = os.path.splitext(path)
        stems.add(os.path.relpath(root if ext in (".zarr", ".nc") else path, folder))
    return stems


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Results of a small campaign, consolidated, for ``show`` to read."""
    from scaleprobe.framework.store import ResultStore
    from test_store import _campaign, _result

    store = ResultStore(tmp_path_factory.mktemp("fuzz") / "stored.zarr")
    store.lock.acquire()
    store.start(_campaign())
    store.write_point(_result(1, 100))
    store.lock.release()
    store.consolidate()
    return store.path, _tree(os.path.dirname(store.path))


class _HangError(Exception):
    pass


def _alarm(signum, frame):
    raise _HangError


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as stop:  # argparse: --help, --version, bad usage
                code = stop.code if isinstance(stop.code, int) else 2
    except _HangError:
        pytest.fail(f"scaleprobe {argv} ran for more than {HANG} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, err.getvalue()


@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    # A failing case is reported as found: shrinking it can take minutes of CI.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec_text=_spec_text, case=_argv)
# An argument with a line break (U+0085) in it once made argparse's error two lines.
@example(
    spec_text="name: x\n",
    case=("run", None, [("H\x10V\x12\x85G",), ("--output", "FILE"), ("%",)]),
)
@pytest.mark.slow
def test_any_spec_and_argument_list_ends_in_one_line_and_a_known_code(
    stored, spec_text, case
):
    command, paths, options = case
    store, store_tree = stored
    with tempfile.TemporaryDirectory() as folder:
        tokens = {
            "SPEC": os.path.join(folder, "spec.yaml"),
            "OUT": os.path.join(folder, "out", "r.zarr"),
            "MISSING": os.path.join(folder, "missing.json"),
            "DIR": folder,
            "FILE": os.path.join(folder, "afile"),
            "RESULTS": os.path.join(folder, "results.nc"),
            "STORE": store,
        }
        with open(tokens["SPEC"], "w", encoding="utf-8") as f:
            f.write(spec_text)
        with open(tokens["FILE"], "w", encoding="utf-8") as f:
            f.write("not results\n")
        if command in ("fit", "report"):  # a fit of real results takes long
            tokens["STORE"] = tokens["FILE"]
        argv = [command] if command else []
        if paths is None:
            paths = _NATURAL.get(command, [])
        argv += [tokens.get(p, p) for p in paths]
        for option in options:
            argv += [tokens.get(part, part) for part in option]
        if command == "run":
            argv += ["--scheduler-file", os.path.join(folder, "no-scheduler.json")]
        before = _tree(folder)
        cwd = os.getcwd()
        os.chdir(folder)
        try:
            with dask.config.set({"scaleprobe.cluster.connect-timeout": 0.2}):
                code, err = _run(argv)
        finally:
            os.chdir(cwd)
        event(f"{command or 'no command'}: exit {code}")
        assert code in (0, 1, 2), (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        lines = [
            line
            for line in err.splitlines()
            if line.strip()
            and not line.startswith(("usage:", " ", "scaleprobe: warning:"))
            and not line.startswith("scaleprobe: note:")
        ]
        if code != 0:
            assert len(lines) == 1, (argv, err)
            assert "error:" in lines[0] or "failed:" in lines[0], (argv, err)
        outputs = _outputs(folder, argv, spec_text)
        changed = [
            path
            for path, stamp in _tree(folder).items()
            if before.get(path, "new") != stamp
            and not any(
                path == stem + suffix or path.startswith(stem + suffix + os.sep)
                for stem in outputs
                for suffix in (".points", ".logs", ".zarr", ".nc", ".lock", "")
            )
            and not any(stem.startswith(path + os.sep) for stem in outputs)
        ]
        assert not changed, (argv, changed)
    assert _tree(os.path.dirname(store)) == store_tree  # show only read it
