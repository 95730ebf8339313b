"""Stopping the real node leaves nothing behind: no process, mount, network interface, namespace, nat rule
or cgroup of its own. Runs last in the tier (it stops the session's node)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from oasis_operator.localcluster.node import BRIDGE, NAT_CHAIN, NODE_NAME, RealNode
from oasis_operator.localcluster.node_host import mounts_under
from tests.cluster_fixtures import Cluster
from tests.e2e.node.support import create, python_pod, wait_phase


def _processes_naming(text: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(f"{proc.name}: {cmdline}")
    return found


def _netns() -> set[str]:
    run = Path("/run/netns")
    return {p.name for p in run.iterdir()} if run.is_dir() else set()


def test_stop_leaves_no_process_mount_interface_netns_rule_or_cgroup(
    node: RealNode, cluster: Cluster, namespace: str
) -> None:
    create(cluster, namespace, python_pod(node, "running", "import time; time.sleep(600)"))
    wait_phase(cluster, namespace, "running", {"Running"})
    netns_before = _netns()
    assert mounts_under(node.root), "a running pod has mounts under the node's directory"
    assert Path(f"/sys/class/net/{BRIDGE}").exists()

    stopped = node.stop()

    assert stopped == ["kubelet", "containerd"]
    assert _processes_naming(f"{node.root}/") == []
    assert mounts_under(node.root) == []
    assert not Path(f"/sys/class/net/{BRIDGE}").exists()
    assert not [i for i in Path("/sys/class/net").iterdir() if i.name.startswith("veth")]
    # The pod's network namespace was the only new one; CNI's DEL removed it with the pod.
    assert _netns() <= netns_before
    assert [n for n in netns_before - _netns() if not n.startswith("cni-")] == []
    nat = subprocess.run(
        ["iptables", "-w", "-t", "nat", "-S"], capture_output=True, text=True, check=True
    ).stdout
    assert NAT_CHAIN not in nat
    assert not [h for h in Path("/sys/fs/cgroup").iterdir() if (h / "kubepods").exists()]
    assert cluster.kubectl("get", "node", NODE_NAME, check=False).returncode != 0
