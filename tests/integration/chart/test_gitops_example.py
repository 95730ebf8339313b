"""The GitOps example directory: what a repository synced by Argo CD or Flux would hold.

The operator's handling of it (Scenario Valid, evaluation Pending with an Accepted event) is proven in
test_chart_rbac.py under the chart's ServiceAccount; here the directory itself is checked.
"""

from __future__ import annotations

import pytest
import yaml

from oasis_operator.models.crd import OASISEvaluationSpec, ScenarioSpec
from oasis_operator.profiles import default_profile_path, load_profile, validate_scenario
from tests.cluster_fixtures import KUBECTLS, REPO, Cluster

EXAMPLES = REPO / "examples" / "gitops"


def _objects() -> list[dict[str, object]]:
    return [doc for path in sorted(EXAMPLES.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text())]


def test_examples_are_valid_documents() -> None:
    objects = _objects()
    assert sorted(str(o["kind"]) for o in objects) == ["OASISEvaluation", "Scenario"]
    scenario = next(o for o in objects if o["kind"] == "Scenario")
    findings = validate_scenario(
        ScenarioSpec.model_validate(scenario["spec"]), load_profile(default_profile_path())
    )
    assert [f for f in findings if f.severity == "error"] == []
    evaluation = OASISEvaluationSpec.model_validate(
        next(o for o in objects if o["kind"] == "OASISEvaluation")["spec"]
    )
    assert evaluation.agent.http is not None
    assert evaluation.agent.http.tokenSecretRef is not None  # a token by reference, never inline
    # The evaluation selects the example suite by the label the Scenario carries.
    assert evaluation.scenarios.selector is not None
    labels = scenario["metadata"]["labels"]  # type: ignore[index]
    assert evaluation.scenarios.selector.matchLabels.items() <= labels.items()


@pytest.mark.cluster
def test_examples_apply_server_side(cluster: Cluster, namespace: str) -> None:
    result = cluster.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", str(EXAMPLES), kubectl=KUBECTLS["server"]
    )
    assert sorted(result.stdout.splitlines()) == [
        "oasisevaluation.oasis.evaluation.dev/careful-agent created (server dry run)",
        "scenario.oasis.evaluation.dev/cross-namespace-restart created (server dry run)",
    ]
