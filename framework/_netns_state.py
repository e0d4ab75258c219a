"""Records of namespace networks: who owns each one, so leftovers can be found.

One JSON file per network, ``<state_dir>/<tag>.json``, holding the owner's pid and the
start time of that pid (so a recycled pid is not mistaken for the owner) and the
number of nodes. It is written before the first namespace is created and removed
after the last one is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os

__all__ = ["locked", "orphans", "remove_record", "start_time", "write_record"]


def start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if it is not running."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; count after it.
    return int(text.rsplit(")", 1)[1].split()[19])


@contextlib.contextmanager
def locked(directory: str):
    """Hold the state directory's lock (one cleaner or creator at a time)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write_record(directory: str, tag: str, nodes: int) -> None:
    """Record that this process owns network ``tag`` of ``nodes`` nodes."""
    record = {"pid": os.getpid(), "start": start_time(os.getpid()), "nodes": nodes}
    with locked(directory):
        path = os.path.join(directory, f"{tag}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(path + ".tmp", path)


def remove_record(directory: str, tag: str) -> None:
    """Forget network ``tag``."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, f"{tag}.json"))


def orphans(directory: str) -> list[tuple[str, int]]:
    """``(tag, nodes)`` of every recorded network whose owner is no longer running."""
    found = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                record = json.load(f)
            pid, start, nodes = record["pid"], record["start"], int(record["nodes"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if start_time(pid) != start:
            found.append((name[: -len(".json")], nodes))
    return found
