"""Kueue's manager on a local plane: started beside it, its webhooks reached by URL, stopped with it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes.client import CustomObjectsApi

from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.localcluster.kueue import missing_kueue, start_kueue

pytestmark = pytest.mark.skipif(
    missing_kueue() is not None, reason=f"Kueue is not built here: {missing_kueue()}"
)


def _processes_of(pid: int) -> list[int]:
    """`pid` and the processes in its process group (bwrap and the manager it runs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == pid:  # field 5 of stat: the process group
                found.append(int(entry.name))
    return found


def test_kueue_runs_beside_the_plane_and_stops_with_it(tmp_path: Path) -> None:
    plane = LocalControlPlane(run_dir=tmp_path / "plane", die_with_parent=True)
    plane.start()
    try:
        pid = start_kueue(plane)
        assert start_kueue(plane) == pid  # idempotent: one manager
        group = _processes_of(pid)
        assert len(group) >= 2, "bwrap and Kueue's manager"
        # Kueue's mutating webhook puts its finalizer on a new ClusterQueue: the API server reached the
        # manager by URL, trusting its certificate.
        custom = CustomObjectsApi(api_client(plane.kubeconfig))
        probe = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "probe"},
        }
        made = custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", probe)
        assert made["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
        assert "kueue" in plane.stop()
        deadline = time.monotonic() + 10
        while _processes_of(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _processes_of(pid) == []
    finally:
        plane.stop()
