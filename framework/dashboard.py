"""A sweep page on the Dask dashboard: every point of a sweep, a plot, the progress.

:class:`SweepPage` is a scheduler plugin. Registered on a cluster, it serves
``/scaleprobe`` (the page), ``/scaleprobe/data.json`` (what the page shows) and
``/scaleprobe/plot.json`` (a sweep's Bokeh plot) from the scheduler's own dashboard
server, next to ``/status``. It learns about sweeps from events on the topic
:data:`TOPIC`: the runner logs the plan and each finished point from the client, and
the task that runs a point logs when its launch starts. The page polls the data
every second, so it follows a running sweep live: the grid of points by status, the
measured time against nodes per bandwidth (BokehJS, as Dask's dashboard uses), the
live projection with its band once a series has three node counts, done / failed /
time left, the error of each failed point and a banner when the sweep is finished.

:func:`serve_store` serves the same page for a results store, after its sweep ended
(``scaleprobe dashboard STORE``).

>>> from distributed import Client                     # doctest: +SKIP
>>> link = attach_sweep_page(Client())                  # doctest: +SKIP
>>> link                                                # doctest: +SKIP
'http://127.0.0.1:8787/scaleprobe'
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from distributed.comm import get_address_host
from distributed.diagnostics.plugin import SchedulerPlugin
from tornado import web

from ._sweep_html import PAGE
from ._sweep_state import (
    STATUSES,
    apply_event,
    done_event,
    plan_event,
    point_values,
    series_data,
    state_from_store,
    sweep_grid,
    sweep_view,
)

__all__ = [
    "STATUSES",
    "TOPIC",
    "SweepPage",
    "attach_sweep_page",
    "dashboard_root",
    "done_event",
    "plan_event",
    "point_values",
    "serve_store",
    "sweep_grid",
    "sweep_page_link",
]

#: Event topic of sweep progress.
TOPIC = "scaleprobe-sweep"
ROUTE = "/scaleprobe"
#: Where BokehJS lives in the installed bokeh package.
BOKEH_STATIC = Path(__import__("bokeh").__file__).parent / "server" / "static"


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


class _PlotHandler(web.RequestHandler):
    def initialize(self, page):
        self.page = page

    def get(self):
        item = self.page.plot(self.get_argument("sweep", ""))
        if item is None:
            raise web.HTTPError(404, "no such sweep")
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(item))


def routes(page, prefix: str = ROUTE) -> list:
    """The page's routes (page, data, plot, BokehJS) for a tornado application.

    Parameters
    ----------
    page : SweepPage
        Whose sweeps the routes serve.
    prefix : str, default="/scaleprobe"

    Returns
    -------
    list of tuple
    """
    return [
        (prefix, _PageHandler),
        (prefix + "/data.json", _DataHandler, {"page": page}),
        (prefix + "/plot.json", _PlotHandler, {"page": page}),
        (prefix + "/static/(.*)", web.StaticFileHandler, {"path": str(BOKEH_STATIC)}),
    ]


class SweepPage(SchedulerPlugin):
    """Scheduler plugin that keeps the state of sweeps and serves their page.

    Events (dicts on :data:`TOPIC`, each with ``sweep``, an identifier):

    - ``{"kind": "plan", "name", "metric", "dims": {dim: values}, "points":
      [{"key", "coords", "status"}]}`` -- the points of a sweep (``status`` ``pending``,
      or ``stored`` for points an earlier run finished);
    - ``{"kind": "start", "key", "time"}`` -- a point's launch began;
    - ``{"kind": "done", "key", "status", "values", "units", "error", "time"}`` --
      it ended (:func:`done_event`; a single ``value`` is taken too).

    The live projection of a sweep is refitted in a thread of its own, off the
    scheduler's event loop, whenever new values arrived and no fit is under way.

    Attributes
    ----------
    sweeps : dict
        State per sweep identifier, newest last.
    dask : bool
        Whether the page is served by a Dask dashboard (it links to ``/status``).
    """

    name = "scaleprobe-sweep-page"
    idempotent = True  # registered again, the first instance and its sweeps stay

    def __init__(self):
        self.sweeps: dict = {}
        self.dask = True
        self._figures: dict = {}
        self._fitting: dict = {}  # sweep id -> True while a fit runs, or "again"
        self._executor = None
        self._lock = None

    async def start(self, scheduler) -> None:
        """Mount the page's routes on the scheduler's dashboard server, if any."""
        application = getattr(scheduler, "http_application", None)
        if application is not None:
            application.add_handlers(".*$", routes(self))

    async def close(self) -> None:
        """Stop the projection thread (a fit under way is left to end)."""
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    def log_event(self, topic: str, msg) -> None:
        """Apply a sweep event (other topics are ignored)."""
        if topic == TOPIC and isinstance(msg, dict):
            self.apply(msg)

    def apply(self, msg: dict, now: float | None = None) -> None:
        """Apply one event to the state (see the class docstring for the kinds).

        Parameters
        ----------
        msg : dict
        now : float, optional
            The current time (epoch seconds): when a plan arrived.
        """
        apply_event(self.sweeps, msg, time.time() if now is None else now)
        sweep = msg.get("sweep")
        if msg.get("kind") == "plan":
            self._figures.pop(sweep, None)
            if sweep in self.sweeps and series_data(self.sweeps[sweep]):
                self._refit(sweep)  # a resumed sweep: what earlier runs stored
        elif msg.get("kind") == "done" and sweep in self.sweeps:
            self._refit(sweep)

    def load_store(self, ds, metric: str = "time", source: str = "") -> str:
        """Show a results store's sweep, its projection fitted at once.

        Parameters
        ----------
        ds : xarray.Dataset
        metric : str, default="time"
        source : str, default=""
            Where the results were read, as the page names it.

        Returns
        -------
        str
            The sweep's identifier on the page.
        """
        sweep = f"store-{ds.attrs.get('title', 'results')}"
        self.sweeps[sweep] = state_from_store(ds, metric)
        self.sweeps[sweep]["source"] = source
        self.sweeps[sweep]["projection"] = _projection(self.sweeps[sweep])
        return sweep

    def _refit(self, sweep: str) -> None:
        """Fit the sweep's live projection in the page's thread, or ask the fit
        under way to run once more when it ends."""
        if self._lock is None:
            self._lock = threading.Lock()
            self._executor = ThreadPoolExecutor(1, "scaleprobe-projection")
        with self._lock:
            if self._fitting.get(sweep):
                self._fitting[sweep] = "again"
                return
            self._fitting[sweep] = True
        self._executor.submit(self._fit, sweep, self.sweeps[sweep])

    def _fit(self, sweep: str, state: dict) -> None:
        try:
            state["projection"] = _projection(state)
        finally:
            with self._lock:
                again = self._fitting.pop(sweep, None) == "again"
            if again and self.sweeps.get(sweep) is state:
                self._refit(sweep)

    def plot(self, sweep: str) -> dict | None:
        """The Bokeh figure of a sweep (``json_item``), or None for no such sweep."""
        state = self.sweeps.get(sweep)
        if state is None:
            return None
        if sweep not in self._figures:
            from ._sweep_plot import sweep_figure

            labels = [s["label"] for s in series_data(state)]
            self._figures[sweep] = sweep_figure(
                labels,
                state.get("metric") or "time",
                state.get("units") or "s",
                nodes=state["dims"].get("nodes", ()),
            )
        return self._figures[sweep]

    def data(self, now: float | None = None) -> dict:
        """Return what the page shows: one view per sweep, newest first.

        Parameters
        ----------
        now : float, optional
            The current time (epoch seconds), for the elapsed time of running
            launches and the time left.

        Returns
        -------
        dict
            ``{"time": now, "dask": bool, "sweeps": [view, ...]}``; see
            :func:`~scaleprobe.framework._sweep_state.sweep_view` for a view.
        """
        now = time.time() if now is None else now
        views = [
            sweep_view(sweep_id, state, now)
            for sweep_id, state in reversed(list(self.sweeps.items()))
        ]
        return {"time": now, "dask": self.dask, "sweeps": views}


def _projection(state: dict) -> dict | None:
    """The live projection of a sweep's series (None without a ``nodes`` axis)."""
    series = series_data(state)
    nodes = state["dims"].get("nodes")
    if not series or not nodes:
        return None
    from ._sweep_plot import live_projection

    return live_projection(series, max(float(n) for n in nodes))


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


def serve_store(path, *, port: int = 8787, host: str = "127.0.0.1", announce=None):
    """Serve the sweep page of a results store until interrupted (Ctrl-C).

    The page is the one a running sweep shows, read from the store: every point
    with its status, values and error, the plot with the projection, and whether
    the sweep finished.

    Parameters
    ----------
    path : str or Path
        A results store (``.zarr`` or ``.nc``).
    port : int, default=8787
        Port to listen on (0: any free port).
    host : str, default="127.0.0.1"
        Address to listen on (loopback: forward the port to see it elsewhere).
    announce : callable, optional
        Called with the page's address once the server listens.

    Raises
    ------
    OSError
        When the port cannot be bound (e.g. it is in use).
    KeyboardInterrupt
        When interrupted: the server has stopped.
    """
    import asyncio

    from tornado.httpserver import HTTPServer
    from tornado.netutil import bind_sockets

    from ._adaptive_record import adaptive_record
    from .store import open_results

    sockets = bind_sockets(port, address=host)  # a port in use: before any work
    page = SweepPage()
    page.dask = False
    sweep = page.load_store(open_results(path), source=f"results store {path}")
    page.sweeps[sweep]["adaptive"] = adaptive_record(path)
    application = web.Application(
        [*routes(page), (r"/", web.RedirectHandler, {"url": ROUTE})]
    )

    async def serve():
        server = HTTPServer(application)
        server.add_sockets(sockets)
        bound = sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        if announce is not None:
            announce(f"http://{shown}:{bound}{ROUTE}")
        try:
            await asyncio.Event().wait()
        finally:
            server.stop()

    asyncio.run(serve())
