"""Map feature frames or plain arrays onto the variables ``p``, ``D`` and ``bw``."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_non_negative

from ..core.features import data_size


def needed_columns(terms, over):
    """Feature names a list of terms reads, in the canonical order."""
    names = [over]
    if any(t.data for t in terms):
        names.append("D")
    if any(t.bandwidth for t in terms):
        names.append("bandwidth")
    return names


def select(X, needed, features, s0=25):
    """Return ``(X_selected, names)``: frames by column name, arrays by position.

    A frame holding every needed column (``scale`` stands in for ``D``) is reduced to
    those columns; any other input is read positionally, its columns named by
    ``features`` (default: ``needed``).
    """
    columns = getattr(X, "columns", None)
    if columns is not None:
        present = {str(c) for c in columns}
        if "D" in needed and "D" not in present and "scale" in present:
            X = X.assign(D=data_size(X["scale"].to_numpy(dtype=float), s0))
            present.add("D")
        if set(needed) <= present:
            return X[list(needed)], list(needed)
    names = list(needed if features is None else features)
    absent = [
        n for n in needed if n not in names and not (n == "D" and "scale" in names)
    ]
    if absent:
        raise ValueError(
            f"features {names} lack {absent}; the model's terms need {needed}"
        )
    return X, names


def variables(X, names, *, over, ppn=None, s0=25, whom="the model"):
    """Return a dict with arrays ``p``, ``D``, ``bandwidth`` read from validated ``X``.

    Every feature of a scaling law (node or rank counts, data size, bandwidth
    percentage) is positive; anything else is rejected with a ValueError.
    """
    check_non_negative(X, whom)
    if X.shape[1] < len(names):
        raise ValueError(
            f"X has {X.shape[1]} columns but the model reads {len(names)}: {names}"
        )
    column = {name: X[:, i] for i, name in enumerate(names)}
    out = {"p": column[over] * (1.0 if ppn is None else float(ppn))}
    if "D" in column:
        out["D"] = column["D"]
    elif "scale" in column:
        out["D"] = data_size(column["scale"], s0)
    if "bandwidth" in column:
        out["bandwidth"] = column["bandwidth"]
    for name, values in out.items():
        if np.any(values <= 0):
            raise ValueError(
                f"{'nodes or ranks' if name == 'p' else name} must be "
                f"positive; got minimum {np.min(values)!r}"
            )
    return out


def design_matrix(terms, var, alpha):
    """Stack the evaluated terms as columns."""
    return np.column_stack(
        [t.evaluate(var["p"], var.get("D"), var.get("bandwidth"), alpha) for t in terms]
    )


def design_matrices(terms, var, alphas):
    """Design matrices of ``terms`` for every value of ``alpha``: shape (alphas, rows,
    terms).

    A term without the bandwidth factor is the same for every ``alpha``; the factor
    ``alpha**(100/bw)`` of the others is computed for the whole grid at once.
    """
    columns = []
    for term in terms:
        alpha = 1.0 if term.bandwidth else None
        value = term.evaluate(var["p"], var.get("D"), var.get("bandwidth"), alpha)
        if term.bandwidth:
            grid = np.asarray(alphas, dtype=float)[:, None]
            factor = grid ** (100.0 / np.asarray(var["bandwidth"], dtype=float))
            value = value[None, :] * factor
        else:
            value = np.broadcast_to(value, (len(alphas), value.size))
        columns.append(value)
    return np.stack(columns, axis=-1)
