"""Helpers of ``bench_fim_table4.py``: the kernels, their launches, the three models
and the Table-4 measures of Bhimani et al. 2019."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
from scaleprobe.framework._hostload import LoadMeter
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.iterative.hardware import last_level_cache
from scaleprobe.kernels.schema import (
    COLLECTIVE_LATENCY_COLUMNS,
    CRITICAL_PATH_COLUMNS,
    LINK_COLUMNS,
    Record,
)
from scaleprobe.models import (
    RBASP,
    InsufficientDataWarning,
    MemoryRegimeWarning,
    ScaleprobeWarning,
    fit_ensemble,
)
from scaleprobe.models.fim.model import MEAN_COMPUTATION, FiM, fim_measurements
from scipy import stats

#: The emulated cluster: one rank per node on a 1 Gbit/s, 5 us link.
COMM = {"mode": "emulated", "ppn": 1, "link_bandwidth": "1 Gbit/s", "latency": "5 us"}
TRAIN_RANKS = (1, 2, 4)
#: Column of the slowest rank's computation over the mean rank's, summed over the
#: iterations (records with ``comp_time_iterations_mean``); no model's input.
SLOWEST = "slowest_over_mean"
TEST_RANKS = (1, 2, 4, 8, 16, 32)

#: Per kernel: module, fixed arguments, the size flag, three training sizes, the large
#: size (``sizes`` gives the arguments of a size the flag cannot name), and the
#: application parameter (from the record) the models regress on; FiM
#: takes ``fim`` (named parameters of the record) instead where a kernel has one.
KERNELS = {
    "kmeans": {
        "module": "iterative.kmeans",
        "args": ["--clusters", "8", "--iterations", "10"],
        "flag": "--points",
        "train": [2**14, 2**15, 2**16],
        "large": 2**21,
        "parameter": lambda m: m["points"],
    },
    "pagerank": {
        "module": "iterative.pagerank",
        "args": ["--iterations", "10"],
        "flag": "--scale",
        "train": [12, 13, 14],
        "large": 18,
        "parameter": lambda m: m["edges"],
    },
    "ep": {
        "module": "npb.ep",
        "args": [],
        "flag": "--class",
        "train": ["S", "W", "A"],
        "large": "B",
        "parameter": lambda m: m["pairs"],
    },
    "is": {
        "module": "npb.is_",
        "args": [],
        "flag": "--class",
        "train": ["S", "W", "A"],
        "large": "B",
        "parameter": lambda m: m["keys"],
    },
    "cg": {
        # classes change the order, the nonzeros and the iterations together: the
        # work of the products (nonzeros x iterations) is the one size parameter of
        # the laws; FiM counts the iterations apart (stages) and takes the order
        # (what the allgather moves) and the nonzeros (what a product reads)
        "module": "npb.cg",
        "args": [],
        "flag": "--class",
        "train": ["S", "W", "A"],
        # class U of order 40000 (B's nonzer and shift, A's 15 iterations): its
        # matrix leaves the 35.8 MiB cache (84 MiB on one rank) as B's does, but it
        # costs what A costs per nonzero (111 cycles on one rank, B 133); what B
        # pays more for is its order (bench_cg_spmv.py), so it does not help:
        # --train W,A,U40000 put FiM-queue 19.3 % off on average where S, W, A put
        # it 7.6 %, same day
        "sizes": {"U40000": ["--class", "B", "--na", "40000", "--niter", "15"]},
        "large": "B",
        "parameter": lambda m: m["nnz"] * m["niter"],
        "fim": {"na": lambda m: m["na"], "nnz": lambda m: m["nnz"]},
        # what npb.cg declares: the row block (CSR), the gathered vector and six
        # local vectors, for the records from before it declared it
        "working_set": lambda m, q: (
            12 * m["nnz"] / q + 8 * (m["na"] / q + 1) + 8 * m["na"] + 48 * m["na"] / q
        ),
    },
}


def launch(kernel, size, ranks, core_slots=None):
    """Run one point; return its record. ``core_slots``: ranks of the host that
    compute at once (None: the emulated mode's default, one per core)."""
    spec = KERNELS[kernel]
    environment = child_environment(threads=1)
    comm = dict(COMM) if core_slots is None else {**COMM, "core_slots": core_slots}
    environment["SCALEPROBE_LINK"] = json.dumps(comm)
    command = [
        resolve_mpiexec(),
        "-n",
        str(ranks),
        sys.executable,
        "-m",
        f"scaleprobe.kernels.{spec['module']}",
        *spec.get("sizes", {}).get(size, [spec["flag"], str(size)]),
        *spec["args"],
    ]
    meter = LoadMeter()
    meter.start()
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=7200,
        env=environment,
        check=False,
    )
    load = meter.stop()
    if done.returncode:
        raise RuntimeError(
            f"{kernel} {size} on {ranks} ranks failed:\n{done.stderr[-2000:]}"
        )
    record = Record.parse(done.stdout).to_dict()
    record["host_load"] = load
    return record


def _ranks(record) -> int:
    """The rank count of a record: its placement, or the parameters of records
    measured before the kernels reported where their ranks ran."""
    placement = record.get("placement")
    return int(placement["ranks"] if placement else record["params"]["ranks"])


def frame(kernel, records):
    """Feature frame of ok ``(run, record)`` pairs: ranks, the size parameter, the
    run, FiM's measurements."""
    rows = []
    for run, record in records:
        if record["status"] != "ok":
            raise RuntimeError(
                f"{kernel}: a point is {record['status']}: {record['reason']}"
            )
        metrics = record["metrics"]
        row = {
            "ranks": _ranks(record),
            "size": float(KERNELS[kernel]["parameter"](metrics)),
            "time": metrics["time"],
            "run": run,
        }
        row.update({k: metrics[k] for k in fim_measurements(metrics)})
        if metrics.get(MEAN_COMPUTATION, 0) > 0:
            row[SLOWEST] = metrics["comp_time_iterations"] / metrics[MEAN_COMPUTATION]
        # records from before the kernels counted their timed iterations
        row.setdefault("stages", len(record["profiles"]["iteration"]["comp_time"]))
        for name, value in KERNELS[kernel].get("fim", {}).items():
            row[name] = float(value(metrics))
        if "working_set" not in metrics and "working_set" in KERNELS[kernel]:
            ranks = _ranks(record)
            row["working_set"] = KERNELS[kernel]["working_set"](metrics, ranks)
            # the cache of the host reading the records: the one that measured them
            # unless they were copied from another
            row["llc_bytes"] = last_level_cache()
        if "working_set" in row and "cache_sharers" not in metrics:
            # records from before the kernels counted the ranks computing at once on
            # the cache: the default core slots of the emulated mode, one per core
            # of the host reading them
            row["cache_sharers"] = min(_ranks(record), os.cpu_count() or 1)
        # what the traffic model prices: the critical path and the link it ran on
        row.update({k: metrics[k] for k in CRITICAL_PATH_COLUMNS if k in metrics})
        row.update({k: metrics[k] for k in COLLECTIVE_LATENCY_COLUMNS if k in metrics})
        row.update({k: record["link"][k] for k in LINK_COLUMNS})
        rows.append(row)
    return pd.DataFrame(rows).sort_values(["size", "ranks"], ignore_index=True)


def _law_frame(data):
    """The frame ``scaleprobe fit`` builds from such a sweep: one rank per node, the
    size as ``scale = log2 size``, and every measurement the records carry (the
    critical path and link for the traffic model, FiM's for FiM)."""
    scale = np.log2(data["size"])
    frame = pd.DataFrame(
        {
            "nodes": data["ranks"],
            "ppn": 1,
            "ranks": data["ranks"],
            "bandwidth": 100.0,
            "scale": scale,
            "D": 2.0 ** (scale - 25),
            "run": data.get("run", 0),
        }
    )
    # the size is the whole work (CG's counts its iterations): an iteration count
    # beside it would have FiM divide the work by the iterations twice
    skip = ("ranks", "size", "time", "run", "stages", SLOWEST, *_fim_parameters(data))
    measured = [c for c in data.columns if c not in skip]
    return pd.concat([frame, data[measured]], axis=1)


def _fim_parameters(data):
    """FiM's application parameters of a kernel's frame: its ``fim`` columns, or the
    size."""
    named = [c for c in data.columns if c in _FIM_NAMES]
    return named or ["size"]


_FIM_NAMES = {name for spec in KERNELS.values() for name in spec.get("fim", {})}


def fim_columns(data):
    """The columns FiM predicts from: process count, parameters, iterations."""
    return ["ranks", *_fim_parameters(data), "stages"]


def fit_models(train):
    """FiM, RBASP and scaleprobe's ensemble, fitted on the training frame."""
    # scaleprobe's model is the ensemble's selection when it can predict a new size
    # (the ensemble of `scaleprobe fit` on these records: laws, traffic, FiM, RBASP)
    y = train["time"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleprobeWarning)
        parameters = _fim_parameters(train)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", InsufficientDataWarning)
            fim = FiM(features=parameters).fit(train, y)
        for text in dict.fromkeys(str(w.message) for w in caught):
            print(f"FiM warns: {text}")
        # the paper's broadcast (one queue duplicating to every receiver), and an
        # allgather as a gather then that broadcast
        queue = FiM(features=parameters, broadcast="queue", allgather="queue")
        queue.fit(train, y)
        logs = train[["ranks"]].assign(log2_size=np.log2(train["size"]))
        rbasp = RBASP(features=["log2_size"]).fit(logs, y)
        linear = RBASP(features=["log2_size"], g="linear").fit(logs, y)
        ensemble = fit_ensemble((_law_frame(train), y))
    # the selected model first, then the others by extrapolation SMAPE: the first
    # that can predict the large size (the naive baseline cannot: it has no size law)
    summary = ensemble.summary
    ranked = summary[summary["cv"] == "extrapolation"].sort_values("smape")["model"]
    order = [ensemble.selected] if ensemble.selected else []
    order += [m for m in ranked if m not in order and m in ensemble.models]
    return {
        "FiM": fim,
        "FiM-queue": queue,
        "RBASP": rbasp,
        "RBASP-lin": linear,
        "scaleprobe": ensemble,
        "order": order,
    }


def predict(models, test):
    """Predicted times of the test frame, per model, and scaleprobe's model's name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleprobeWarning)
        logs = test[["ranks"]].assign(log2_size=np.log2(test["size"]))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", MemoryRegimeWarning)
            fim = models["FiM"].predict(test[fim_columns(test)])
        for warning in caught:
            if issubclass(warning.category, MemoryRegimeWarning):
                print(f"FiM warns: {warning.message}")
        predicted = {
            "FiM": fim,
            "FiM-queue": models["FiM-queue"].predict(test[fim_columns(test)]),
            "RBASP": models["RBASP"].predict(logs),
            "RBASP-lin": models["RBASP-lin"].predict(logs),
        }
        for name in models["order"]:
            try:
                law = models["scaleprobe"].models[name]
                predicted["scaleprobe"] = law.predict(_law_frame(test))
                return predicted, name
            except ValueError:
                continue
    raise RuntimeError("no model of the ensemble predicts the large size")


def calibrated_interval(models, test):
    """The ensemble's calibrated interval of FiM for the test frame (its range over
    the plausible process laws, widened as held-out node counts and sizes showed),
    or None without one."""
    ensemble = models["scaleprobe"]
    interval = ensemble.intervals.get("fim")
    if interval is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ScaleprobeWarning)
        return interval.bounds(ensemble.models["fim"], _law_frame(test))


def table4(measured, predicted, ranks):
    """Bhimani et al. 2019's Table 4 for one model: errors, optimal q, rank
    correlation, chi2."""
    measured, predicted = np.asarray(measured), np.asarray(predicted)
    errors = 100 * np.abs(predicted - measured) / measured
    best_true, best_pred = int(np.argmin(measured)), int(np.argmin(predicted))
    rho = stats.spearmanr(measured, predicted).statistic
    # chi-square of the predicted against the measured times in ms (unit-dependent,
    # as the statistic is for anything but counts)
    chi2 = float(np.sum((measured * 1e3 - predicted * 1e3) ** 2 / (predicted * 1e3)))
    return {
        "best": float(errors.min()),
        "avg": float(errors.mean()),
        "worst": float(errors.max()),
        "optimal": ranks[best_pred],
        "actual_optimal": ranks[best_true],
        "step_off": abs(best_pred - best_true),
        "spearman": float(rho) if not math.isnan(rho) else 0.0,
        "chi2": chi2,
        "chi2_p": float(stats.chi2.sf(chi2, len(measured) - 1)),
    }


def bar_chart(results, path):
    """Fig. 5-style bars: measured and predicted time per process count, per kernel
    (log scale; predictions beyond 20x the largest measurement run off the top)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    figure, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6))
    axes = np.atleast_1d(axes)
    series = ["measured", "FiM", "RBASP", "RBASP-lin", "scaleprobe"]
    width = 0.16
    for axis, name in zip(axes, names, strict=True):
        result = results[name]
        positions = np.arange(len(result["ranks"]))
        for i, label in enumerate(series):
            values = (
                result["measured"]
                if label == "measured"
                else result["predicted"][label]
            )
            axis.bar(positions + (i - 2) * width, values, width, label=label)
        axis.set_xticks(positions, [str(r) for r in result["ranks"]])
        axis.set_yscale("log")
        low, high = np.min(result["measured"]), np.max(result["measured"])
        axis.set_ylim(low / 4, high * 20)  # an exploding extrapolation leaves the frame
        axis.set_xlabel("processes")
        axis.set_title(f"{name} ({result['large']})")
    axes[0].set_ylabel("time (s, virtual)")
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
