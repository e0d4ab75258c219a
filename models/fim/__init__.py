"""FiM (Bhimani et al. 2019): FiM-Cal's Markov chain of the computation, FiM-Com's
queueing simulation of the collectives, their sum, and the RBASP regression
baseline.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "COLLECTIVE_PATTERNS": "model",
    "FiM": "model",
    "FiMCal": "cal",
    "FiMCom": "com",
    "LoadLaw": "cache",
    "MEAN_COMPUTATION": "model",
    "PATTERNS": "queues",
    "PROCESS_LAWS": "processes",
    "RBASP": "rbasp",
    "ServiceLaws": "queues",
    "SizeLaw": "size",
    "TAILS": "wait",
    "calculation_time": "markov",
    "fim_measurements": "model",
    "simulate": "queues",
    "simulate_many": "queues",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
