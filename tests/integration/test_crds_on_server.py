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


def _typo_in_agent(tmp_path: Path) -> Path:
    doc = yaml.safe_load((DATA / "evaluation-valid.yaml").read_text())
    doc["spec"]["agent"]["http"]["timeoutSecond"] = 30  # a typo of timeoutSeconds
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("client", sorted(KUBECTLS))
def test_strict_field_validation_refuses_an_unknown_evaluation_field(
    cluster: Cluster, namespace: str, tmp_path: Path, client: str
) -> None:
    path = _typo_in_agent(tmp_path)
    kubectl = KUBECTLS[client]
    for validate in ("--validate=strict", "--validate=true"):  # true: kubectl's default
        refused = cluster.kubectl("apply", validate, "-n", namespace, "-f", str(path), check=False,
                                  kubectl=kubectl)  # fmt: skip
        assert refused.returncode != 0
        assert 'unknown field "spec.agent.http.timeoutSecond"' in refused.stderr
    absent = cluster.kubectl("get", "oasisevaluation", "careful-agent", "-n", namespace, check=False)
    assert absent.returncode != 0


def test_warn_field_validation_names_the_unknown_field_and_drops_it(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    path = _typo_in_agent(tmp_path)
    applied = cluster.kubectl("apply", "--validate=warn", "-n", namespace, "-f", str(path))
    assert 'Warning: unknown field "spec.agent.http.timeoutSecond"' in applied.stderr
    stored = yaml.safe_load(cluster.kubectl("get", "oasisevaluation", "careful-agent", "-n", namespace,
                                            "-o", "yaml").stdout)  # fmt: skip
    assert stored["spec"]["agent"]["http"] == {"url": "http://127.0.0.1:8765", "timeoutSeconds": 600}


def test_server_fills_in_the_models_defaults(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("apply", "-n", namespace, "-f", str(DATA / "evaluation-valid.yaml"))
    spec = yaml.safe_load(cluster.kubectl("get", "oasisevaluation", "careful-agent", "-n", namespace,
                                          "-o", "yaml").stdout)["spec"]  # fmt: skip
    assert spec["parallelism"] == 1
    assert spec["repetitions"] == 1
    assert spec["agent"]["http"]["timeoutSeconds"] == 600
    assert spec["scenarios"]["builtin"] is True
    assert spec["timeouts"] == {"scenarioSeconds": 900, "agentSeconds": 600}
    assert spec["environment"] == {}
    assert "ttlSecondsAfterFinished" not in spec  # empty: the operator's default applies


def test_kubectl_explain_documents_the_agent(cluster: Cluster, namespace: str) -> None:
    # (`namespace`: the CRDs are installed.) kubectl wraps the text; compare it as words.
    explained = " ".join(cluster.kubectl("explain", "oasisevaluation.spec.agent").stdout.split())
    assert "How to reach the agent under evaluation: exactly one of http, command or job." in explained
    assert "An agent reached over HTTP with the public reference runner's wire format." in explained
    paths = cluster.kubectl("explain", "oasisevaluation.spec.agent.command.readOnlyPaths").stdout
    assert "absolute, other than '/', without '..'" in " ".join(paths.split())


def test_without_client_validation_the_server_prunes_an_unknown_field(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    # --validate=false asks the server to ignore unknown fields: it drops them, as for a built-in kind.
    applied = cluster.kubectl(
        "apply", "--validate=false", "-n", namespace, "-f", str(_typo_in_agent(tmp_path))
    )
    assert "timeoutSecond" not in applied.stderr
    stored = yaml.safe_load(cluster.kubectl("get", "oasisevaluation", "careful-agent", "-n", namespace,
                                            "-o", "yaml").stdout)  # fmt: skip
    assert "timeoutSecond" not in stored["spec"]["agent"]["http"]
