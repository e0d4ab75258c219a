"""Benchmark: wall time of a whole profile through ``scaleprobe fit`` + ``project``.

Run:  python tests/benchmarks/bench_profiles.py [--relearn FILE] [--extrap PATH]
          [--series 2000] [--repeat 3]

Prints, side by side in one run:

- the RELeARN profile of Extra-P's test data (``tests/data/text/mpa/relearn_data.txt``
  of github.com/extra-p/extrap; ``--relearn``, default
  ``$SCALEPROBE_EXTERNAL_DATA/extrap-relearn/relearn_data.txt``) end to end:
  ``scaleprobe fit FILE`` then ``scaleprobe project MODELS --ranks 4096`` as
  commands, start-up included, against ``extrap --text FILE`` (Extra-P's default
  modeler, ``--extrap``, default ``extrap`` on PATH; skipped when not installed);
- a synthetic CSV profile of ``--series`` call paths over 8 rank counts (3
  repetitions, 2 % noise), each with a known law of Extra-P's normal form, through
  the same two commands, and the share of series whose prediction at 8 times the
  largest count is within 10 % of the true law.

Times are the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RANKS = np.array([16, 32, 64, 128, 256, 512, 1024, 2048], dtype=float)
#: Known laws: (exponent of p, exponent of log2 p).
TERMS = [(0.5, 0), (1.0, 0), (0.0, 1), (0.0, 2), (1.0, 1), (-1.0, 0), (0.25, 0)]


def _command(argv, repeat):
    """Median wall time of running ``argv`` ``repeat`` times (it must succeed)."""
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, text=True)
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds))


def _scaleprobe(path, folder, repeat):
    """Seconds of ``fit`` and of ``project`` on ``path``, and the model file."""
    command = shutil.which("scaleprobe", path=str(Path(sys.executable).parent))
    models = Path(folder) / "models.json"
    fit = _command([command, "fit", str(path), "--output", str(models)], repeat)
    project = _command([command, "project", str(models), "--ranks", "4096"], repeat)
    return fit, project, models


def _synthetic(path, count, seed=0):
    """A CSV profile of ``count`` call paths with known laws; the truth at 8x."""
    rng = np.random.default_rng(seed)
    rows, truth = ["ranks,callpath,time [s]"], {}
    far = RANKS[-1] * 8
    for index in range(count):
        i, j = TERMS[index % len(TERMS)]
        c0, c1 = rng.uniform(0.1, 2.0), rng.uniform(0.001, 0.1)

        def law(p, i=i, j=j, c0=c0, c1=c1):
            return c0 + c1 * p**i * np.log2(p) ** j

        name = f"region{index}"
        truth[name] = float(law(far))
        for p in RANKS:
            for value in law(p) * (1 + 0.02 * rng.standard_normal(3)):
                rows.append(f"{p:g},{name},{value:.6g}")
    Path(path).write_text("\n".join(rows) + "\n")
    return truth, far


def _accuracy(models, truth, far):
    """Share of series whose law is within 10 % of the truth at ``far``."""
    from scaleprobe.models.profiles import load_profile_fit

    fit = load_profile_fit(models)
    predicted = fit.project([far])
    hits = [
        abs(float(p[0]) / truth[m.callpath] - 1) <= 0.10
        for m, p in zip(predicted.models, predicted.predicted, strict=True)
    ]
    return float(np.mean(hits)), len(hits)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    data = os.environ.get("SCALEPROBE_EXTERNAL_DATA", "")
    parser.add_argument(
        "--relearn", default=os.path.join(data, "extrap-relearn", "relearn_data.txt")
    )
    parser.add_argument("--extrap", help="the extrap command (default: on PATH)")
    parser.add_argument("--series", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    extrap = args.extrap or shutil.which("extrap")
    with tempfile.TemporaryDirectory() as folder:
        if os.path.isfile(args.relearn):
            fit, project, _ = _scaleprobe(args.relearn, folder, args.repeat)
            line = f"RELeARN: scaleprobe fit {fit:.2f} s + project {project:.2f} s"
            if extrap:
                theirs = _command(
                    [extrap, "--text", args.relearn, "--disable-progress"], args.repeat
                )
                line += f" = {fit + project:.2f} s; Extra-P {theirs:.2f} s"
                line += f" (ratio {(fit + project) / theirs:.2f})"
            print(line)
        else:
            print(f"skip RELeARN: no file {args.relearn} (pass --relearn FILE)")
        csv = Path(folder) / "synthetic.csv"
        truth, far = _synthetic(csv, args.series)
        fit, project, models = _scaleprobe(csv, folder, args.repeat)
        share, count = _accuracy(models, truth, far)
        counts = json.loads(models.read_text())["series"]
        print(
            f"{args.series} synthetic series: scaleprobe fit {fit:.2f} s + project "
            f"{project:.2f} s = {fit + project:.2f} s; {len(counts)} modelled; "
            f"{share:.0%} of {count} within 10 % of the true law at {far:g} ranks "
            "(8x beyond)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
