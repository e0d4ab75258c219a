"""Performance models: scaling laws, traffic-informed models, evaluation, projection.

The models are grouped by family, one subpackage each: :mod:`~scaleprobe.models.laws`
(scaling laws), :mod:`~scaleprobe.models.traffic` (the traffic-informed model),
:mod:`~scaleprobe.models.fim` (FiM and RBASP), :mod:`~scaleprobe.models.commpredictor`
(the communication predictor), :mod:`~scaleprobe.models.analytic` (formulas), around
:mod:`~scaleprobe.models.core` (the interface, feature frames, warnings). Scores and
intervals live in :mod:`~scaleprobe.models.evaluation`, the choice of the model to
trust in :mod:`~scaleprobe.models.selection`, the fit workflow in
:mod:`~scaleprobe.models.ensemble`, projections in
:mod:`~scaleprobe.models.projection`, files in :mod:`~scaleprobe.models.io` and the
report in :mod:`~scaleprobe.models.report`.

Every model class implements :class:`PerformanceModel`
(:mod:`scaleprobe.models.core.interface`), and the model scaleprobe trusts for a
projection is chosen in one place, :func:`choose_model`
(:mod:`scaleprobe.models.selection.choose`), whose :class:`Verdict` the command line,
the report and the demo print with :func:`render_verdict`.

Every public name is imported on first use (:pep:`562`): ``import scaleprobe.models``
loads neither scikit-learn, pandas, xarray, Dask nor matplotlib.

>>> from scaleprobe.models import ScalingLaw, crossover_nodes
>>> eq6 = ScalingLaw.from_coefficients("refined", [118.026, 5.968], alpha=1.11, ppn=18)
>>> crossover_nodes(eq6, admissible=[4, 9, 16, 25, 36])
25
"""

from __future__ import annotations

from ._lazy import attach

#: Public name -> submodule (of a family's subpackage) that defines it.
_EXPORTS = {
    "BASELINE": "evaluation.crossval",
    "CommunicationPredictor": "commpredictor.predictor",
    "DegenerateFitWarning": "core.warnings",
    "EnsembleFit": "ensemble.result",
    "ExtrapolationSplit": "evaluation.splitters",
    "ExtrapolationWarning": "core.warnings",
    "FiM": "fim.model",
    "FiMCal": "fim.cal",
    "FiMCom": "fim.com",
    "FlatTrend": "laws.flat",
    "InsufficientDataWarning": "core.warnings",
    "LeaveOneBandwidthOut": "evaluation.splitters",
    "LeaveOneScaleOut": "evaluation.splitters",
    "MEASUREMENT_FORMATS": "io.readers",
    "METRICS": "evaluation.metrics",
    "MeasurementFileError": "io.readers",
    "MemoryRegimeWarning": "core.warnings",
    "NoTrendWarning": "core.warnings",
    "NoiseWarning": "core.warnings",
    "PMNFSearch": "laws.pmnf",
    "PMNF_EXPONENTS": "laws.pmnf",
    "PRESETS": "laws.scaling_law",
    "PerformanceModel": "core.interface",
    "PhysicalLimitWarning": "core.warnings",
    "PowerLawBaseline": "laws.baseline",
    "PredictionInterval": "evaluation.intervals",
    "RBASP": "fim.rbasp",
    "RELIABLE_SMAPE": "selection.limits",
    "Verdict": "selection.choose",
    "RegimeChangeWarning": "core.warnings",
    "RegimeTrend": "laws.baseline",
    "RoundLaw": "laws.rounds",
    "ScaleprobeWarning": "core.warnings",
    "ScalingLaw": "laws.scaling_law",
    "Term": "laws.terms",
    "TrafficModel": "traffic.model",
    "UnreliableModelWarning": "core.warnings",
    "bandwidth_demand": "projection.derived",
    "build_pattern": "commpredictor.patterns",
    "calibrate_axis": "evaluation.intervals",
    "calibrate_interval": "evaluation.intervals",
    "choose_model": "selection.choose",
    "cannot_tell_from": "projection.grid",
    "completion_time_increment": "projection.derived",
    "crossover_nodes": "projection.derived",
    "data_size": "core.features",
    "default_cv": "evaluation.crossval",
    "default_ensemble": "ensemble.fit",
    "describe_model": "core.interface",
    "diminishing_returns_nodes": "projection.derived",
    "evaluate": "evaluation.crossval",
    "fit_ensemble": "ensemble.fit",
    "link_of": "core.features",
    "load_measurements": "io.readers",
    "load_models": "io.serialization",
    "make_features": "core.features",
    "measurement_format": "io.readers",
    "parallel_efficiency": "projection.derived",
    "parse_term": "laws.terms",
    "pattern_metrics": "commpredictor.patterns",
    "prediction_frame": "core.features",
    "project": "projection.grid",
    "render_verdict": "selection.choose",
    "save_models": "io.serialization",
    "score_predictions": "evaluation.metrics",
    "select_model": "selection.rules",
    "speedup": "projection.derived",
    "summarize": "evaluation.crossval",
    "teps": "projection.derived",
    "trend_tests": "laws.flat",
    "wide_nodes": "projection.grid",
    "write_report": "report.document",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
