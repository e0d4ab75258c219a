"""What FiM regresses on the application parameters besides Eq. 11: the calls and
the data points per call of each collective, and a rank's working set."""

from __future__ import annotations

import itertools

import numpy as np

from ..core.warnings import InsufficientDataWarning, MemoryRegimeWarning, warn
from ..laws.lsq import nnls


def _count_basis(x, q, jobs):
    """Regressors of a collective's calls (``jobs=False``) or data points per call."""
    ones = np.ones((len(q), 1))
    if not jobs:
        return np.hstack([ones, x])
    share = ((q - 1) / q)[:, None]
    others = (q > 1).astype(float)[:, None]
    return np.hstack(
        [
            ones,
            others,
            (q - 1)[:, None],
            (q * (q - 1))[:, None],
            x,
            x * others,
            x * share,
            x * share / q[:, None],
        ]
    )


def _calls_basis(x, q, per):
    """Regressors of a collective's calls in a run: ``per`` (the iterations timed)
    times 1 and the application parameters, then 1 and the parameters again for
    the calls made once a run (a scatter of the input before the iterations)."""
    once = _count_basis(x, q, False)
    return np.hstack([np.asarray(per, float)[:, None] * once, once])


def _calls(coef, x, q, per):
    """A kind's calls in a run from :func:`_calls_basis`'s coefficients; a model
    fitted before the calls once a run were told apart has only the per-iteration
    ones."""
    once = _count_basis(x, q, False)
    if len(coef) == once.shape[1]:
        return np.asarray(per, float) * (once @ coef)
    return _calls_basis(x, q, per) @ coef


#: The data-point regressors of :func:`_count_basis` by position, as a form names
#: them (``x`` an application parameter).
JOB_TERMS = (
    "1",
    "[q > 1]",
    "(q - 1)",
    "q (q - 1)",
    "x",
    "x [q > 1]",
    "x (q - 1)/q",
    "x (q - 1)/q**2",
)
_ONE, _OTHERS, _SENDERS, _PAIRS, _X, _X_OTHERS, _X_SHARE, _X_SHARE_Q = range(8)

#: The data points of a call in the order a collective kind moves them, to choose
#: among forms that reproduce the measured counts alike (measured at a single count of
#: two or more processes, ``[q > 1]``, ``q - 1`` and ``q (q - 1)`` are one form up to
#: a factor): a scatter sends ``N (q - 1)/q``, a gather receives ``q - 1`` ranks'
#: partial sums or ``N (q - 1)/q`` of a distributed vector, a broadcast and an
#: allreduce move the same vector whatever ``q``, an allgather's ring brings every rank
#: the ``N (q - 1)/q`` others hold, an all-to-all ``q (q - 1)`` counts or
#: ``N (q - 1)/q**2`` keys per rank.
PREFERRED_FORMS = {
    "scatter": (_X_SHARE, _SENDERS, _OTHERS, _X_OTHERS),
    "gather": (_SENDERS, _X_SHARE, _OTHERS, _X_OTHERS),
    "broadcast": (_OTHERS, _X_OTHERS, _SENDERS, _X_SHARE),
    "allreduce": (_OTHERS, _X_OTHERS, _SENDERS, _X_SHARE),
    "allgather": (_X_SHARE, _SENDERS, _OTHERS, _X_OTHERS),
    "alltoall": (_PAIRS, _X_SHARE_Q, _SENDERS, _X_SHARE),
}


#: Largest number of count-basis columns tried one subset at a time.
_MOST_TERMS = 3


def _count_forms(basis, counts, tolerance=1e-6):
    """Every smallest set of columns of ``basis`` whose non-negative combination
    reproduces ``counts`` (within ``tolerance``, relative): their coefficients, in
    the order of the columns; empty when no set of at most ``_MOST_TERMS`` does."""
    scale = max(float(np.linalg.norm(counts)), 1e-300)
    columns = basis.shape[1]
    for size in range(1, min(columns, len(counts), _MOST_TERMS) + 1):
        forms = []
        for subset in itertools.combinations(range(columns), size):
            part, residual = nnls(basis[:, subset], counts)
            if residual <= tolerance * scale:
                coef = np.zeros(columns)
                coef[list(subset)] = part
                forms.append(coef)
        if forms:
            return forms
    return []


def _rank(coef, prefer):
    """Sort key of a form of the data points per call: the place in ``prefer`` of
    its most preferred term (:data:`JOB_TERMS`; a term of an application parameter
    is a column per parameter)."""
    width = (len(coef) - 4) // 4  # application parameters
    terms = [c if c < 4 else 4 + (c - 4) // max(width, 1) for c in np.flatnonzero(coef)]
    return min(
        (prefer.index(t) if t in prefer else len(prefer) + t for t in terms),
        default=0,
    )


def _fit_counts(basis, counts, tolerance=1e-6, prefer=(), forms=None):
    """Non-negative coefficients of ``counts`` on the fewest columns of ``basis``.

    Counts of calls and data points are exact, and a few process counts cannot tell
    apart every form that passes through them (a broadcast's ``N`` for ``q > 1``
    is also ``2/3 N (q-1)/q + 8/3 N (q-1)/q**2`` on ``q = 1, 2, 4``, which falls to
    0.73 N at 32). The smallest set of columns that reproduces the counts (within
    ``tolerance``, relative) is the form they take; when several do (counts of one
    multi-process count: ``N/2`` on two processes is ``N/2 [q > 1]`` and
    ``N (q - 1)/q`` alike), the one whose columns come first in ``prefer`` (the
    collective's own form, :data:`PREFERRED_FORMS`); without one of at most
    ``_MOST_TERMS`` columns, NNLS on all. ``forms``: :func:`_count_forms` of the
    same counts, when the caller has them.
    """
    if forms is None:
        forms = _count_forms(basis, counts, tolerance)
    if not forms:
        return nnls(basis, counts)[0]
    return min(forms, key=lambda coef: _rank(coef, tuple(prefer)))


def _form_text(coef, parameters):
    """``"0.5 points [q > 1]"``: a form of the data points per call, as text."""
    width = len(parameters)
    terms = []
    for column in np.flatnonzero(coef):
        if column < 4:
            term = JOB_TERMS[column]
        else:
            group, which = divmod(int(column) - 4, width)
            name = parameters[which]
            name = "2**scale" if name == "scale" else name  # the size it stands for
            term = JOB_TERMS[4 + group].replace("x", name, 1)
        terms.append(f"{coef[column]:.3g} {term}")
    return " + ".join(terms)


def _check_forms(kind, pattern, forms, predicted, trained, parameters):
    """Warn when forms that reproduce the measured data points per call alike part
    where a prediction takes them: the data cannot tell which holds.

    ``predicted`` is ``(basis, chosen, q)``: the rows' count basis, the form taken
    and their process counts; ``trained`` the training's process counts.
    """
    if len(forms) < 2:
        return
    basis, chosen, q = predicted
    values = basis @ np.array(forms).T
    low, high = values.min(axis=1), values.max(axis=1)
    apart = np.flatnonzero(high - low > 0.01 * np.maximum(high, 1e-300))
    if not apart.size:
        return
    row = apart[np.argmax((high - low)[apart] / high[apart])]
    measured = ", ".join(f"{c:g}" for c in trained)
    article = "an" if pattern[0] in "aeiou" else "a"
    alike = ", ".join(_form_text(f, parameters) for f in forms)
    warn(
        f"{kind}: the data points per call measured on {measured} processes "
        f"are reproduced alike by {alike}, which part from {q[apart].min():g} "
        f"processes ({low[row]:.4g} to {high[row]:.4g} a call on {q[row]:g}): FiM "
        f"takes {_form_text(chosen, parameters)}, the form of {article} {pattern}'s "
        "data; measure another process count to tell",
        InsufficientDataWarning,
        stacklevel=5,
    )


def _memory_basis(x, q):
    """Regressors of a rank's working set: fixed, replicated, divided."""
    return np.hstack([np.ones((len(q), 1)), x, x / q[:, None]])


def _measured_sharers(X):
    """Ranks computing at once on one cache, per row (1 without the column)."""
    if "cache_sharers" not in X.columns:
        return np.ones(len(X))
    sharers = X["cache_sharers"].to_numpy(float)
    return np.where(np.isfinite(sharers) & (sharers >= 1), sharers, 1.0)


def _fit_memory(X, x, q):
    """``memory_`` of :class:`FiM` (None without the columns or their values)."""
    if not {"working_set", "llc_bytes"} <= set(X.columns):
        return None
    nbytes = X["working_set"].to_numpy(float)
    cache = X["llc_bytes"].to_numpy(float)
    if not (np.all(np.isfinite(nbytes)) and np.isfinite(cache).any()):
        return None
    sharers = _measured_sharers(X)
    cached = nbytes * sharers
    return {
        "coef": _fit_counts(_memory_basis(x, q), nbytes),
        "cache": float(np.nanmedian(cache)),
        "sharers": float(sharers.max()),
        "trained": (float(cached.min()), float(cached.max())),
        "loads": cached,
    }


def _sharers(memory, q):
    """Ranks computing at once on one cache for ``q`` processes: as many as the
    training's most, when fewer than ``q``."""
    return np.minimum(q, memory.get("sharers", 1.0))


def _projected_loads(memory, x, q):
    """The cache's load (bytes) of every row: a rank's regressed working set times
    the ranks computing at once on the cache."""
    return (_memory_basis(x, q) @ memory["coef"]) * _sharers(memory, q)


#: How many times the largest load of the cache any training point had (working set
#: times sharers) a projection out of the cache may reach before FiM warns that it
#: goes further from the cache than the training.
DEEPER = 2.0


def _where(projected, q, rows):
    """``"38.1 MiB on 1, 19.1 MiB on 2"``: the largest load per process count."""
    mib = 2.0**20
    return ", ".join(
        f"{projected[rows][q[rows] == c].max() / mib:.3g} MiB on {c:g}"
        for c in sorted({float(c) for c in q[rows]})
    )


def _check_filling(subject, projected, q, memory):
    """Warn when rows fill the cache more than :data:`DEEPER` times the fullest
    training point, every training point and the rows within it.

    A load the cache still holds is not held as well as a smaller one: it leaves
    the smaller caches, shares the last level with other data (and, on a virtual
    machine, other tenants). NPB CG's class W, 6.3 MiB, took 12.3 ns per nonzero
    and iteration on one rank of a host with a 32 MiB cache, class A's 22 MiB 17.8
    ns; FiM from classes S and W put class A on one rank 36 % low, below its range.
    """
    cache, high = memory["cache"], memory["trained"][1]
    fuller = np.flatnonzero((projected > DEEPER * high) & (projected <= cache))
    if not fuller.size:
        return
    mib = 2.0**20
    warn(
        f"{subject} projected at {_where(projected, q, fuller)} processes, more than "
        f"{DEEPER:g}x the fullest the host's {cache / mib:.3g} MiB last-level cache "
        f"was in training ({high / mib:.3g} MiB): the data still fit, but a fuller "
        "cache holds them less well (they leave the smaller caches and share the "
        "last level with other data), and the computation can be slower than the "
        "cycles per unit of work of the training predict; measure a larger size",
        MemoryRegimeWarning,
        stacklevel=4,
    )


def _check_memory(memory, x, q):
    """Warn when a row's working set is across the cache from every training point,
    or more than :data:`DEEPER` times the largest of theirs on the same side (out
    of the cache, or filling it: :func:`_check_filling`).

    What a cache holds is the working sets of the ranks that compute on it at once:
    a rank's, times the ranks of a host that share it (:func:`_sharers`).
    """
    if memory is None:
        return
    cache, (low, high) = memory["cache"], memory["trained"]
    projected = _projected_loads(memory, x, q)
    mib = 2.0**20
    shared = memory.get("sharers", 1.0) > 1
    subject = (
        f"the working sets of the ranks computing at once on one cache (up to "
        f"{memory['sharers']:g}) are"
        if shared
        else "a rank's working set is"
    )
    if high <= cache:
        _check_filling(subject, projected, q, memory)
    if high > cache:
        # out of the cache, a random access misses more often the larger the data:
        # the cycles per unit of work of the training's loads may not hold far beyond
        deeper = np.flatnonzero(projected > DEEPER * high)
        if deeper.size:
            warn(
                f"{subject} projected at {_where(projected, q, deeper)} processes, "
                f"more than {DEEPER:g}x the largest load of the host's "
                f"{cache / mib:.3g} MiB last-level cache that a training point had "
                f"({high / mib:.3g} MiB): further from the cache, a rank's data are "
                "found in it less often, and the computation can be slower than "
                "the cycles per unit of work of the training predict; measure a "
                "larger size",
                MemoryRegimeWarning,
                stacklevel=3,
            )
    if high <= cache:
        across = np.flatnonzero(projected > cache)
    elif low > cache:
        across = np.flatnonzero(projected <= cache)
    else:
        return  # the training points were on both sides: Eq. 11 saw both
    if not across.size:
        return
    if high <= cache:
        side = (
            f"beyond the host's {cache / mib:.3g} MiB last-level cache that every "
            f"training point stayed in (largest {high / mib:.3g} MiB): the cycles per "
            "unit of work measured in the cache do not hold when the data come from "
            "memory, and the computation can be much slower than predicted; measure "
            "a size whose working set exceeds the cache"
        )
    else:
        side = (
            f"within the host's {cache / mib:.3g} MiB last-level cache that no "
            f"training point fitted in (smallest {low / mib:.3g} MiB): the cycles per "
            "unit of work measured from memory do not hold in the cache, and the "
            "computation can be faster than predicted (a superlinear speedup)"
        )
    warn(
        f"{subject} projected at {_where(projected, q, across)} processes, {side}",
        MemoryRegimeWarning,
        stacklevel=3,
    )
