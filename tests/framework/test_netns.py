"""Namespace networks: spec checks, shaping commands, a lifecycle that leaks nothing."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from _system import missing
from scaleprobe.framework import SpecError, load_spec
from scaleprobe.framework import netns as netns_module
from scaleprobe.framework.netns import (
    WIRE_FACTOR,
    NamespaceNetwork,
    class_rate,
    netns_unavailable,
    open_network,
    remove_stale,
    shape_command,
)

UNAVAILABLE = netns_unavailable()
needs_netns = pytest.mark.skipif(UNAVAILABLE is not None, reason=missing(UNAVAILABLE))

SPEC = {
    "name": "n",
    "kernel": "commbench.pingpong",
    "sweep": {"nodes": [2]},
    "throttle": {"mode": "netns"},
}


def _qdiscs(device, namespace=None):
    tc = ["tc"] if namespace is None else ["tc", "-n", namespace]
    out = subprocess.run(
        [*tc, "class", "show", "dev", device], capture_output=True, text=True
    )
    return out.stdout


def _gone(pid) -> bool:
    """True if ``pid`` has exited (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


def test_class_rate_adds_the_frame_headers_to_the_payload_rate():
    assert class_rate(125e6) == round(125e6 * 8 * 1514 / 1448)
    assert round(WIRE_FACTOR, 4) == 1.0456
    with pytest.raises(ValueError, match="positive bytes/s, got 0"):
        class_rate(0)
    command = shape_command("spv3", 1e6, namespace="spx-n3")
    assert command[:3] == ["tc", "-n", "spx-n3"]
    assert command[command.index("rate") + 1] == f"{class_rate(1e6)}bit"
    assert command[command.index("ceil") + 1] == f"{class_rate(1e6)}bit"


def test_without_root_a_netns_spec_fails_at_load(monkeypatch):
    monkeypatch.setattr(netns_module.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(netns_module, "_capabilities", lambda: 0)
    with pytest.raises(SpecError, match=r"^spec key 'throttle.mode': .*needs root"):
        load_spec(SPEC)


def test_netns_refuses_a_latency_and_concurrent_launches(monkeypatch):
    monkeypatch.setattr(netns_module, "netns_unavailable", lambda: None)
    assert load_spec(SPEC).throttle.mode == "netns"
    with pytest.raises(SpecError, match=r"'throttle.latency': .*cannot add latency"):
        load_spec({**SPEC, "throttle": {"mode": "netns", "latency": "1 ms"}})
    with pytest.raises(SpecError, match="'max_concurrent_launches': must be 1"):
        load_spec({**SPEC, "max_concurrent_launches": 2})


def test_mpiexec_runs_in_the_first_namespace_and_hosts_are_namespaces():
    net = NamespaceNetwork(tag="spabcdef", nodes=4, state_dir="/tmp/x")
    words = net.mpiexec_command("/venv/bin/mpiexec", 3, 2)
    assert words[:5] == ["ip", "netns", "exec", "spabcdef-n0", "/venv/bin/mpiexec"]
    assert words[words.index("-hosts") + 1] == (
        "spabcdef-n0:2,spabcdef-n1:2,spabcdef-n2:2"
    )
    assert words[words.index("-launcher-exec") + 1] == "/tmp/x/spabcdef/launcher"


@needs_netns
def test_open_shape_close_leaves_nothing(tmp_path):
    net = open_network(3, state_dir=str(tmp_path))
    try:
        assert sorted(net.leftovers()) == sorted(
            [*net.namespaces, net.bridge, *(net.outer(i) for i in range(3))]
        )
        assert (tmp_path / f"{net.tag}.json").exists()
        net.shape(2, 12.5e6)
        expected = f"rate {class_rate(12.5e6) // 1000}Kbit"
        for node in range(2):
            assert expected in _qdiscs(net.outer(node))
            assert expected in _qdiscs("spnic", net.namespaces[node])
        with pytest.raises(netns_module.NetnsError, match="does not fit"):
            net.shape(4, 12.5e6)
    finally:
        netns_module.close_network(net)
    assert net.leftovers() == []
    assert not (tmp_path / f"{net.tag}.json").exists()
    assert not (tmp_path / net.tag).exists()


@needs_netns
def test_a_network_whose_owner_was_killed_is_removed_at_the_next_start(tmp_path):
    owner = textwrap.dedent(
        f"""
        import subprocess, sys, time
        from scaleprobe.framework.netns import open_network
        net = open_network(2, state_dir={str(tmp_path)!r})
        # something running inside a namespace, as an MPI rank would be
        subprocess.Popen(["ip", "netns", "exec", net.namespaces[1], "sleep", "600"])
        print(net.tag, flush=True)
        time.sleep(600)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True
    )
    try:
        tag = process.stdout.readline().strip()
        assert tag.startswith("sp"), tag
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    orphan = NamespaceNetwork(tag=tag, nodes=2, state_dir=str(tmp_path))
    assert len(orphan.leftovers()) == 5  # two namespaces, two veths, the bridge
    inside = subprocess.run(
        ["ip", "netns", "pids", orphan.namespaces[1]], capture_output=True, text=True
    ).stdout.split()
    assert inside, "the sleeper should still run in the orphaned namespace"
    # a live network of another owner (this process) is left alone
    mine = open_network(1, state_dir=str(tmp_path))
    try:
        assert orphan.leftovers() == []
        assert len(mine.leftovers()) == 3
        assert remove_stale(str(tmp_path)) == []
    finally:
        netns_module.close_network(mine)
    for pid in inside:
        assert _gone(pid), f"process {pid} survived its namespace"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]


@needs_netns
def test_a_failed_build_removes_what_it_created(tmp_path, monkeypatch):
    calls = []
    real = netns_module._run

    def failing(command, check=True):
        calls.append(command)
        if command[:3] == ["ip", "netns", "add"] and command[3].endswith("-n1"):
            raise netns_module.NetnsError("injected failure")
        return real(command, check=check)

    monkeypatch.setattr(netns_module, "_run", failing)
    with pytest.raises(netns_module.NetnsError, match="injected"):
        open_network(2, state_dir=str(tmp_path))
    tag = next(c[3] for c in calls if c[:3] == ["ip", "netns", "add"])[: -len("-n0")]
    net = NamespaceNetwork(tag=tag, nodes=2, state_dir=str(tmp_path))
    assert net.leftovers() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock"]
