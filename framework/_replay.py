"""The shell line that reruns a launch exactly as it was measured."""

from __future__ import annotations

import os
import shlex

__all__ = ["replay_line"]


def replay_line(command, env, base=None, cwd=None) -> str:
    """Return a shell-quoted line that reruns ``command`` with ``env``.

    The line names every variable the launch set or changed relative to ``base``
    (``env VAR=value``) and every one it removed (``env -u VAR``), so pasting it in a
    shell with the worker's environment reruns the point as measured, throttle
    settings (``SCALEPROBE_LINK``) included.

    Parameters
    ----------
    command : list of str
        The launch's argument vector.
    env : mapping
        The launch's environment.
    base : mapping, optional
        The environment the launch started from; :data:`os.environ` by default.
    cwd : str, optional
        The launch's working directory, prefixed as ``cd DIR &&``.

    Returns
    -------
    str

    Examples
    --------
    >>> replay_line(["mpiexec", "-n", "2", "prog"], {"A": "x y", "HOME": "/root"},
    ...             base={"HOME": "/root", "PMI_FD": "7"})
    "env -u PMI_FD 'A=x y' mpiexec -n 2 prog"
    """
    base = os.environ if base is None else base
    argv = ["env"]
    for name in sorted(k for k in base if k not in env):
        argv += ["-u", name]
    argv += [f"{k}={env[k]}" for k in sorted(env) if base.get(k) != env[k]]
    line = shlex.join([*argv, *map(str, command)])
    return f"cd {shlex.quote(cwd)} && {line}" if cwd else line
