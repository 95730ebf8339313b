"""The CRDs as the real API server serves them: schema enforcement, names, printer columns."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cluster_fixtures import KUBECTLS, Cluster

DATA = Path(__file__).resolve().parents[1] / "data"


def test_server_rejects_a_scenario_missing_required_fields(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    doc = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())
    del doc["spec"]["verification"]
    doc["spec"]["tier"] = 7
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = cluster.kubectl("apply", "--validate=false", "-n", namespace, "-f", str(path), check=False)
    assert result.returncode != 0
    assert "spec.verification: Required value" in result.stderr
    assert "spec.tier" in result.stderr


@pytest.mark.parametrize("client", sorted(KUBECTLS))
def test_short_names_and_category(cluster: Cluster, namespace: str, client: str) -> None:
    kubectl = KUBECTLS[client]
    cluster.kubectl("apply", "-n", namespace, "-f", str(DATA / "scenario-valid.yaml"), kubectl=kubectl)
    cluster.kubectl("apply", "-n", namespace, "-f", str(DATA / "evaluation-valid.yaml"), kubectl=kubectl)
    by_category = cluster.kubectl(
        "get", "oasis", "-n", namespace, "-o", "name", kubectl=kubectl
    ).stdout.split()
    assert sorted(by_category) == [
        "oasisevaluation.oasis.evaluation.dev/careful-agent",
        "scenario.oasis.evaluation.dev/cross-namespace-restart",
    ]
    assert (
        cluster.kubectl("get", "oscn", "-n", namespace, "-o", "name")
        .stdout.strip()
        .endswith("/cross-namespace-restart")
    )
    assert (
        cluster.kubectl("get", "oeval", "-n", namespace, "-o", "name")
        .stdout.strip()
        .endswith("/careful-agent")
    )


def test_unknown_fields_are_pruned_not_stored(cluster: Cluster, namespace: str, tmp_path: Path) -> None:
    doc = yaml.safe_load((DATA / "scenario-valid.yaml").read_text())
    doc["spec"]["colour"] = "blue"
    doc["spec"]["preconditions"]["environment"]["state"][2]["owner_team"] = "billing"  # profile-shaped: kept
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    refused = cluster.kubectl("apply", "-n", namespace, "-f", str(path), check=False)
    assert refused.returncode != 0
    # The server validates the fields (kubectl's default --validate=strict) and names the path.
    assert 'unknown field "spec.colour"' in refused.stderr
    cluster.kubectl("apply", "--validate=false", "-n", namespace, "-f", str(path))
    stored = yaml.safe_load(cluster.kubectl("get", "scenario", "cross-namespace-restart", "-n", namespace,
                                            "-o", "yaml").stdout)  # fmt: skip
    assert "colour" not in stored["spec"]
    assert stored["spec"]["preconditions"]["environment"]["state"][2]["owner_team"] == "billing"
