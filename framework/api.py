"""The Python API: run a campaign, open its results, fit, project and report.

Five calls carry a campaign from a spec to a projection, the same steps as the
``scaleprobe`` command, in a script or a notebook::

    import scaleprobe

    ds = scaleprobe.run("tour.yaml")
    fit = scaleprobe.fit(ds, output="models.json")
    proj = scaleprobe.project(fit, nodes="4:1024", link_bandwidth="100 Gbit/s")
    scaleprobe.report(ds, "report.html")

A script needs no ``if __name__ == "__main__":`` guard: the embedded Dask cluster's
workers are threads of the calling process (setting
``scaleprobe.cluster.processes``), so nothing imports the script again, and a
notebook runs the same calls. The measurements are child ``mpiexec`` processes
either way. Quantities with a dimension are read by the one unit parser and need
their unit (``"100 Gbit/s"``, ``"1 us"``), as in a spec and on the command line.
"""

from __future__ import annotations

import os
import warnings

__all__ = ["fit", "open", "project", "report", "run"]


def run(
    spec,
    *,
    output=None,
    client=None,
    workers=None,
    progress=True,
    retry=(),
    new_campaign=False,
):
    """Run (or resume) the campaign a spec describes; return its results.

    Parameters
    ----------
    spec : str, path-like, dict or Spec
        The campaign spec: a YAML file, YAML text, or a mapping of its keys.
    output : str or path-like, optional
        Overrides the spec's ``output``.
    client : distributed.Client, optional
        Where to run; by default an embedded cluster of threads is started (only
        when there is something to measure).
    workers : int, optional
        Workers of the embedded cluster.
    progress : bool, default=True
        A progress bar on a terminal (points done, failed, time left).
    retry : str or iterable of str, optional
        Statuses of stored points to measure again (``"failed,timeout"``).
    new_campaign : bool, default=False
        Move a stored campaign of another identity aside instead of refusing.

    Returns
    -------
    xarray.Dataset
        Every point of the campaign, labelled by the sweep's dimensions.

    Warns
    -----
    FailedPointsWarning
        Points that did not succeed, in one line naming the first and how to list
        them all.

    See Also
    --------
    scaleprobe.framework.run_sweep : the same, with every option of a sweep.

    Examples
    --------
    >>> ds = scaleprobe.run("tour.yaml")                        # doctest: +SKIP
    >>> ds.time.median(["run", "trial"]).to_series()            # doctest: +SKIP
    """
    from ._summary import failure_line
    from ._warnings import FailedPointsWarning
    from .runner import prepare_sweep

    with prepare_sweep(
        spec, output=output, retry=retry, new_campaign=new_campaign, progress=progress
    ) as sweep:
        ds = sweep.run(client, workers=workers)
        failed = failure_line(ds, sweep.store.path)
    if failed:
        warnings.warn(failed, FailedPointsWarning, stacklevel=2)
    return ds


def open(path, **options):
    """Open the results of a campaign, or a file of measurements, as a Dataset.

    Parameters
    ----------
    path : str or path-like
        A results store (``.zarr``, ``.nc``) or a measurement file (CSV, Parquet,
        Extra-P text or JSON).
    **options
        How to read a measurement file: ``ranks``, ``nodes``, ``callpath``,
        ``units``, ``select`` (see :func:`scaleprobe.models.load_measurements`).

    Returns
    -------
    xarray.Dataset

    Raises
    ------
    ValueError
        Nothing at ``path``, a spec, or a file that cannot be read (one line).

    Examples
    --------
    >>> ds = scaleprobe.open("results/tour.zarr")               # doctest: +SKIP
    """
    from types import SimpleNamespace

    from ._cli_inputs import load_results

    names = {"ranks": "ranks_from", "nodes": "nodes_from"}
    args = SimpleNamespace(**{names.get(k, k): v for k, v in options.items()})
    if isinstance(getattr(args, "select", None), dict):
        args.select = [f"{k}={v}" for k, v in args.select.items()]
    return load_results(os.fspath(path), args)


def _dataset(results):
    return open(results) if isinstance(results, (str, os.PathLike)) else results


def fit(
    results,
    *,
    models=None,
    cv=None,
    target="time",
    level=0.9,
    output=None,
    client=None,
    progress=True,
    **options,
):
    """Cross-validate the model ensemble on results and judge which to trust.

    Parameters
    ----------
    results : xarray.Dataset, str or path-like
        A Dataset of :func:`run` or :func:`open`, or a path :func:`open` reads.
    models : dict of str to estimator, optional
        Default: every model the data identify
        (:func:`~scaleprobe.models.default_ensemble`).
    cv : dict of str to splitter, optional
        Default: k-fold and extrapolation to held-out node counts.
    target : str, default="time"
    level : float, default=0.9
        Prediction-interval level.
    output : str or path-like, optional
        Also write the fitted models there (``.json``), for :func:`project` and
        ``scaleprobe project``.
    client : distributed.Client, optional
        Fit on a Dask cluster; by default Dask's local threads.
    progress : bool, default=True
        A bar over the fit's tasks on a terminal.
    **options
        ``s0``, ``ppn``, ``groupby``: see :func:`scaleprobe.models.fit_ensemble`.

    Returns
    -------
    EnsembleFit
        Models, scores, the verdict (``.verdict``; ``.describe()`` says it all).

    Examples
    --------
    >>> fitted = scaleprobe.fit(ds, output="models.json")       # doctest: +SKIP
    >>> print(fitted.describe())                                # doctest: +SKIP
    """
    from scaleprobe.models import fit_ensemble, save_models

    from ._cli_inputs import OUTPUT_SUFFIXES, check_output_path
    from ._progress import FitProgress

    check_output_path(output, "output", OUTPUT_SUFFIXES["fit --output"])
    with FitProgress(enabled=progress):
        fitted = fit_ensemble(
            _dataset(results),
            models=models,
            cv=cv,
            target=target,
            level=level,
            client=client,
            **options,
        )
    if output is not None:
        save_models(output, fitted)
    return fitted


def _link(link_bandwidth, latency):
    """The target network, read by the one unit parser (units required)."""
    from ._cli_inputs import parse_quantity
    from .units import parse_bandwidth, parse_duration

    link = {
        "link_bandwidth": parse_quantity(
            link_bandwidth, "link_bandwidth", parse_bandwidth
        ),
        "latency": parse_quantity(latency, "latency", parse_duration),
    }
    return {k: v for k, v in link.items() if v is not None} or None


def project(
    fitted,
    *,
    nodes=None,
    ranks=None,
    bandwidth=100,
    scale=None,
    ppn=None,
    link_bandwidth=None,
    latency=None,
    model=None,
    params=None,
):
    """Project a fitted model to other node counts, bandwidths and networks.

    Parameters
    ----------
    fitted : EnsembleFit, str or path-like
        A result of :func:`fit`, or its model file.
    nodes : array-like of int or str, optional
        Node counts, or the command line's forms: ``"4:1024"`` (doublings),
        ``"4:64:4"`` or ``"4,8,16"``.
    ranks : array-like of int or str, optional
        Rank counts instead, same forms: those of a model fitted on rank counts
        alone, else divided into nodes by ``ppn``.
    bandwidth : float, array-like or str, default=100
        Percentages of the (target) link.
    scale : float or array-like, optional
        Problem scales.
    ppn : float, optional
        Ranks per node (default: the trained one).
    link_bandwidth : str, optional
        The target network's link, with its unit (``"100 Gbit/s"``).
    latency : str, optional
        The target network's latency, with its unit (``"1 us"``); only a model
        that prices its traffic takes another latency.
    model : str, optional
        A model of the fit (default: the trusted one).
    params : dict, optional
        Application parameters the models were trained over.

    Returns
    -------
    xarray.Dataset
        ``time_predicted``, ``time_lower``, ``time_upper`` (the interval), the
        latency floor and TEPS where known; attributes name the model and the
        target network.

    Examples
    --------
    >>> proj = scaleprobe.project(fitted, nodes="64:1024",
    ...                           link_bandwidth="100 Gbit/s")  # doctest: +SKIP
    """
    from scaleprobe.models import load_models

    from ._cli_inputs import check_model_file, parse_percentages, parse_values

    link = _link(link_bandwidth, latency)
    if isinstance(nodes, str):
        nodes = parse_values(nodes, integer=True, option="nodes")
    if isinstance(ranks, str):
        ranks = parse_values(ranks, integer=True, option="ranks")
    if isinstance(bandwidth, str):
        bandwidth = parse_percentages(bandwidth, option="bandwidth")
    if isinstance(fitted, (str, os.PathLike)):
        check_model_file(os.fspath(fitted))
        fitted = load_models(fitted)
    return fitted.project(
        model,
        nodes=nodes,
        ranks=ranks,
        bandwidth=bandwidth,
        scale=scale,
        ppn=ppn,
        link=link,
        params=params,
    )


def report(results, output="report.html", *, models=None, level=0.9, **options):
    """Fit the ensemble on results and write the report (tables and figures).

    Parameters
    ----------
    results : xarray.Dataset, str or path-like
        A Dataset of :func:`run` or :func:`open`, or a path :func:`open` reads.
    output : str or path-like, default="report.html"
        ``.html`` (one self-contained file) or ``.md`` (PNG figures beside it).
    models : dict of str to estimator, optional
    level : float, default=0.9
    **options
        ``cv``, ``client``, ``target``, ``s0``, ``ppn``, ``project_to``: see
        :func:`scaleprobe.models.write_report`.

    Returns
    -------
    pathlib.Path
        The report written.

    Examples
    --------
    >>> scaleprobe.report("results/tour.zarr", "report.html")   # doctest: +SKIP
    """
    from scaleprobe.models import write_report

    from ._cli_inputs import OUTPUT_SUFFIXES, check_output_path
    from ._progress import FitProgress

    check_output_path(os.fspath(output), "output", OUTPUT_SUFFIXES["report --output"])
    with FitProgress(what="report"):
        return write_report(
            _dataset(results), output, models=models, level=level, **options
        )
