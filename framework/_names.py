"""Suggest the valid name a user probably meant."""

from __future__ import annotations

import difflib

__all__ = ["did_you_mean"]


def did_you_mean(word, choices) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""``.

    Parameters
    ----------
    word : object
        What the user wrote.
    choices : iterable of str
        The valid names.

    Returns
    -------
    str

    Examples
    --------
    >>> did_you_mean("itertions", ["iterations", "warmup"])
    " (did you mean 'iterations'?)"
    >>> did_you_mean("xyz", ["iterations", "warmup"])
    ''
    """
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
