"""The store keeps what it has: one run at a time, one campaign, checked files,
no leftovers, and a full disk said in one line."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scaleprobe.framework._warnings import DamagedPointWarning
from scaleprobe.framework.campaign import identity_changes
from scaleprobe.framework.store import (
    OutputLock,
    OutputLockedError,
    ResultStore,
    StoreError,
    StoreIOError,
    open_results,
)
from test_store import _campaign, _result


def _started(tmp_path, name="c.zarr"):
    store = ResultStore(tmp_path / name)
    store.lock.acquire()
    store.start(_campaign())
    return store


def test_a_second_holder_is_refused_at_once_naming_the_first(tmp_path):
    store = _started(tmp_path)
    other = ResultStore(tmp_path / "c.zarr")
    with pytest.raises(OutputLockedError) as info:
        other.lock.acquire()
    text = str(info.value)
    assert f"c.zarr is in use by another scaleprobe run (pid {os.getpid()} on" in text
    assert "\n" not in text
    assert other.lock.holder()["pid"] == os.getpid()
    store.lock.release()
    assert other.lock.holder() is None
    assert other.lock.acquire() is None  # released cleanly: no note
    other.lock.release()
    assert not os.path.exists(store.lock.path)


def test_the_lock_of_a_killed_run_is_taken_over_with_a_note(tmp_path):
    # A run killed with kill -9 leaves its lock file; the kernel dropped its flock.
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    lock = OutputLock(str(tmp_path / "c.lock"), "c.zarr")
    holder = {
        "host": "h",
        "pid": int(dead.stdout),
        "started": "2026-01-01 00:00:00",
        "command": "scaleprobe run s.yaml",
    }
    (tmp_path / "c.lock").write_text(json.dumps(holder))
    assert lock.holder() is None
    note = lock.acquire()
    assert note == (
        f"took over the lock of c.zarr left by pid {holder['pid']} on h, since "
        "2026-01-01 00:00:00: 'scaleprobe run s.yaml', which is no longer running"
    )
    assert json.loads((tmp_path / "c.lock").read_text())["pid"] == os.getpid()
    lock.release()


def test_a_campaign_may_grow_but_not_change_its_keys(tmp_path):
    store = _started(tmp_path)
    store.write_point(_result(1, 100))
    grown = _campaign()
    grown["sweep"]["nodes"] = [1, 2, 4]
    grown["sweep"]["run"] = [0, 1]
    assert identity_changes(store.campaign(), grown) == []
    store.start(grown)
    assert store.campaign()["sweep"]["nodes"] == [1, 2, 4]
    before = {
        n: Path(store.points_dir, n).read_text()
        for n in os.listdir(store.points_dir)
        if n.endswith(".json")
    }
    renamed = _campaign()
    renamed["sweep"] = {"n": [1, 2], "ppn": [1], "bandwidth": [100], "run": [0]}
    renamed["identity"]["params"] = {"sleep": 0.5}
    with pytest.raises(StoreError) as info:
        store.start(renamed)
    assert str(info.value).startswith(
        f"{store.path} holds another campaign (params.sleep added (0.5); sweep keys: "
        "nodes removed, n added); resuming keeps"
    )
    assert "--new-campaign" in str(info.value)
    after = {
        n: Path(store.points_dir, n).read_text()
        for n in os.listdir(store.points_dir)
        if n.endswith(".json")
    }
    assert after == before  # the store is intact
    assert open_results(store.path).attrs["points"] == 1
    # a setting a newer version added (null by default) changes nothing
    newer = _campaign()
    newer["identity"]["throttle"] = {"topology": None}
    assert identity_changes(store.campaign(), newer) == []


def test_a_new_campaign_moves_the_old_one_aside(tmp_path):
    store = _started(tmp_path)
    store.write_point(_result(1, 100))
    store.consolidate()
    other = _campaign(kernel="other")
    note = store.start(other, new_campaign=True)
    assert note.startswith(f"moved the earlier campaign at {store.path} to ")
    archived = note.rsplit(" to ", 1)[1]
    assert archived.endswith(".zarr")
    assert ".campaign-" in archived
    assert store.done_keys() == set()
    assert store.campaign()["identity"]["kernel"] == "other"
    old = open_results(archived)  # its points, logs and Dataset moved together
    assert old.attrs["points"] == 1
    assert (old.status.values == "ok").sum() == 1


def test_damaged_point_files_are_moved_aside_and_counted_as_not_measured(tmp_path):
    store = _started(tmp_path)
    for nodes, bandwidth in ((1, 100), (2, 100), (2, 50)):
        store.write_point(_result(nodes, bandwidth))
    keys = sorted(store.done_keys())
    truncated, foreign, kept = (
        os.path.join(store.points_dir, f"{k}.json") for k in keys
    )
    text = Path(truncated).read_text()
    Path(truncated).write_text(text[: len(text) // 2])
    wrong = json.loads(Path(foreign).read_text())
    wrong["coords"] = {"n": 1}
    Path(foreign).write_text(json.dumps(wrong))
    with pytest.warns(DamagedPointWarning) as caught:
        results = store.results()
    assert [r["key"] for r in results] == [keys[2]]
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert (
        f"point file {foreign} is damaged (its coordinates (n) are not" in messages[1]
    )
    assert f"point file {truncated} is damaged (not valid JSON" in messages[0]
    assert "its point will be measured again" in messages[0]
    # moved, never deleted
    assert sorted(os.listdir(store.damaged_dir)) == [
        f"{keys[0]}.json",
        f"{keys[1]}.json",
    ]
    assert store.done_keys() == {keys[2]}
    assert os.path.exists(kept)


def test_a_reader_that_does_not_hold_the_lock_leaves_damaged_files_alone(tmp_path):
    store = _started(tmp_path)
    store.write_point(_result(1, 100))
    (key,) = store.done_keys()
    path = os.path.join(store.points_dir, f"{key}.json")
    Path(path).write_text("{")
    reader = ResultStore(store.path)
    with pytest.warns(DamagedPointWarning, match="the next run moves it aside"):
        ds = open_results(store.path)  # a run holds the lock: read only
    assert ds.attrs["points"] == 0
    assert os.path.exists(path)
    assert not reader.lock.held


def test_leftovers_of_crashed_writes_are_cleaned_at_start(tmp_path):
    store = _started(tmp_path)
    store.write_point(_result(1, 100))
    store.lock.release()
    dead = 2**22 + 12345  # above pid_max of a default kernel: no such process
    leftovers = [
        f"{store.path}.tmp-{dead}",
        f"{store.path}.old-{dead}",
        os.path.join(store.points_dir, f"abc.json.tmp-{dead}"),
    ]
    os.makedirs(leftovers[0] + "/time")
    os.makedirs(leftovers[1])
    Path(leftovers[2]).write_text('{"key": ')
    live = f"{store.path}.tmp-{os.getppid()}"  # a writer still at work
    os.makedirs(live)
    again = ResultStore(store.path)
    again.lock.acquire()
    again.start(_campaign())
    again.lock.release()
    assert not [p for p in leftovers if os.path.exists(p)]
    assert os.path.isdir(live)
    assert len(again.done_keys()) == 1


@contextlib.contextmanager
def _small_tmpfs(path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(folder):
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as f:
        while True:
            f.write(b"x" * 4096)
            f.flush()
    for i in range(1000):
        try:
            (folder / f"small{i}").write_bytes(b"x")
        except OSError:
            break


def test_a_full_disk_is_one_line_and_damages_nothing(tmp_path):
    with _small_tmpfs(tmp_path / "disk") as disk:
        store = _started(disk)
        store.write_point(_result(1, 100))
        store.consolidate()
        point_files = sorted(os.listdir(store.points_dir))
        _fill(disk)
        for write in (lambda: store.write_point(_result(2, 100)), store.consolidate):
            with pytest.raises(StoreIOError) as info:
                write()
            text = str(info.value)
            assert text.startswith(f"no space left on the device of {disk}")
            assert "every point stored before is intact" in text
            assert "\n" not in text
        store.lock.release()
        # no temporary file or directory, no half-written point or log
        names = [n for _, dirs, files in os.walk(disk) for n in dirs + files]
        assert not [n for n in names if ".tmp-" in n or ".old-" in n]
        assert {n for n in os.listdir(disk) if n.startswith("c.")} == {
            "c.zarr",
            "c.points",
            "c.logs",
        }
        assert sorted(os.listdir(store.points_dir)) == point_files
        assert len(os.listdir(store.logs_dir)) == 1
        ds = open_results(store.path)
        assert ds.attrs["points"] == 1
        assert ds.status.sel(nodes=1, bandwidth=100).item() == "ok"


def test_a_consolidation_failing_half_way_leaves_no_partial_dataset(
    tmp_path, monkeypatch
):
    import builtins

    import scaleprobe.framework.store as store_module

    store = _started(tmp_path)
    store.write_point(_result(1, 100))
    store.consolidate()
    before = sorted(
        os.path.relpath(os.path.join(d, n), store.path)
        for d, _, files in os.walk(store.path)
        for n in files
    )
    opened = []

    def full_after_three(path, mode="r", *args, **kwargs):
        if ".tmp-" in str(path) and "w" in mode:
            opened.append(path)
            if len(opened) > 3:
                raise OSError(28, "No space left on device", str(path))
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(store_module, "open", full_after_three, raising=False)
    with pytest.raises(StoreIOError, match="no space left on the device"):
        store.consolidate()
    assert len(opened) == 4  # three files written, the fourth refused
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n or ".old-" in n]
    after = sorted(
        os.path.relpath(os.path.join(d, n), store.path)
        for d, _, files in os.walk(store.path)
        for n in files
    )
    assert after == before
    monkeypatch.undo()
    assert open_results(store.path).attrs["points"] == 1
