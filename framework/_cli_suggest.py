"""``scaleprobe suggest STORE``: what to measure next, and the spec that does it."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

__all__ = ["register"]

BAD_INPUT = 2
FAILURE = 1


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a whole number of at least 1, got {text!r}"
        )
    return value


def _hours(seconds):
    if seconds >= 3600:
        return f"{seconds / 3600:.2g} h"
    if seconds >= 60:
        return f"{seconds / 60:.2g} min"
    return f"{seconds:.2g} s"


def _note(row):
    from ._adaptive_record import round_note

    note = round_note(row)
    return f" ({note})" if note else ""


def _print_small_picks(plan):
    """Say what an adaptive round measures of the plan, when not all of it: the
    runs that narrow the width by under ROUND_GAIN each wait for its next plan,
    and new counts are measured once, alone, before they are planned again."""
    from .adaptive import ROUND_GAIN, ROUND_REACH, round_picks, worthwhile_picks

    worthwhile, first = worthwhile_picks(plan), round_picks(plan)
    if len(first) == len(plan):
        return
    small = len(plan) - len(worthwhile)
    words = []
    if small:
        words.append(
            f"{small} of these run(s) narrow the width by under "
            f"{100 * ROUND_GAIN:g} % each"
        )
    if any(plan[i].candidate.new for i in first):
        words.append(
            f"run --until offers new counts up to {ROUND_REACH:g}x the largest "
            "measured, measures one run at each first and plans again with what "
            "it took"
        )
    else:
        words.append(
            f"run --until measures the other {len(first)} first and plans again "
            "with what they measured"
        )
    print("; ".join(words))


def _print_ranking(suggestion, shown):
    design, state = suggestion.design, suggestion.state
    laws = ", ".join(law.name for law in state.laws)
    print(
        f"target: {suggestion.metric} at {state.target:g} nodes; interval width "
        f"now {design.width_now:.3g}x (upper/lower) from {len(state.x)} node counts"
    )
    print(
        f"plausible laws: {laws}; run-to-run noise {100 * state.noise:.2g} % (log); "
        f"interval factor {state.rate:.2g} (its half-width, in log, over the laws' "
        "spread plus the distance and the noise)"
    )
    if state.unchecked:
        print(
            "no law held its check on the largest count: the closest are kept, "
            "and the interval factor is at least 1 (uncalibrated: the scale itself)"
        )
    for x, statuses in suggestion.failed.items():
        print(
            f"not offered: nodes={x:g}, every stored run {'/'.join(statuses)}; "
            f"`scaleprobe run SPEC --retry {','.join(statuses)}` measures it again"
        )
    print("candidates, best narrowing per core-hour first:")
    for rank, ranked in enumerate(design.ranking[:shown], 1):
        what = "new" if ranked.candidate.new else "repeat"
        print(
            f"{rank:3d}. nodes={ranked.candidate.x:g} ({what}, "
            f"{_hours(ranked.wall_seconds)} wall, {ranked.core_seconds / 3600:.3g} "
            f"core-h): {ranked.reason}"
        )


def _suggest(args) -> int:
    from .suggest import extension_spec, suggest

    try:
        suggestion = suggest(
            args.store,
            args.target,
            args.budget,
            metric=args.metric,
            max_nodes=args.max_nodes,
        )
    except ValueError as error:
        print(f"scaleprobe: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return BAD_INPUT
    _print_ranking(suggestion, args.show)
    design = suggestion.design
    picked = {}
    for ranked in design.plan:
        picked[ranked.candidate.x] = picked.get(ranked.candidate.x, 0) + 1
    runs = ", ".join(f"{n} x nodes={x:g}" for x, n in picked.items()) or "nothing"
    print(
        f"plan within {suggestion.budget.text}: {runs}; {len(design.plan)} run(s), "
        f"{_hours(design.spent_wall)} wall, {design.spent_core / 3600:.3g} core-h; "
        f"expected width {design.width_planned:.3g}x"
    )
    _print_small_picks(design.plan)
    if args.write is None:
        return 0
    points, spent = extension_spec(suggestion, args.write)
    if not points:
        print("scaleprobe: nothing to write: no point fits the budget")
        return 0
    kind = "wall" if suggestion.budget.kind == "wall" else "core-seconds"
    print(
        f"spec for these {len(points)} point(s) (predicted {_hours(spent)} "
        f"{kind}) written to {args.write}:"
    )
    for point in points:
        print(f"  {point.label()}")
    print(f"measure them with: scaleprobe run {args.write}")
    return 0


def register(subparsers) -> None:
    """Add the ``suggest`` subcommand.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``.
    """
    parser = subparsers.add_parser(
        "suggest",
        help="rank the runs that narrow a projection's interval most per cost",
        description="Rank the points of a stored campaign's grid, and node counts "
        "outside it that its rules admit, by the expected narrowing of the "
        "interval at the target per core-hour (more runs at a measured count "
        "included); print why, plan what the budget affords and write it as a "
        "spec that resumes the campaign.",
    )
    parser.add_argument("store", help="results store of the campaign")
    parser.add_argument(
        "--target",
        required=True,
        help="where the interval is wanted: 'nodes=1024', with every other swept "
        "key that has several values ('nodes=1024 bandwidth=25')",
    )
    parser.add_argument(
        "--budget",
        required=True,
        help="what the plan may spend: wall time ('2 h') or core-hours ('40 core-h')",
    )
    parser.add_argument("--metric", default="time", help="the metric (default: time)")
    parser.add_argument(
        "--max-nodes",
        type=_positive_int,
        help="largest node count to consider (default: 4 x the grid's largest)",
    )
    parser.add_argument(
        "--show", type=_positive_int, default=10, help="candidates to list (10)"
    )
    parser.add_argument(
        "--write", metavar="SPEC", help="write the plan as a spec file (YAML)"
    )
    parser.set_defaults(handler=_suggest)


def add_until_arguments(run) -> None:
    """Add ``--until`` and ``--budget`` to ``scaleprobe run``.

    Parameters
    ----------
    run : argparse.ArgumentParser
        The ``run`` subcommand's parser.
    """
    run.add_argument(
        "--until",
        help="adaptive campaign: after the sweep, measure suggested points until "
        "'width <= W at nodes=N' (the interval's upper / lower at the target)",
    )
    run.add_argument(
        "--budget",
        help="with --until: wall time ('2 h') or core-hours ('40 core-h') to spend",
    )


def _until_problem(args):
    """Why ``run --until`` cannot take these arguments (None when it can)."""
    if not (args.until and args.budget):
        return (
            "--until and --budget go together, e.g. --until "
            "'width <= 1.3 at nodes=1024' --budget '2 h'"
        )
    given = [
        flag
        for flag, value in (
            ("--retry", args.retry),
            ("--new-campaign", args.new_campaign),
            ("--dask-mpi", args.dask_mpi),
        )
        if value
    ]
    if given:
        return (
            f"{given[0]} does not go with --until: run the sweep with it first "
            f"(scaleprobe run SPEC {given[0]} ...), then --until resumes the campaign"
        )
    return None


def run_adaptive(args) -> int:
    """Run ``scaleprobe run SPEC --until ... --budget ...``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0; 1 when no point of the sweep succeeded (nothing to plan from); 2 on
        bad input.
    """
    from .adaptive import parse_until, run_until
    from .cluster import named_cluster
    from .spec import load_spec

    problem = _until_problem(args)
    if problem:
        print(f"scaleprobe: error: {problem}", file=sys.stderr)
        return BAD_INPUT
    try:
        parse_until(args.until)  # a bad goal is told before the spec is read
        spec = load_spec(args.spec)
        if args.output:
            spec = dataclasses.replace(spec, output=os.path.abspath(args.output))
        with named_cluster(
            address=args.address,
            scheduler_file=args.scheduler_file,
            backend=args.cluster,
        ) as client:
            campaign = run_until(
                spec, args.until, args.budget, client, workers=args.workers
            )
    except ValueError as error:
        print(f"scaleprobe: error: {str(error).splitlines()[0]}", file=sys.stderr)
        return BAD_INPUT
    for number, row in enumerate(campaign.rounds, 1):
        print(
            f"round {number}: width {row['width']:.3g}x "
            f"[{row['lower']:.4g}, {row['upper']:.4g}] after {_hours(row['spent'])}"
            f", then {row['points']} point(s){_note(row)}"
        )
    print(f"scaleprobe: stopped: {campaign.reason}")
    return FAILURE if campaign.measured_nothing else 0
