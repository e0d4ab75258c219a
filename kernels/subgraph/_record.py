"""The kernel record of a distributed count (metrics, trials, profiles, units)."""

from __future__ import annotations

import resource

import numpy as np
from scaleprobe.kernels.subgraph._dp import computed_subtemplates
from scaleprobe.kernels.subgraph.distributed import exchanged_size, intensity

UNITS = {
    "estimate": "1",
    "estimate_mean": "1",
    "estimate_std": "1",
    "iterations": "1",
    "time": "s",
    "time_per_iteration": "s",
    "total_time": "s",
    "wall_time": "s",
    "comp_time": "s",
    "comm_time": "s",
    "comp_time_max": "s",
    "comm_time_max": "s",
    "bytes_sent": "bytes",
    "bytes_inter": "bytes",
    "bytes_intra": "bytes",
    "messages": "1",
    "messages_inter": "1",
    "peak_rss": "bytes",
    "slot_wait_time": "s",
    "exchange_peak_bytes": "bytes",
    "modelled_overlap": "1",
    "setup_rss": "bytes",
    "counting_rss": "bytes",
    "wait_time": "s",
    "modelled_transfer_time": "s",
    "exchange_bytes": "bytes",
    "iteration_estimate": "1",
    "iteration_time": "s",
}


def assemble_record(
    comm,
    graph,
    template,
    local,
    exchanger,
    plan,
    summary,
    counted,
    *,
    estimates,
    times,
    elapsed,
    settings,
    estimate,
    setup_rss,
) -> dict:
    """Gather the per-rank statistics and build the record (collective)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    mine = {
        "sub": exchanger.sub,
        "step": exchanger.step,
        "rss": rss,
        "setup_rss": setup_rss,
        "comp": counted["comp_time"],
        "comm": counted["comm_time"],
        "tasks": local.local.n_tasks + sum(g.n_tasks for g in local.ghosts.values()),
        "max_task": max(
            [local.local.max_task] + [g.max_task for g in local.ghosts.values()]
        ),
    }
    everyone = comm.allgather(mine)
    sub = {key: np.array([r["sub"][key] for r in everyone]) for key in exchanger.sub}
    step = {key: np.array([r["step"][key] for r in everyone]) for key in exchanger.step}
    computed = [
        i
        for i in computed_subtemplates(template)
        if template.subtemplates[i].active is not None
    ]
    subs = template.subtemplates
    memory, computation = template.complexity()
    transfer = step["transfer_time"].sum()
    metrics = {
        "estimate": estimate,
        "estimate_mean": float(np.mean(estimates)),
        "estimate_std": float(np.std(estimates)),
        "iterations": len(estimates),
        "time": elapsed,
        "time_per_iteration": elapsed / len(estimates),
        "total_time": summary["time"],
        **{k: v for k, v in summary.items() if k != "time"},
        "comp_time": float(np.mean([r["comp"] for r in everyone])),
        "comm_time": float(np.mean([r["comm"] for r in everyone])),
        "comp_time_max": float(np.max([r["comp"] for r in everyone])),
        "comm_time_max": float(np.max([r["comm"] for r in everyone])),
        "ranks": comm.size,
        "k": template.k,
        "n_vertices": graph.n_vertices,
        "n_edges": graph.n_edges,
        "automorphisms": template.automorphisms(),
        "memory_complexity": memory,
        "computation_complexity": computation,
        "computation_intensity": computation / memory if memory else 0.0,
        "threshold": settings["threshold"],
        "pipelined_subtemplates": int(sum(plan[i] for i in computed)),
        "subtemplates": len(computed),
        "exchange_peak_bytes": float(sub["exchange_bytes"].max()),
        "setup_rss": int(max(r["setup_rss"] for r in everyone)),
        "counting_rss": int(max(r["rss"] - r["setup_rss"] for r in everyone)),
        "task_size": settings["task_size"] or 0,
        "tasks": int(sum(r["tasks"] for r in everyone)),
        "max_task": int(max(r["max_task"] for r in everyone)),
    }
    # Transfer times come from the link model, not from the network: named as
    # modelled, and left out where no model acts (mode none, the real interconnect).
    modelled = comm.mode != "none"
    if modelled:
        metrics["modelled_overlap"] = (
            float(step["overlapped"].sum() / transfer) if transfer > 0 else 0.0
        )
    profiles = {
        "subtemplate": {
            "subtemplate_index": computed,
            "subtemplate_size": [subs[i].size for i in computed],
            "active_size": [subs[subs[i].active].size for i in computed],
            "exchanged_size": [exchanged_size(template, i) for i in computed],
            "intensity": [intensity(template, i) for i in computed],
            "pipelined": [int(plan[i]) for i in computed],
            "comp_time": sub["comp_time"].mean(axis=0)[computed],
            "comm_time": sub["comm_time"].mean(axis=0)[computed],
            "bytes_sent": sub["bytes_sent"].sum(axis=0)[computed],
            "exchange_bytes": sub["exchange_bytes"].max(axis=0)[computed],
        },
        "rank": {
            "peak_rss": [r["rss"] for r in everyone],
            "counting_rss": [r["rss"] - r["setup_rss"] for r in everyone],
            "comp_time": [r["comp"] for r in everyone],
            "comm_time": [r["comm"] for r in everyone],
        },
    }
    if comm.size > 1 and transfer > 0:
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = step["overlapped"].sum(axis=0) / step["transfer_time"].sum(axis=0)
        profiles["step"] = {
            "comp_time": step["comp_time"].mean(axis=0),
            "wait_time": step["wait_time"].mean(axis=0),
        }
        if modelled:
            profiles["step"].update(
                modelled_transfer_time=step["transfer_time"].mean(axis=0),
                modelled_overlap=np.where(np.isfinite(rho), rho, 0.0),
            )
    units = dict(UNITS)
    units.update(
        {
            "subtemplate_size": "1",
            "active_size": "1",
            "exchanged_size": "1",
            "intensity": "1",
            "pipelined": "1",
            "subtemplate_index": "1",
        }
    )
    for dim, variables in profiles.items():
        for name in variables:
            if name in units:
                # A sweep Dataset names a profile variable that shadows a metric
                # <name>_<dim>; give it the same unit.
                units[f"{name}_{dim}"] = units[name]
    record = {
        "kernel": "subgraph",
        "status": "ok",
        "metrics": metrics,
        "profiles": profiles,
        "units": units,
        "link": comm.link_record().to_dict(),
        "long_names": {
            "estimate": "estimated number of non-induced embeddings (median of means)",
            "time": "completion time of the counting iterations",
            "modelled_overlap": "modelled transfer time overlapped by computation "
            "(Eq. 14)",
            "modelled_transfer_time": "modelled transfer time of a pipeline ring step",
            "exchange_peak_bytes": "largest live exchange buffers of one rank",
            "counting_rss": "peak resident size growth while counting, largest rank",
        },
        "settings": settings | {"template": template.name, "graph": graph.name},
    }
    if len(estimates) <= 1000:
        record["trials"] = [
            {"iteration_estimate": float(e), "iteration_time": float(t)}
            for e, t in zip(estimates, times, strict=True)
        ]
    return record
