"""Admissible-configuration rules: which (nodes, ppn) points a sweep may run.

Some MPI programs only run on certain rank counts (the IBM Graph500 code that
Medya, Cherkasova and Singh 2017 measured needs ``ranks = 2 * p**2``; a 2D grid
wants a perfect square). A spec names a built-in rule
or writes an expression over ``nodes``, ``ppn`` and ``ranks``. Expressions are parsed
by the small recursive-descent parser below and evaluated on a closed set of operators
and helpers: a spec can never run code.

Grammar::

    expr    := and ("or" and)*
    and     := not ("and" not)*
    not     := "not" not | compare
    compare := sum (("<" | "<=" | ">" | ">=" | "==" | "!=") sum)*
    sum     := term (("+" | "-") term)*
    term    := unary (("*" | "/" | "//" | "%") unary)*
    unary   := "-" unary | power
    power   := atom ("**" unary)?
    atom    := NUMBER | NAME | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable

__all__ = ["BUILTIN_RULES", "HELPERS", "RuleError", "compile_rule"]


class RuleError(ValueError):
    """An admissible rule could not be parsed or evaluated."""


def is_power_of_two(x) -> bool:
    """Return True if ``x`` is a positive integral power of two (1, 2, 4, ...)."""
    return float(x).is_integer() and x >= 1 and (int(x) & (int(x) - 1)) == 0


def is_square(x) -> bool:
    """Return True if ``x`` is a perfect square of a positive integer."""
    if not float(x).is_integer() or x < 1:
        return False
    root = math.isqrt(int(x))
    return root * root == int(x)


def is_two_p_squared(x) -> bool:
    """Return True if ``x = 2 * p**2`` for a positive integer ``p`` (2, 8, 18...)."""
    return float(x).is_integer() and x >= 2 and int(x) % 2 == 0 and is_square(x // 2)


HELPERS: dict[str, Callable] = {
    "is_power_of_two": is_power_of_two,
    "is_square": is_square,
    "is_two_p_squared": is_two_p_squared,
    "sqrt": math.sqrt,
    "log2": math.log2,
    "floor": math.floor,
    "ceil": math.ceil,
    "min": min,
    "max": max,
    "abs": abs,
}

BUILTIN_RULES: dict[str, str] = {
    "any": "True",
    "power_of_two": "is_power_of_two(nodes) and is_power_of_two(ranks)",
    "square": "is_square(ranks)",
    "two_p_squared": "is_two_p_squared(ranks)",
}

VARIABLES = ("nodes", "ppn", "ranks")
_CONSTANTS = {"True": True, "False": False}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


def _did_you_mean(name: str, choices) -> str:
    """``"did you mean 'x'? "`` for the closest of ``choices``, or nothing."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def _unknown_rule(name: str) -> RuleError:
    """The error of a rule written as one name that no named rule has."""
    return RuleError(
        f"unknown rule {name!r}; {_did_you_mean(name, BUILTIN_RULES)}named rules: "
        f"{', '.join(BUILTIN_RULES)}; or write an expression over "
        f"{', '.join(VARIABLES)}, e.g. 'is_power_of_two(nodes)'"
    )


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.?\d*(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>\*\*|//|<=|>=|==|!=|[-+*/%<>(),]))"
)
_COMPARE = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_ARITH = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
}


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise RuleError(
                f"unexpected character {text[pos:].strip()[:1]!r} in rule {text!r}"
            )
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        pos = match.end()
    return tokens


class _Parser:
    """Recursive descent over the token list; builds a tree of closures."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise RuleError(f"rule {self.text!r} ends too early")
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise RuleError(
                f"expected {expected!r} but found {token[1]!r} in rule {self.text!r}"
            )
        self.pos += 1
        return token

    def parse(self) -> Callable:
        node = self.or_()
        if self.pos != len(self.tokens):
            raise RuleError(f"unexpected {self.peek()!r} in rule {self.text!r}")
        return node

    def _chain(self, sub, ops, combine):
        node = sub()
        while self.peek() in ops:
            op = self.take()[1]
            node = combine(op, node, sub())
        return node

    def or_(self):
        return self._chain(
            self.and_, ("or",), lambda _, a, b: lambda env: a(env) or b(env)
        )

    def and_(self):
        return self._chain(
            self.not_, ("and",), lambda _, a, b: lambda env: a(env) and b(env)
        )

    def not_(self):
        if self.peek() == "not":
            self.take()
            inner = self.not_()
            return lambda env: not inner(env)
        return self.compare()

    def compare(self):
        first = self.sum_()
        pairs = []
        while self.peek() in _COMPARE:
            pairs.append((_COMPARE[self.take()[1]], self.sum_()))
        if not pairs:
            return first

        def chained(env):
            left = first(env)
            for op, right_node in pairs:
                right = right_node(env)
                if not op(left, right):
                    return False
                left = right
            return True

        return chained

    def _arith(self, a, b, op):
        fn = _ARITH[op]

        def apply(env):
            try:
                return fn(a(env), b(env))
            except ZeroDivisionError:
                raise RuleError(f"division by zero in rule {self.text!r}") from None

        return apply

    def sum_(self):
        return self._chain(
            self.term, ("+", "-"), lambda op, a, b: self._arith(a, b, op)
        )

    def term(self):
        return self._chain(
            self.unary, ("*", "/", "//", "%"), lambda op, a, b: self._arith(a, b, op)
        )

    def unary(self):
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            return lambda env: -inner(env)
        return self.power()

    def power(self):
        base = self.atom()
        if self.peek() == "**":
            self.take()
            exponent = self.unary()

            def apply(env):
                value = exponent(env)
                if abs(value) > 64:
                    raise RuleError(f"exponent {value} too large in rule {self.text!r}")
                return base(env) ** value

            return apply
        return base

    def atom(self):
        kind, value = self.take()
        if kind == "num":
            number = (
                float(value) if ("." in value or "e" in value.lower()) else int(value)
            )
            return lambda env: number
        if value == "(":
            node = self.or_()
            self.take(")")
            return node
        if kind != "name":
            raise RuleError(f"unexpected {value!r} in rule {self.text!r}")
        if self.peek() == "(":
            return self.call(value)
        if value in _CONSTANTS:
            constant = _CONSTANTS[value]
            return lambda env: constant
        if value not in VARIABLES:
            hint = _did_you_mean(value, VARIABLES)
            raise RuleError(
                f"unknown name {value!r} in rule {self.text!r}; {hint}allowed "
                f"variables: {', '.join(VARIABLES)}; helpers: "
                f"{', '.join(sorted(HELPERS))}; named rules (alone): "
                f"{', '.join(BUILTIN_RULES)}"
            )
        return lambda env: env[value]

    def call(self, name: str):
        if name not in HELPERS:
            raise RuleError(
                f"unknown function {name!r} in rule {self.text!r}; "
                f"{_did_you_mean(name, HELPERS)}allowed: {', '.join(sorted(HELPERS))}"
            )
        self.take("(")
        args = []
        if self.peek() != ")":
            args.append(self.or_())
            while self.peek() == ",":
                self.take()
                args.append(self.or_())
        self.take(")")
        fn = HELPERS[name]

        def apply(env):
            try:
                return fn(*(a(env) for a in args))
            except (TypeError, ValueError) as exc:
                raise RuleError(
                    f"{name}() failed in rule {self.text!r}: {exc}"
                ) from None

        return apply


def compile_rule(rule: str | None) -> Callable[..., bool]:
    """Compile an admissible rule into a predicate over a configuration.

    Parameters
    ----------
    rule : str or None
        A built-in name (``any``, ``power_of_two``, ``square``, ``two_p_squared``) or an
        expression over ``nodes``, ``ppn``, ``ranks`` with arithmetic, comparisons,
        ``and``/``or``/``not`` and the helpers in :data:`HELPERS`. None means ``any``.

    Returns
    -------
    callable
        ``predicate(nodes=..., ppn=..., ranks=...) -> bool``.

    Raises
    ------
    RuleError
        If the rule does not parse or names something unknown.

    Examples
    --------
    >>> ok = compile_rule("ranks <= 8 and is_power_of_two(nodes)")
    >>> ok(nodes=4, ppn=2, ranks=8), ok(nodes=3, ppn=1, ranks=3)
    (True, False)
    >>> compile_rule("two_p_squared")(nodes=9, ppn=2, ranks=18)
    True
    >>> compile_rule("power_of_2")
    Traceback (most recent call last):
    ...
    scaleprobe.framework.admissible.RuleError: unknown rule 'power_of_2'; did you mean 'power_of_two'? named rules: any, power_of_two, square, two_p_squared; or write an expression over nodes, ppn, ranks, e.g. 'is_power_of_two(nodes)'
    """  # noqa: E501
    if rule is None:
        rule = "any"
    if not isinstance(rule, str) or not rule.strip():
        raise RuleError(f"a rule must be a non-empty string, got {rule!r}")
    name = rule.strip()
    known = (*BUILTIN_RULES, *VARIABLES, *_CONSTANTS)
    if _IDENTIFIER.match(name) and name not in known:
        raise _unknown_rule(name)
    text = BUILTIN_RULES.get(name, rule)
    tree = _Parser(text).parse()

    def predicate(*, nodes, ppn, ranks) -> bool:
        return bool(tree({"nodes": nodes, "ppn": ppn, "ranks": ranks}))

    predicate.__doc__ = f"Admissible rule {rule!r}."
    # Evaluate once so that type errors in the rule surface at spec validation.
    predicate(nodes=1, ppn=1, ranks=1)
    return predicate
