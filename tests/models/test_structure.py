"""The shape of the models' code, enforced: one interface, short functions, no import
cycles, lazy packages.

Every model class of :mod:`scaleprobe.models` is a
:class:`~scaleprobe.models.PerformanceModel` and answers its questions itself; no
code of ``models/`` or ``framework/`` outside the interface module tells models
apart by their class or by the attributes they happen to have; in ``models/`` and
the framework's files of the model commands no function is longer than 80 lines and
no module imports one that imports it back; and ``import scaleprobe.models`` loads
none of the heavy libraries until a name is used.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scaleprobe import models
from scaleprobe.models import PerformanceModel, make_features
from sklearn.base import RegressorMixin

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
#: The framework's files of the model commands.
FRAMEWORK_FILES = [
    ROOT / "framework" / name
    for name in ("_cli_models.py", "_cli_comm.py", "_cli_model_args.py", "demo.py")
]
INTERFACE = MODELS / "core" / "interface.py"


def _modules():
    names = []
    for info in pkgutil.walk_packages(models.__path__, "scaleprobe.models."):
        names.append(info.name)
    return sorted(names)


def _model_classes():
    """Every regressor defined in scaleprobe.models (its modules, not imports)."""
    found = {}
    for name in _modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, RegressorMixin)
                and value.__module__ == name
            ):
                found[value.__name__] = value
    return found


def _sources():
    files = sorted(MODELS.rglob("*.py")) + FRAMEWORK_FILES
    return {path: ast.parse(path.read_text(), str(path)) for path in files}


# ------------------------------------------------------------------ the interface


def test_every_model_class_is_found():
    names = set(_model_classes())
    # the families: laws, traffic, FiM, the communication predictor, formulas
    assert {
        "ScalingLaw",
        "PMNFSearch",
        "PowerLawBaseline",
        "RegimeTrend",
        "FlatTrend",
        "RoundLaw",
        "TrafficModel",
        "FiM",
        "FiMCal",
        "FiMCom",
        "RBASP",
        "CommunicationPredictor",
        "SubgraphComplexity",
    } <= names


def _training(name):
    """Small data each model fits quickly, and rows to predict."""
    n = np.array([1, 2, 4, 8, 16] * 3, dtype=float)
    rng = np.random.default_rng(0)
    noise = np.exp(0.02 * rng.standard_normal(n.size))
    frame = pd.DataFrame({"nodes": n, "ppn": 1.0, "ranks": n})
    y = (10 / n + 0.5 * np.log2(n) + 1) * noise
    new = pd.DataFrame({"nodes": [32.0, 64.0], "ppn": 1.0, "ranks": [32.0, 64.0]})
    if name == "TrafficModel":
        frame = frame.assign(
            bandwidth=100.0,
            link_bandwidth=1e9,
            latency=1e-6,
            cp_comp_time=10 / n * noise,
            cp_latency_time=1e-6 * 3 * (n - 1),
            cp_bandwidth_time=8e6 / n / 1e9 * (n > 1),
            cp_intra_time=0.0,
        )
        y = frame[["cp_comp_time", "cp_latency_time", "cp_bandwidth_time"]].sum(axis=1)
        new = new.assign(bandwidth=100.0)
    if name == "RoundLaw":
        return n.reshape(-1, 1), 3 * np.log2(n) + 2, np.array([[32.0], [64.0]])
    if name in ("FiMCom", "FiMCal", "SubgraphComplexity", "CommunicationPredictor"):
        return _arrays(name)
    return frame, np.asarray(y, dtype=float), new


def _arrays(name):
    if name == "FiMCom":
        X = np.array([(1, 2), (1, 4), (300, 2), (300, 4), (3000, 4)], dtype=float)
        return X, 2e-5 * np.log2(X[:, 1]) + X[:, 0] * 6.4e-8, X[:2] * [10, 4]
    if name == "FiMCal":
        X = np.column_stack([np.repeat([1e5, 2e5, 4e5], 3), np.tile([1, 2, 4], 3)])
        return X, 1e-7 * X[:, 0] / X[:, 1], np.array([[1e6, 8.0]])
    if name == "SubgraphComplexity":
        rows = [(p, 1e4, 5e4, 147, 434) for p in (1, 2, 4, 8)]
        X = np.array(rows, dtype=float)
        return X, 1e-8 * X[:, 4] * X[:, 2] / X[:, 0] + 1e-3, X[:2] * [4, 1, 1, 1, 1]
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"S": 2.0 ** rng.integers(7, 24, 60), "M": 1.0 + rng.random(60)})
    X["NT"] = X["S"] * X["M"]
    return X, 1e-5 + X["NT"] / 1e9, X.iloc[:3]


def _instance(cls):
    light = {
        "PMNFSearch": {"max_terms": 1},
        "FiMCom": {"replications": 2, "calibration_replications": 1, "max_iter": 5},
        "FiM": {"replications": 3},
        "CommunicationPredictor": {"max_terms": 1, "candidates": 2, "folds": 2},
    }
    return cls(**light.get(cls.__name__, {}))


@pytest.mark.parametrize("name", sorted(_model_classes()))
def test_every_model_class_implements_the_interface(name):
    cls = _model_classes()[name]
    model = _instance(cls)
    assert isinstance(model, PerformanceModel)
    assert model.interval_method in ("consistent-range", "conformal")
    X, y, new = _training(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small data: degenerate fits are expected
        fitted = model.fit(X, y)
        prediction = np.asarray(fitted.predict(new), dtype=float)
        lower, upper = fitted.predict_interval(new)  # the default level, 0.9
        parts = fitted.predict_components(new)
    assert isinstance(fitted, PerformanceModel)
    finite = np.isfinite(lower) & np.isfinite(upper)
    assert finite.any(), (lower, upper)
    assert np.all(lower[finite] <= prediction[finite] * (1 + 1e-9))
    assert np.all(prediction[finite] <= upper[finite] * (1 + 1e-9))
    split = {"computation", "communication"} <= set(parts.columns)
    assert split or list(parts.columns) == ["total"]
    if not split:
        np.testing.assert_allclose(parts["total"], prediction)
    assert isinstance(fitted.describe(), str)
    assert fitted.describe()
    assert "\n" not in fitted.describe()
    ranges = fitted.fitted_ranges_
    assert ranges
    assert all(low <= high for low, high in ranges.values())


def test_the_default_level_is_the_same_everywhere():
    for name, cls in _model_classes().items():
        level = inspect.signature(cls.predict_interval).parameters["level"]
        assert level.default == 0.9, name
        assert level.kind is inspect.Parameter.KEYWORD_ONLY, name


def test_a_traffic_model_knows_its_floor_and_prices_the_link():
    X, y, new = _training("TrafficModel")
    model = models.TrafficModel().fit(X, y)
    assert model.has_floor
    assert model.prices_link
    assert model.structural
    assert np.all(model.floor(new) > 0)
    time_only = models.TrafficModel().fit(X[["nodes"]], y)
    assert not time_only.has_floor
    X, y, _ = _training("ScalingLaw")
    law = models.ScalingLaw(terms=["1/p", "log2(p)", "1"]).fit(X, y)
    assert not law.has_floor
    assert not law.prices_link
    assert not law.structural
    assert np.isnan(law.floor(new)).all()


# ---------------------------------------------------------------------- dispatch

#: Attributes of objects that are not models, which code may test for.
_DUCK_TYPES = {"columns", "item", "tolist", "shape", "read", "keys"}
#: scikit-learn's own fitted attributes, which every estimator has or lacks alike.
_SKLEARN = {"feature_names_in_", "n_features_in_"}


def _dispatch(tree, classes):
    """Lines that dispatch on a model's class or on its attributes."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name, args = node.func.id, node.args
        if name == "isinstance" and len(args) == 2:
            kinds = args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]]
            named = {k.id for k in kinds if isinstance(k, ast.Name)}
            named |= {k.attr for k in kinds if isinstance(k, ast.Attribute)}
            if named & classes:
                found.append((node.lineno, ast.unparse(node)))
        elif name == "hasattr" or (name == "getattr" and len(args) == 3):
            owner, attribute = args[0], args[1]
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue  # a class reading its own optional state
            if not isinstance(attribute, ast.Constant):
                continue
            text = attribute.value
            model_like = text.endswith("_") or text.startswith("predict")
            model_like |= text in ("floor", "describe", "s0", "ppn", "form", "terms")
            if text in _DUCK_TYPES or text in _SKLEARN or not model_like:
                continue
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_dispatch_on_model_classes_or_attributes_outside_the_interface():
    classes = set(_model_classes())
    files = sorted(MODELS.rglob("*.py")) + sorted((ROOT / "framework").rglob("*.py"))
    offenders = []
    for path in files:
        if path == INTERFACE:
            continue
        tree = ast.parse(path.read_text(), str(path))
        offenders += [(path.name, *hit) for hit in _dispatch(tree, classes)]
    assert offenders == []


def test_the_dispatch_scan_catches_what_it_forbids():
    # The test above could not fail if the scan never saw anything.
    code = textwrap.dedent(
        """
        if isinstance(model, (TrafficModel, FiM)):
            pass
        prices = hasattr(model, "floor")
        law = getattr(model, "best_estimator_", model)
        ranged = hasattr(fitted, "predict_interval")
        fine = hasattr(X, "columns") or hasattr(self, "training_")
        """
    )
    hits = _dispatch(ast.parse(code), {"TrafficModel", "FiM"})
    assert [line for line, _ in hits] == [2, 4, 5, 6]


_PROBE = textwrap.dedent(
    """
    import json, sys
    __import__(sys.argv[1])
    heavy = ("sklearn", "pandas", "xarray", "matplotlib", "distributed", "dask",
             "mpi4py", "scipy")
    print(json.dumps([m for m in heavy if m in sys.modules]))
    """
)


def _loaded(module):
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, module],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return json.loads(out)


def test_importing_the_models_loads_no_heavy_library():
    assert _loaded("scaleprobe.models") == []
    assert _loaded("scaleprobe.models.selection") == []


def test_using_a_name_loads_what_it_needs():
    # The check above could not fail if the probe never saw anything.
    assert "sklearn" in _loaded("scaleprobe.models.laws.scaling_law")


def test_every_package_exports_what_it_lists_and_no_name_hides_a_module():
    for name in ["scaleprobe.models", *_modules()]:
        package = importlib.import_module(name)
        if not hasattr(package, "__path__"):
            continue
        submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
        exports = package._EXPORTS
        assert sorted(exports) == list(package.__all__), name
        assert not set(exports) & submodules, name
        for public in package.__all__:
            assert getattr(package, public) is not None, (name, public)


def test_the_public_names_of_the_models_stay_importable():
    # the names scaleprobe.models exported before its families had packages
    assert callable(models.fit_ensemble)
    assert callable(models.project)
    assert models.make_features is make_features
    assert set(models.__all__) >= {
        "ScalingLaw",
        "PMNFSearch",
        "TrafficModel",
        "FiM",
        "RBASP",
        "CommunicationPredictor",
        "fit_ensemble",
        "default_ensemble",
        "evaluate",
        "select_model",
        "project",
        "write_report",
        "load_models",
        "save_models",
        "load_measurements",
        "describe_model",
    }
