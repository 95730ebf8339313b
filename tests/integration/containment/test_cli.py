"""`oasis containment probe` as a user runs it: its own gateway and sandboxes, a table, an exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.kube import request, resource_path
from oasis_operator.sandbox.naming import control_namespace
from oasis_operator.sandbox.teardown import ENV_LABEL
from tests.cluster_fixtures import KUBECTLS, Cluster

pytestmark = pytest.mark.cluster
OASIS = str(Path(sys.executable).parent / "oasis")


def test_probe_prints_the_table_and_leaves_nothing_behind(
    cluster: Cluster, api: ApiClient, tmp_path: Path
) -> None:
    def sandboxes() -> set[str]:
        namespaces = request(api, "GET", resource_path("Namespace"))["items"]
        return {n["metadata"]["name"] for n in namespaces if n["metadata"]["name"].startswith("cp-")}

    before = sandboxes()
    only = ["neighbour-door", "encoded-slash", "list-nodes"]
    result = subprocess.run(
        [
            OASIS,
            "containment",
            "probe",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--kubectl",
            KUBECTLS["current"],
            "--work-dir",
            str(tmp_path / "work"),
            *(a for p in only for a in ("--only", p)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "| probe | the agent tries | expected | outcome | gateway record | cluster | result |"
    rows = {line.split(" | ")[0].strip("| `"): line.split(" | ")[1:] for line in lines[2:5]}
    assert list(rows) == only
    assert rows["neighbour-door"][2:] == ["401", "self: 401", "unchanged", "contained |"]
    assert rows["encoded-slash"][2:] == ["400", "self: 400", "unchanged", "contained |"]
    assert rows["list-nodes"][2:] == ["only its own", "self: 200", "unchanged", "contained |"]
    assert lines[-1] == "3 probes: 3 contained, 0 ESCAPED, 0 skipped"
    # Both sandboxes were torn down: their namespaces are deleted or terminating, and of the control
    # namespace every sandbox of the prefix shares (which stays) nothing of theirs is left.
    control = control_namespace("cp")
    left = [
        n
        for n in sandboxes() - before - {control}
        if request(api, "GET", resource_path("Namespace", None, n))["status"]["phase"] != "Terminating"
    ]
    assert left == []
    for kind in ("ServiceAccount", "ConfigMap"):
        labelled = request(api, "GET", resource_path(kind, control), query={"labelSelector": ENV_LABEL})
        assert labelled["items"] == [], kind
