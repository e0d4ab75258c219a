"""Every setting of ``scaleprobe.yaml`` arrives from a ``DASK_SCALEPROBE__...`` name.

Dask turns ``DASK_SCALEPROBE__CLUSTER__SLURM__NTASKS_PER_NODE=2`` into the key
``ntasks_per_node`` (a shell cannot put ``-`` in a variable's name); the packaged
default is ``ntasks-per-node``. Each key is set both ways in the environment of a
real ``python`` process, which reads it back through the one helper every setting
goes through, whole sections too.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from scaleprobe.kernels.schema import LINK_DEFAULTS

PACKAGED = Path(__file__).parents[2] / "framework" / "scaleprobe.yaml"


def _leaves(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_leaves(value, f"{name}."))
        else:
            out[name] = value
    return out


def _settings() -> dict:
    """Every key below ``scaleprobe`` and its packaged default."""
    tree = yaml.safe_load(PACKAGED.read_text())["scaleprobe"]
    tree["throttle"] = {**LINK_DEFAULTS, **tree["throttle"]}
    return _leaves(tree)


def _other(value):
    """A value unlike the default, of the same kind (text for a null default)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value + 0.5
    if value is None:
        return "/srv/set-from-the-environment"
    return f"{value}-from-env"


def _variable(key: str, style: str) -> str:
    parts = ["scaleprobe", *key.split(".")]
    if style == "snake":
        parts = [part.replace("-", "_") for part in parts]
    return "DASK_" + "__".join(part.upper() for part in parts)


READ_BACK = """
import json, sys
from scaleprobe.framework import config
keys, sections = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(json.dumps({
    "keys": {key: config.get(key) for key in keys},
    "snake": {key: config.get(key.replace("-", "_")) for key in keys},
    "sections": {name: config.get(name) for name in sections},
}))
"""


def _clean_environment() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}


@pytest.mark.parametrize("style", ["snake", "kebab"])
def test_every_setting_arrives_from_the_environment(style):
    settings = _settings()
    wanted = {key: _other(value) for key, value in settings.items()}
    env = _clean_environment()
    for key, value in wanted.items():
        env[_variable(key, style)] = str(value)
    sections = sorted({key.rpartition(".")[0] for key in settings})
    done = subprocess.run(
        [sys.executable, "-c", READ_BACK, json.dumps(list(settings)),
         json.dumps(sections)],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )  # fmt: skip
    seen = json.loads(done.stdout)
    assert seen["keys"] == wanted
    assert seen["snake"] == wanted
    for name in sections:  # a section read whole has kebab-case keys, set ones too
        section = seen["sections"][name]
        for key, value in wanted.items():
            parent, _, leaf = key.rpartition(".")
            if parent == name:
                assert section[leaf] == value, (name, leaf, section)


def test_the_packaged_defaults_hold_without_the_environment():
    settings = _settings()
    done = subprocess.run(
        [sys.executable, "-c", READ_BACK, json.dumps(list(settings)), "[]"],
        capture_output=True, text=True, env=_clean_environment(), timeout=120,
        check=True,
    )  # fmt: skip
    assert json.loads(done.stdout)["keys"] == settings


JOB_SCRIPT = """
from scaleprobe.framework.jobqueue import slurm_options
from dask_jobqueue import SLURMCluster
options = slurm_options()
with SLURMCluster(**options) as cluster:
    print(cluster.job_script())
"""


@pytest.mark.parametrize("style", ["snake", "kebab"])
def test_slurm_jobs_take_their_shape_and_lifetime_from_the_environment(style):
    """``--cluster slurm`` with the shape set as variables: the job script it submits
    (rendered by a real SLURMCluster, nothing submitted)."""
    env = _clean_environment()
    values = {
        "cluster.slurm.ntasks-per-node": 2,
        "cluster.slurm.nodes-per-job": 3,
        "cluster.slurm.lifetime-margin": 120,
        "cluster.slurm.lifetime-stagger": 30,
        "cluster.dashboard-address": ":0",
    }
    for key, value in values.items():
        env[_variable(key, style)] = str(value)
    env["DASK_JOBQUEUE__SLURM__WALLTIME"] = "01:00:00"
    done = subprocess.run(
        [sys.executable, "-c", JOB_SCRIPT],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    script = done.stdout
    assert "#SBATCH --nodes=3" in script
    assert "#SBATCH --ntasks-per-node=2" in script
    assert "#SBATCH -t 01:00:00" in script
    # 3600 s less the margin and the stagger: retired between 3390 and 3450 s
    assert "--lifetime 3450s --lifetime-stagger 30s" in script
    assert "--resources scaleprobe-nodes=3" in script
