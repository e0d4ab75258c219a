"""The sweep page: its state, its data endpoint, its plot, and a real browser.

The browser tests run a real emulated Graph500 sweep on the session's Dask cluster
and read the page in headless Chromium while it runs and after it ended: the DOM
(the grid, the banner, and what the Bokeh document's data sources hold, which the
page writes on the plot's container) and screenshots. The same store is then
served by ``scaleprobe dashboard``.
"""

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest
from _system import missing
from distributed import Client, LocalCluster
from distributed.utils import get_ip
from scaleprobe.framework import run_sweep
from scaleprobe.framework._summary import summarize
from scaleprobe.framework._sweep_plot import PALETTE, live_projection
from scaleprobe.framework._sweep_state import plan_event, point_values, series_data
from scaleprobe.framework.dashboard import (
    TOPIC,
    SweepPage,
    attach_sweep_page,
    dashboard_root,
)

PLAN = {
    "kind": "plan",
    "sweep": "s1",
    "name": "pingpong",
    "metric": "time",
    "dims": {"nodes": [1, 2], "ppn": [1], "bandwidth": [100, 10], "run": [0, 1]},
    "points": [
        {
            "key": f"k{n}{b}{r}",
            "coords": {"nodes": n, "ppn": 1, "bandwidth": b, "run": r},
            "status": "stored" if (n, b, r) == (1, 100, 0) else "pending",
        }
        for n in (1, 2)
        for b in (100, 10)
        for r in (0, 1)
    ],
}


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.headers.get("Content-Type"), response.read().decode()


def test_events_make_a_grid_of_points_by_status():
    page = SweepPage()
    page.apply(PLAN)
    page.apply({"kind": "start", "sweep": "s1", "key": "k2100", "time": 100.0})
    page.apply(
        {
            "kind": "done",
            "sweep": "s1",
            "key": "k2100",
            "status": "ok",
            "value": 0.25,
            "time": 101.0,
        }
    )
    page.apply({"kind": "start", "sweep": "s1", "key": "k2101", "time": 101.0})
    page.apply({"kind": "start", "sweep": "s1", "key": "k1100", "time": 101.5})
    page.apply(
        {
            "kind": "done",
            "sweep": "s1",
            "key": "k1100",
            "status": "timeout",
            "value": None,
            "time": 103.0,
        }
    )
    page.apply({"kind": "done", "sweep": "nope", "key": "k2100", "status": "ok"})
    page.log_event("other-topic", {"kind": "plan", "sweep": "x"})
    data = page.data(now=104.0)
    assert data["time"] == 104.0
    (grid,) = data["sweeps"]
    assert grid["rows"] == ["nodes=1", "nodes=2"]  # ppn has one value: not shown
    assert grid["row_dims"] == ["nodes"]
    assert (grid["column_dim"], grid["columns"]) == ("bandwidth", [100, 10])
    assert grid["counts"] == {
        "pending": 4,
        "running": 1,
        "ok": 1,
        "failed": 0,
        "timeout": 1,
        "invalid": 0,
        "stored": 1,
    }
    cell = grid["cells"][1][1]  # nodes=2, bandwidth=10: runs 0 and 1
    assert [(p["run"], p["status"], p["value"]) for p in cell] == [
        (0, "ok", 0.25),
        (1, "running", None),
    ]
    assert grid["cells"][0][0][0]["status"] == "stored"
    assert grid["running"] == [
        {"key": "k2101", "label": "nodes=2 ppn=1 bandwidth=10 run=1", "elapsed": 3.0}
    ]
    # a second plan for the same sweep (a resumed run) starts its page afresh
    page.apply(PLAN)
    assert page.data(now=0)["sweeps"][0]["counts"]["running"] == 0


def test_the_data_endpoint_serves_the_scheduler_state(client):
    link = attach_sweep_page(client)
    assert link.startswith("http://127.0.0.1:")
    assert link.endswith("/scaleprobe")
    assert attach_sweep_page(client) == link  # idempotent
    sweep = f"endpoint-{time.time()}"
    client.log_event(TOPIC, {**PLAN, "sweep": sweep})
    client.log_event(
        TOPIC, {"kind": "start", "sweep": sweep, "key": "k2100", "time": time.time()}
    )
    deadline = time.monotonic() + 20
    while True:
        kind, text = _get(link + "/data.json")
        grids = [g for g in json.loads(text)["sweeps"] if g["id"] == sweep]
        if (grids and grids[0]["running"]) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert kind == "application/json"
    (grid,) = grids
    assert grid["name"] == "pingpong"
    assert grid["total"] == 8
    assert grid["running"][0]["key"] == "k2100"
    kind, html = _get(link)
    assert kind.startswith("text/html")
    assert "<title>scaleprobe sweeps</title>" in html
    assert "data.json" in html


@pytest.mark.parametrize("bound", ["127.0.0.1", ""])
def test_the_link_names_where_the_dashboard_listens(bound):
    """A scheduler on a public address with its dashboard on loopback (dask-mpi's
    case): the link says 127.0.0.1, where the page answers. A dashboard on every
    interface is named by the scheduler's host."""
    host = get_ip()
    if host.startswith("127."):
        pytest.skip("this host has no address but loopback")
    with (
        LocalCluster(
            n_workers=0,
            processes=False,
            protocol="tcp://",
            host=host,
            dashboard_address=f"{bound}:0",
        ) as cluster,
        Client(cluster) as client,
    ):
        link = attach_sweep_page(client)
        assert link.startswith(f"http://{bound or host}:"), link
        assert dashboard_root(client) + "/scaleprobe" == link
        kind, text = _get(link + "/data.json")
        assert kind == "application/json"
        assert json.loads(text)["sweeps"] == []


def _done(nodes, bandwidth, run, values, at, status="ok", error=""):
    return {
        "kind": "done",
        "sweep": "s1",
        "key": f"k{nodes}{bandwidth}{run}",
        "status": status,
        "values": values,
        "units": "s",
        "error": error,
        "time": at,
    }


def test_progress_counts_failures_and_the_time_left_from_an_injected_clock():
    page = SweepPage()
    page.apply(PLAN, now=100.0)  # 8 points, one stored by an earlier run
    page.apply(_done(1, 100, 1, [1.0], at=110.0))
    page.apply(
        _done(1, 10, 0, [], at=120.0, status="failed",
              error="MPI_ABORT was invoked on rank 1\nmore lines")
    )  # fmt: skip
    view = page.data(now=125.0)["sweeps"][0]
    progress = view["progress"]
    assert (progress["done"], progress["failed"], progress["remaining"]) == (3, 1, 5)
    # two points took 20 s since the plan: 10 s a point, five to go
    assert progress["left_seconds"] == 50.0
    assert progress["elapsed_seconds"] == 25.0
    assert not progress["finished"]
    assert view["failures"] == [
        {
            "label": "nodes=1 ppn=1 bandwidth=10 run=0",
            "status": "failed",
            "error": "MPI_ABORT was invoked on rank 1",
        }
    ]
    page.apply(_done(1, 10, 1, [2.0], at=130.0))
    page.apply(_done(2, 100, 0, [3.0], at=140.0))
    page.apply(_done(2, 100, 1, [3.0], at=150.0))
    page.apply(_done(2, 10, 0, [3.0], at=160.0))
    page.apply(_done(2, 10, 1, [4.0, 6.0], at=170.0))
    view = page.data(now=300.0)["sweeps"][0]
    assert view["progress"]["finished"]
    assert view["progress"]["left_seconds"] == 0.0
    assert view["progress"]["elapsed_seconds"] == 70.0  # plan to the last point
    # a cell is the median over all runs and trials, as `scaleprobe show` prints it
    assert view["medians"][1][1] == 4.0  # nodes=2, bandwidth=10: 3, 4, 6
    assert view["medians_text"][1][1] == "4"
    assert view["cells"][1][1][1]["value"] == 5.0  # run 1: median of 4 and 6
    assert view["medians"][0][1] == 2.0  # the failed point has no value


def test_a_trial_metric_is_the_value_the_store_keeps():
    # Graph500 reports a run's total time and each search's time; the store keeps
    # the searches' times as `time` (the run's as `run_time`), and so does the page
    record = {"metrics": {"time": 1.0}, "trials": [{"time": 0.25}, {"time": 0.75}]}
    assert point_values({"record": record}) == [0.25, 0.75]
    assert point_values({"record": {"metrics": {"time": 2.0}}}) == [2.0]
    assert point_values({"record": None}) == []


def test_the_live_projection_recovers_a_known_law_once_three_counts_are_in():
    state = {"dims": {"nodes": [2, 4, 8, 16], "run": [0, 1]}, "points": {}}
    rng = np.random.default_rng(0)
    for n in (2, 4, 8, 16):
        for run in (0, 1):
            noisy = (2.0 / n + 0.1) * np.exp(0.01 * rng.standard_normal(3))
            state["points"][f"{n}-{run}"] = {
                "coords": {"nodes": n, "run": run},
                "status": "ok",
                "values": noisy.tolist(),
                "value": float(np.median(noisy)),
            }
    two = {
        **state,
        "points": {
            k: v for k, v in state["points"].items() if v["coords"]["nodes"] <= 4
        },
    }
    assert live_projection(series_data(two), 16)["series"] == [None]
    (fitted,) = live_projection(series_data(state), 16)["series"]
    assert fitted["node_counts"] == 4
    nodes = np.asarray(fitted["nodes"])
    assert nodes[0] == 2
    assert nodes[-1] == 64
    at = np.argmin(abs(nodes - 64))
    truth = 2.0 / 64 + 0.1
    assert fitted["lower"][at] <= truth <= fitted["upper"][at]
    assert fitted["predicted"][at] == pytest.approx(truth, rel=0.05)


def test_a_resumed_sweep_shows_what_earlier_runs_stored_and_projects_it():
    """The plan of a resumed sweep carries the stored points' values and errors: the
    plot starts with them and the projection is fitted from them at once."""
    nodes = (2, 4, 8, 16)
    points = [(f"n{n}", {"nodes": n, "run": 0}) for n in nodes]
    stored = [
        {"key": f"n{n}", "status": "ok", "record": {"metrics": {"time": 1.0 / n}}}
        for n in nodes[:3]
    ]
    stored.append(
        {"key": "n16", "status": "failed", "record": None, "error": "boom\ntrace"}
    )
    pending = {"n32"}
    event = plan_event(
        "r1",
        "resumed",
        {"nodes": [*nodes, 32], "run": [0]},
        [*points, ("n32", {"nodes": 32, "run": 0})],
        pending,
        stored,
    )
    page = SweepPage()
    page.apply(event, now=10.0)
    deadline = time.monotonic() + 60
    while page.sweeps["r1"].get("projection") is None:
        assert time.monotonic() < deadline, "no projection of the stored points"
        time.sleep(0.05)
    view = page.data(now=11.0)["sweeps"][0]
    assert view["counts"]["stored"] == 3
    assert view["counts"]["failed"] == 1
    assert view["counts"]["pending"] == 1
    assert view["failures"] == [
        {"label": "nodes=16 run=0", "status": "failed", "error": "boom"}
    ]
    (series,) = view["plot"]["series"]
    assert series["points"]["nodes"] == [2, 4, 8]
    assert series["points"]["value"] == [0.5, 0.25, 0.125]
    (fitted,) = view["plot"]["projection"]["series"]
    assert fitted["node_counts"] == 3
    at = int(np.argmin(abs(np.asarray(fitted["nodes"]) - 8)))
    assert fitted["lower"][at] <= 0.125 <= fitted["upper"][at]
    assert not view["progress"]["finished"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BUDGET = "--virtual-time-budget=6000"
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason=missing(
        "Debian's chromium (apt-get install chromium, as .ci/install-deploy-deps does)"
    ),
)


def _chromium(url, profile, *arguments):
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *arguments, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def _dom(url, profile):
    done = _chromium(url, profile, BUDGET, "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _screenshot(url, profile, path):
    done = _chromium(
        url, profile, BUDGET, "--window-size=1300,1000", f"--screenshot={path}"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import matplotlib.image

    return matplotlib.image.imread(str(path))[..., :3]


def _section(html, name):
    """The part of the page that shows sweep ``name`` (the module's cluster has run
    other sweeps before, whose sections come first)."""
    parts = [part for part in html.split("<section") if f"<h2>{name} (" in part]
    assert len(parts) == 1, f"{len(parts)} sections of sweep {name!r} on the page"
    return parts[0]


def _plot_state(html):
    """What the page says its Bokeh document holds, from the plot's container."""
    match = re.search(r'<div class="plot"[^>]*>', html)
    assert match, "no plot on the page"
    attributes = dict(re.findall(r'data-([\w-]+)="([^"]*)"', match.group(0)))
    assert "error" not in attributes, attributes["error"]
    return {k: attributes[k] for k in ("glyphs", "bands", "node-counts")}


def _coloured(pixels, hex_colour, tolerance=0.03):
    rgb = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    return int((abs(pixels - rgb).max(axis=-1) < tolerance).sum())


def _assert_series_drawn(pixels):
    """Both bandwidths' colours are on the screenshot (nothing else on the page has
    them: the link colour differs), the second drawn over the first."""
    first, second = (_coloured(pixels, colour) for colour in PALETTE[:2])
    assert first > 20, f"the first series is not drawn ({first} pixels)"
    assert second > 100, f"the second series is not drawn ({second} pixels)"


def _grid(link, name):
    grids = json.loads(_get(link + "/data.json")[1])["sweeps"]
    return next((g for g in grids if g["name"] == name), None)


@pytest.fixture(scope="module")
def watched(cluster, tmp_path_factory):
    """A real sweep watched in Chromium: the page while it ran and after it ended.

    Graph500 (its searches are trials: the page must show their median, not the
    run's total) on 1, 2 and 3 emulated nodes at two bandwidths, two runs each, in
    plan order: the third node count lands last, several launches after the first
    point the page is read at.
    """
    tmp = tmp_path_factory.mktemp("watched")
    spec = {
        "name": "watched",
        "kernel": "graph500",
        "params": {"scale": 10, "nbfs": 4, "variant": "simple"},
        "sweep": {"nodes": [1, 2, 3], "bandwidth": [100, 50], "run": 2},
        "admissible": "any",
        "order": {"shuffle": False},
        "throttle": {"mode": "emulated", "link_bandwidth": "1 Gbit/s"},
        "timeout": 300,
        "output": str(tmp / "watched.zarr"),
    }
    seen = {"path": tmp / "watched.zarr", "tmp": tmp}
    with Client(cluster) as client:
        link = attach_sweep_page(client)
        seen["link"] = link
        sweep = threading.Thread(
            target=lambda: seen.update(ds=run_sweep(spec, client, progress=False))
        )
        sweep.start()
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                grid = _grid(link, "watched")
                if grid and grid["counts"]["ok"] >= 1 and grid["running"]:
                    break
                time.sleep(0.2)
            seen["during_data"] = grid
            seen["during_dom"] = _dom(link, tmp / "profile-1")
            seen["during_png"] = _screenshot(
                link, tmp / "profile-2", tmp / "during.png"
            )
        finally:
            sweep.join(timeout=600)
        # the runner's last event reaches the scheduler a moment after run_sweep
        deadline = time.monotonic() + 60
        while not _grid(link, "watched")["progress"]["finished"]:
            assert time.monotonic() < deadline, "the page never saw the sweep end"
            time.sleep(0.2)
        seen["after_data"] = _grid(link, "watched")
        seen["after_dom"] = _dom(link, tmp / "profile-3")
        seen["after_png"] = _screenshot(link, tmp / "profile-4", tmp / "after.png")
    return seen


@pytest.mark.mpi
@pytest.mark.slow
@needs_chromium
def test_a_browser_shows_a_running_sweep(watched):
    grid = watched["during_data"]
    assert grid, "the sweep never showed a finished and a running point"
    assert grid["running"], grid
    html = watched["during_dom"]
    assert "watched (12 points)" in html
    assert 'data-status="ok"' in html
    assert "running: nodes=" in html
    assert re.search(r"\d+ of 12 points done, 0 failed, \d+ to go", html)
    pixels = watched["during_png"]
    assert pixels.shape[:2] == (1000, 1300)
    assert _coloured(pixels, "#7bc67b") > 100, "no point drawn in the colour of 'ok'"
    assert (watched["ds"].status.values == "ok").all()


@pytest.mark.mpi
@pytest.mark.slow
@needs_chromium
def test_the_plot_has_a_glyph_per_finished_point_and_a_band_from_three_counts(
    watched,
):
    during_dom = _section(watched["during_dom"], "watched")
    during = _plot_state(during_dom)
    ok_boxes = during_dom.count('data-status="ok"')
    # one glyph per finished point, read back from the Bokeh document's sources
    assert int(during["glyphs"]) == ok_boxes >= 1
    assert int(during["node-counts"]) < 3  # the third node count lands last...
    assert during["bands"] == "0"  # ...and no projection is drawn before it
    after_dom = _section(watched["after_dom"], "watched")
    after = _plot_state(after_dom)
    assert int(after["glyphs"]) == 12 == after_dom.count('data-status="ok"')
    assert after["node-counts"] == "3"
    assert after["bands"] == "2"  # one band per bandwidth, once three counts are in
    assert "Finished: 12 points, 0 failed" in watched["after_dom"]
    projection = watched["after_data"]["plot"]["projection"]
    assert projection["level"] == 0.9
    assert all(s is not None and s["nodes"] for s in projection["series"])
    # the plot is drawn: both series' colours in the screenshot (glyphs, lines)
    _assert_series_drawn(watched["after_png"])


@pytest.mark.mpi
@pytest.mark.slow
@needs_chromium
def test_the_page_shows_the_values_of_show(watched):
    ds = watched["ds"]
    grid = watched["after_data"]
    assert grid["units"] == "s"
    medians = ds["time"].median(["run", "trial"]).squeeze("ppn")
    table = summarize(ds)
    for i, row in enumerate(grid["rows"]):
        nodes = int(row.split("=")[1])
        for j, bandwidth in enumerate(grid["columns"]):
            value = medians.sel(nodes=nodes, bandwidth=bandwidth).item()
            assert grid["medians"][i][j] == pytest.approx(value, rel=1e-12)
            text = grid["medians_text"][i][j]
            assert text == f"{value:.4g}"
            assert text in table  # `scaleprobe show` prints the same number
            assert f"median {text} s" in watched["after_dom"]
    # a box is one run: the median of its searches, not the run's mean (which the
    # store keeps as `run_time`; the two may coincide for a run by chance)
    flat = ds.squeeze("ppn")
    other = boxes = 0
    for i, row in enumerate(grid["rows"]):
        nodes = int(row.split("=")[1])
        for j, bandwidth in enumerate(grid["columns"]):
            for box in grid["cells"][i][j]:
                one = flat.sel(nodes=nodes, bandwidth=bandwidth, run=box["run"])
                median = float(one["time"].median("trial"))
                assert box["value"] == pytest.approx(median, rel=1e-12)
                other += box["value"] != pytest.approx(float(one["run_time"]), rel=1e-3)
                boxes += 1
    assert boxes == 12
    assert other > boxes / 2  # most runs' median of 4 searches is not their mean


@pytest.mark.mpi
@pytest.mark.slow
@needs_chromium
def test_the_dashboard_command_serves_a_finished_store(watched, tmp_path):
    command = [
        sys.executable,
        "-m",
        "scaleprobe.framework.cli",
        "dashboard",
        str(watched["path"]),
        "--port",
        "0",
    ]
    server = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()
        match = re.search(
            r"at (http://127\.0\.0\.1:\d+/scaleprobe) \(Ctrl-C stops\)", line
        )
        assert match, line + server.stderr.read()
        link = match.group(1)
        grid = _grid(link, "watched")
        assert grid["progress"]["finished"]
        assert grid["medians"] == watched["after_data"]["medians"]
        assert grid["source"] == f"results store {watched['path']}"
        html = _dom(link, tmp_path / "profile")
        assert "Finished: 12 points, 0 failed" in html
        state = _plot_state(html)
        assert (state["glyphs"], state["bands"], state["node-counts"]) == (
            "12",
            "2",
            "3",
        )
        pixels = _screenshot(link, tmp_path / "profile-shot", tmp_path / "store.png")
        _assert_series_drawn(pixels)
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert "sweep page stopped" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["dashboard", "{tmp}/missing.zarr"], "no results store at"),
        (["dashboard", "{tmp}/x.zarr", "--port", "http"], "must be a port number"),
        (["dashboard", "{tmp}/models.json", "--port", "0"], "models.json"),
    ],
)
def test_dashboard_bad_input_is_one_line(argv, message, tmp_path):
    argv = [a.format(tmp=tmp_path) for a in argv]
    (tmp_path / "models.json").write_text('{"format": "scaleprobe-models"}')
    done = subprocess.run(
        [sys.executable, "-m", "scaleprobe.framework.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert message in lines[-1]
    assert "Traceback" not in done.stderr


def test_dashboard_port_in_use_is_one_line(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "scaleprobe.framework.cli",
                "dashboard",
                str(tmp_path),
                "--port",
                str(port),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert f"cannot listen on port {port}" in line
    assert "choose another with --port" in line
