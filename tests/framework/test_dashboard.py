"""The sweep page on the Dask dashboard: its state, its data endpoint, and a browser."""

import json
import shutil
import subprocess
import threading
import time
import urllib.request

import pytest
from _system import missing
from distributed import Client, LocalCluster
from distributed.utils import get_ip
from scaleprobe.framework import run_sweep
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
    page.apply({"kind": "done", "sweep": "s1", "key": "k2100", "status": "ok",
                "value": 0.25, "time": 101.0})  # fmt: skip
    page.apply({"kind": "start", "sweep": "s1", "key": "k2101", "time": 101.0})
    page.apply({"kind": "start", "sweep": "s1", "key": "k1100", "time": 101.5})
    page.apply({"kind": "done", "sweep": "s1", "key": "k1100", "status": "timeout",
                "value": None, "time": 103.0})  # fmt: skip
    page.apply({"kind": "done", "sweep": "nope", "key": "k2100", "status": "ok"})
    page.log_event("other-topic", {"kind": "plan", "sweep": "x"})
    data = page.data(now=104.0)
    assert data["time"] == 104.0
    (grid,) = data["sweeps"]
    assert grid["rows"] == ["nodes=1", "nodes=2"]  # ppn has one value: not shown
    assert grid["row_dims"] == ["nodes"]
    assert (grid["column_dim"], grid["columns"]) == ("bandwidth", [100, 10])
    assert grid["counts"] == {"pending": 4, "running": 1, "ok": 1, "failed": 0,
                              "timeout": 1, "invalid": 0, "stored": 1}  # fmt: skip
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
    client.log_event(TOPIC, {"kind": "start", "sweep": sweep, "key": "k2100",
                             "time": time.time()})  # fmt: skip
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


def _chromium(url, profile, *arguments):
    command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *arguments, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.skipif(
    CHROMIUM is None,
    reason=missing(
        "Debian's chromium (apt-get install chromium, as .ci/install-deploy-deps does)"
    ),
)
# The browser rendering the page is other work on the sweep's host, on purpose: the
# sweep may rightly say its points were measured beside it (host_load).
@pytest.mark.filterwarnings("ignore::scaleprobe.framework.OversubscriptionWarning")
def test_a_browser_shows_a_running_sweep(tmp_path, client):
    spec = {
        "name": "watched",
        "kernel": "commbench.fault",
        "params": {"behaviour": "ok", "sleep": 1.5},
        "sweep": {"nodes": [1, 2], "bandwidth": [100, 50], "run": 2},
        "throttle": {"mode": "emulated"},
        "timeout": 120,
        "output": str(tmp_path / "watched.zarr"),
    }
    link = attach_sweep_page(client)
    done = {}
    sweep = threading.Thread(
        target=lambda: done.update(ds=run_sweep(spec, client, progress=False))
    )
    sweep.start()
    try:
        # Wait until the page has both finished and running points to show.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            grids = json.loads(_get(link + "/data.json")[1])["sweeps"]
            grid = next((g for g in grids if g["name"] == "watched"), None)
            if grid and grid["counts"]["ok"] >= 1 and grid["running"]:
                break
            time.sleep(0.2)
        assert grid, grids
        assert grid["running"], grid
        budget = "--virtual-time-budget=3000"
        dom = _chromium(link, tmp_path / "profile-dom", budget, "--dump-dom")
        shot = tmp_path / "sweep.png"
        png = _chromium(
            link, tmp_path / "profile-shot", budget, "--window-size=1000,700",
            f"--screenshot={shot}",
        )  # fmt: skip
    finally:
        sweep.join(timeout=300)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert "watched (8 points)" in html
    assert 'data-status="ok"' in html
    assert "running: nodes=" in html
    assert png.returncode == 0, png.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))[..., :3]
    assert pixels.shape[:2] == (700, 1000)
    ok_green = abs(pixels - [0x7B / 255, 0xC6 / 255, 0x7B / 255]).max(axis=-1) < 0.02
    assert ok_green.sum() > 100, "no point drawn in the colour of 'ok'"
    assert (done["ds"].status.values == "ok").all()
