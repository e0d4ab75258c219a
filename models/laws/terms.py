"""Terms ``D * alpha^(100/bw) * p^i * log2(p)^j`` of a scaling law: parse, evaluate.

A term is a product of optional factors over the scaling variable ``p`` (nodes or
ranks), the data size ``D`` and the bandwidth factor ``alpha^(100/bw)``. Terms are
written as strings, e.g. ``"1/p"``, ``"D*alpha^(100/bw)/sqrt(p)"``,
``"p^(1/3)*log2(p)^2"`` or ``"1"`` (a constant).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

__all__ = ["Term", "describe_terms", "parse_term", "term_cost"]

_BANDWIDTH_TOKEN = "alpha^(100/bw)"
_POWER = re.compile(r"^p\^\(?(?P<exp>[-+]?\d+(?:/\d+)?(?:\.\d+)?)\)?$")
_LOG = re.compile(r"^log2\(p\)(?:\^\(?(?P<exp>\d+)\)?)?$")


@dataclass(frozen=True)
class Term:
    """One term ``[D *] [alpha^(100/bw) *] p^p_exponent * log2(p)^log_exponent``.

    Parameters
    ----------
    p_exponent : Fraction
        Power of the scaling variable ``p`` (negative for strong scaling).
    log_exponent : int
        Power of ``log2(p)`` (0, 1, 2, ...).
    data : bool
        Whether the term is multiplied by the data size ``D``.
    bandwidth : bool
        Whether the term is multiplied by ``alpha^(100/bw)``.
    """

    p_exponent: Fraction = Fraction(0)
    log_exponent: int = 0
    data: bool = False
    bandwidth: bool = False

    @property
    def name(self) -> str:
        """Canonical text of the term, readable back by :func:`parse_term`."""
        numerator = []
        if self.data:
            numerator.append("D")
        if self.bandwidth:
            numerator.append(_BANDWIDTH_TOKEN)
        if self.p_exponent > 0:
            numerator.append(_power_text(self.p_exponent))
        if self.log_exponent:
            numerator.append(
                "log2(p)" if self.log_exponent == 1 else f"log2(p)^{self.log_exponent}"
            )
        text = "*".join(numerator) or "1"
        if self.p_exponent < 0:
            text += "/" + _power_text(-self.p_exponent)
        return text

    @property
    def is_communication(self) -> bool:
        """True when the term models communication rather than computation.

        Computation shrinks at least as fast as ``1/p`` and does not depend on the
        bandwidth; every other term (bandwidth-dependent, ``1/sqrt(p)``, constant or
        growing terms) is counted as communication, as in Eqs. 1-7 of Medya et al.
        """
        return self.bandwidth or self.p_exponent > -1

    def evaluate(self, p, data=None, bandwidth=None, alpha=None):
        """Return the term's values for arrays of ``p``, ``D`` and ``bw`` (percent)."""
        p = np.asarray(p, dtype=float)
        value = p ** float(self.p_exponent)
        if self.log_exponent:
            value = value * np.log2(p) ** self.log_exponent
        if self.data:
            value = value * np.asarray(data, dtype=float)
        if self.bandwidth:
            value = value * float(alpha) ** (100.0 / np.asarray(bandwidth, dtype=float))
        return value


def _power_text(exponent: Fraction) -> str:
    if exponent == 1:
        return "p"
    if exponent == Fraction(1, 2):
        return "sqrt(p)"
    return f"p^({exponent})"


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if char == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_term(text) -> Term:
    """Parse a term string (or pass a :class:`Term` through).

    Parameters
    ----------
    text : str or Term
        Factors joined by ``*`` with at most one ``/``: ``1``, ``D``,
        ``alpha^(100/bw)``, ``p``, ``sqrt(p)``, ``p^(q)`` (q a fraction or decimal),
        ``log2(p)`` and ``log2(p)^j``. ``D``, the bandwidth factor and logarithms
        must be in the numerator.

    Returns
    -------
    Term

    Examples
    --------
    >>> parse_term("D*alpha^(100/bw)/sqrt(p)").name
    'D*alpha^(100/bw)/sqrt(p)'
    >>> parse_term("p^(-1/2)").name
    '1/sqrt(p)'
    """
    if isinstance(text, Term):
        return text
    if not isinstance(text, str):
        raise TypeError(f"a term must be a string or Term, got {type(text).__name__}")
    compact = text.replace(" ", "").replace(_BANDWIDTH_TOKEN, "A")
    halves = _split_top(compact, "/")
    if len(halves) > 2 or not halves[0]:
        raise ValueError(
            f"cannot parse term {text!r}: use factors joined by '*' and at most one '/'"
        )
    fields = {
        "p_exponent": Fraction(0),
        "log_exponent": 0,
        "data": False,
        "bandwidth": False,
    }
    for sign, half in zip((1, -1), halves, strict=False):
        for factor in _split_top(half, "*"):
            _apply_factor(fields, factor, sign, text)
    return Term(**fields)


def _apply_factor(fields, factor, sign, text):
    power, log = _POWER.match(factor), _LOG.match(factor)
    if factor == "1":
        return
    if sign < 0 and (factor in ("D", "A") or log):
        raise ValueError(f"in term {text!r}: {factor!r} may only be a numerator factor")
    if factor == "D":
        fields["data"] = True
    elif factor == "A":
        fields["bandwidth"] = True
    elif factor == "p":
        fields["p_exponent"] += sign
    elif factor == "sqrt(p)":
        fields["p_exponent"] += sign * Fraction(1, 2)
    elif power:
        fields["p_exponent"] += sign * Fraction(power["exp"]).limit_denominator(1000)
    elif log:
        fields["log_exponent"] += int(log["exp"] or 1)
    else:
        raise ValueError(
            f"unknown factor {factor!r} in term {text!r}; allowed: 1, D, "
            "alpha^(100/bw), p, sqrt(p), p^(q), log2(p), log2(p)^j"
        )


def describe_terms(terms, coef, alpha=None):
    """A fitted law as text: each coefficient times its term, summed.

    Parameters
    ----------
    terms : sequence of str
        Canonical names of the terms.
    coef : sequence of float
        Their coefficients.
    alpha : float, default=None
        The exponential bandwidth factor, shown after the sum when there is one.

    Returns
    -------
    str

    Examples
    --------
    >>> describe_terms(["1/p", "alpha^(100/bw)/sqrt(p)", "1"], [2.0, 0.25, 0.5], 1.1)
    '2/p + 0.25*alpha^(100/bw)/sqrt(p) + 0.5  (alpha 1.100)'
    """
    parts = []
    for term, value in zip(terms, coef, strict=True):
        text = f"{value:.4g}" if term == "1" else f"{value:.4g}*{term}"
        parts.append(text.replace("*1/", "/"))
    text = " + ".join(parts)
    if alpha:
        text += f"  (alpha {alpha:.3f})"
    return text


def term_cost(term):
    """How unusual a term is for a scaling law (0 for the four common shapes).

    The common shapes of parallel programs (perfect scaling ``1/p``, tree
    collectives ``log2(p)``, linear collectives ``p``, serial parts ``1``) cost
    nothing. Otherwise each logarithm costs 1, a fractional exponent 1, and growth
    beyond linear 2 per unit of exponent: ``sqrt(p)``, ``p log2(p)`` and
    ``1/sqrt(p)`` cost 1, ``p^2`` costs 2, ``p^(2/3) log2(p)^2`` costs 3, ``p^3``
    costs 4.
    """
    exponent = term.p_exponent
    if exponent == 0 and term.log_exponent == 1:
        return 0.0
    cost = term.log_exponent + (0 if exponent in (-1, 0, 1) else 1)
    return cost + 2 * max(float(exponent) - 1, 0.0)
