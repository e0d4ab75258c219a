"""Helpers of PMNFSearch: data reduction and batched scoring of term combinations."""

from __future__ import annotations

import numpy as np
import pandas as pd


def reduce_configurations(var, y):
    """Median of ``y`` per distinct configuration, restricted to the top bandwidth."""
    frame = pd.DataFrame(dict(var))
    frame["y"] = y
    if "bandwidth" in frame:
        frame = frame[frame["bandwidth"] == frame["bandwidth"].max()]
    keys = [k for k in ("p", "D") if k in frame]
    frame = frame[frame["y"] > 0]
    if frame.empty:
        raise ValueError("PMNFSearch needs positive target values")
    median = frame.groupby(keys)["y"].transform("median")
    reduced = frame.groupby(keys, as_index=False)["y"].median().sort_values(keys)
    out = {k: reduced[k].to_numpy() for k in reduced.columns}
    out["noise"] = float(np.median(np.abs(np.log(frame["y"] / median))))
    return out


def complexity(terms):
    return (
        sum(t.log_exponent for t in terms),
        sum(t.p_exponent.denominator for t in terms),
    )


class ComboScorer:
    """Extrapolation score of many term combinations at once.

    A combination whose unconstrained least-squares coefficients are all positive has
    them as its NNLS solution; any other combination has a term NNLS would switch
    off, so the smaller law covers it and it scores ``inf``. That makes every
    combination of one size a batched linear solve on the normal equations.
    """

    def __init__(self, phi, y, folds):
        self.folds = []
        phi = np.asarray(phi, dtype=float)
        for train, test in folds:
            # Relative least squares (rows divided by y): noise is multiplicative and
            # the large-p points, tiny in seconds, carry the communication terms.
            A = phi[train] / y[train, None]
            norm = np.linalg.norm(A, axis=0)
            norm[norm == 0] = 1.0
            A = A / norm
            self.folds.append((A.T @ A, A.sum(axis=0), phi[test] / norm, y[test]))

    def score(self, combos):
        errors = np.zeros(len(combos))
        for gram, rhs, test_phi, test_y in self.folds:
            G = gram[combos[:, :, None], combos[:, None, :]]
            b = rhs[combos]
            with np.errstate(all="ignore"):
                try:
                    coef = np.linalg.solve(G, b[..., None])[..., 0]
                except np.linalg.LinAlgError:
                    coef = np.stack(
                        [
                            np.linalg.lstsq(g, r, rcond=None)[0]
                            for g, r in zip(G, b, strict=True)
                        ]
                    )
                pred = np.einsum("tck,ck->ct", test_phi[:, combos], coef)
                err = np.mean(np.abs(np.log(pred / test_y)), axis=1)
            bad = ~np.all(coef > 0, axis=1) | ~np.isfinite(err)
            errors += np.where(bad, np.inf, err)
        return errors / max(len(self.folds), 1)
