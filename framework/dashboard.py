"""A sweep page on the Dask dashboard: every point of a sweep, coloured by status.

:class:`SweepPage` is a scheduler plugin. Registered on a cluster, it serves
``/scaleprobe`` (the page) and ``/scaleprobe/data.json`` (what the page shows) from
the scheduler's own dashboard server, next to ``/status``. It learns about sweeps
from events on the topic :data:`TOPIC`: the runner logs the plan and each finished
point from the client, and the task that runs a point logs when its launch starts. The
page polls the data every second, so it follows a running sweep live.

>>> from distributed import Client                     # doctest: +SKIP
>>> link = attach_sweep_page(Client())                  # doctest: +SKIP
>>> link                                                # doctest: +SKIP
'http://127.0.0.1:8787/scaleprobe'
"""

from __future__ import annotations

import json
import time

from distributed.comm import get_address_host
from distributed.diagnostics.plugin import SchedulerPlugin
from tornado import web

from ._dashboard_html import PAGE
from ._sweep_grid import STATUSES, sweep_grid

__all__ = [
    "TOPIC",
    "SweepPage",
    "attach_sweep_page",
    "dashboard_root",
    "sweep_page_link",
]

#: Event topic of sweep progress.
TOPIC = "scaleprobe-sweep"
ROUTE = "/scaleprobe"


class _PageHandler(web.RequestHandler):
    def get(self):
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(PAGE)


class _DataHandler(web.RequestHandler):
    def initialize(self, page):
        self.page = page

    def get(self):
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.write(json.dumps(self.page.data()))


class SweepPage(SchedulerPlugin):
    """Scheduler plugin that keeps the state of sweeps and serves their page.

    Events (dicts on :data:`TOPIC`, each with ``sweep``, an identifier):

    - ``{"kind": "plan", "name", "metric", "dims": {dim: values}, "points":
      [{"key", "coords", "status"}]}`` -- the points of a sweep (``status`` ``pending``,
      or ``stored`` for points an earlier run finished);
    - ``{"kind": "start", "key", "time"}`` -- a point's launch began;
    - ``{"kind": "done", "key", "status", "value", "time"}`` -- it ended.

    Attributes
    ----------
    sweeps : dict
        State per sweep identifier, newest last.
    """

    name = "scaleprobe-sweep-page"
    idempotent = True  # registered again, the first instance and its sweeps stay

    def __init__(self):
        self.sweeps: dict = {}

    async def start(self, scheduler) -> None:
        """Mount the page's routes on the scheduler's dashboard server, if any."""
        application = getattr(scheduler, "http_application", None)
        if application is not None:
            application.add_handlers(
                ".*$",
                [
                    (ROUTE, _PageHandler),
                    (ROUTE + "/data.json", _DataHandler, {"page": self}),
                ],
            )

    def log_event(self, topic: str, msg) -> None:
        """Apply a sweep event (other topics are ignored)."""
        if topic == TOPIC and isinstance(msg, dict):
            self.apply(msg)

    def apply(self, msg: dict) -> None:
        """Apply one event to the state (see the class docstring for the kinds)."""
        kind, sweep = msg.get("kind"), msg.get("sweep")
        if kind == "plan":
            self.sweeps.pop(sweep, None)  # a resumed sweep starts a new page
            self.sweeps[sweep] = {
                "name": str(msg.get("name", sweep)),
                "metric": msg.get("metric"),
                "dims": dict(msg["dims"]),
                "points": {
                    p["key"]: {
                        "coords": p["coords"],
                        "status": p.get("status", "pending"),
                        "value": None,
                        "started": None,
                    }
                    for p in msg["points"]
                },
            }
            return
        state = self.sweeps.get(sweep)
        point = state["points"].get(msg.get("key")) if state else None
        if point is None:
            return
        if kind == "start":
            point.update(status="running", started=float(msg["time"]))
        elif kind == "done":
            status = msg.get("status")
            point.update(
                status=status if status in STATUSES else "failed",
                value=msg.get("value"),
                finished=float(msg.get("time", 0.0)),
            )

    def data(self, now: float | None = None) -> dict:
        """Return what the page shows: one grid per sweep, newest first.

        Parameters
        ----------
        now : float, optional
            The current time (epoch seconds), for the elapsed time of running launches.

        Returns
        -------
        dict
            ``{"time": now, "sweeps": [grid, ...]}``; see
            :func:`scaleprobe.framework._sweep_grid.sweep_grid` for a grid.
        """
        now = time.time() if now is None else now
        grids = [
            sweep_grid(sweep_id, state, now)
            for sweep_id, state in reversed(self.sweeps.items())
        ]
        return {"time": now, "sweeps": grids}


def dashboard_root(client) -> str | None:
    """Return ``http://HOST:PORT`` where the scheduler's dashboard listens, or None.

    Dask's own link names the host of the scheduler's address, but a dashboard bound
    to loopback (scaleprobe's default) does not answer there when the scheduler
    listens on another interface, as under dask-mpi; the host is taken from the
    address the dashboard server was bound to instead, and only a server bound to
    every interface is named by the scheduler's host.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster.

    Returns
    -------
    str or None
        The root of the dashboard, or None if the scheduler has none.
    """
    bound = client.run_on_scheduler(
        lambda dask_scheduler: (
            (getattr(server, "address", ""), server.port)
            if (server := dask_scheduler.services.get("dashboard")) is not None
            else None
        )
    )
    if bound is None:
        return None
    host, port = bound
    if host in ("", "0.0.0.0", "::"):
        host = get_address_host(client.scheduler.address)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def sweep_page_link(client) -> str | None:
    """Return the address of the sweep page of ``client``'s cluster, or None."""
    root = dashboard_root(client)
    return None if root is None else root + ROUTE


def attach_sweep_page(client) -> str | None:
    """Register the sweep page on ``client``'s scheduler; return its address.

    Registering twice keeps the first plugin and its sweeps.

    Parameters
    ----------
    client : distributed.Client
        A client of the cluster.

    Returns
    -------
    str or None
        ``http://HOST:PORT/scaleprobe``, or None if the scheduler has no dashboard.
    """
    client.register_plugin(SweepPage())
    return sweep_page_link(client)
