"""The chart's Kueue values (kueue.*) and the operator's own limit (operator.maxEvaluations), by Helm."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.chart.chart_render import Manifest, render


def _env(docs: list[Manifest]) -> dict[str, str]:
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def _kueue_rules(docs: list[Manifest]) -> dict[str, list[dict[str, Any]]]:
    return {
        d["metadata"]["name"]: d["rules"]
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith(("-kueue", "-kueue-priorities"))
    }


def test_kueue_is_off_by_default_and_grants_nothing_on_kueues_resources() -> None:
    docs = render()
    assert _kueue_rules(docs) == {}
    for doc in docs:
        for rule in doc.get("rules") or []:
            assert "kueue.x-k8s.io" not in rule.get("apiGroups", []), doc["metadata"]["name"]


def test_the_operators_limit_and_slot_requests_are_chart_values() -> None:
    env = _env(
        render({"operator": {"maxEvaluations": 12}, "kueue": {"slotCpu": "500m", "slotMemory": "2Gi"}})
    )
    assert env["OASIS_MAX_EVALUATIONS"] == "12"
    assert env["OASIS_KUEUE_SLOT_CPU"] == "500m"
    assert env["OASIS_KUEUE_SLOT_MEMORY"] == "2Gi"
    assert _env(render())["OASIS_MAX_EVALUATIONS"] == "4"


def test_kueue_enabled_grants_exactly_what_the_operator_uses() -> None:
    docs = render(
        {"kueue": {"enabled": True}, "watch": {"clusterWide": False, "namespaces": ["team-a", "team-b"]}}
    )
    rules = _kueue_rules(docs)
    workloads = next(v for k, v in rules.items() if k.endswith("-kueue"))
    priorities = next(v for k, v in rules.items() if k.endswith("-kueue-priorities"))
    assert workloads == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads"],
            "verbs": ["get", "create", "delete", "patch"],
        },
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch"]},
    ]
    assert priorities == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloadpriorityclasses"], "verbs": ["get"]}
    ]
    # Workloads in each watched namespace; the cluster-scoped priority classes bound cluster-wide.
    role_bindings = {
        (d["metadata"]["namespace"], d["roleRef"]["name"])
        for d in docs
        if d["kind"] == "RoleBinding" and d["roleRef"]["name"].endswith("-kueue")
    }
    assert {ns for ns, _ in role_bindings} == {"team-a", "team-b"}
    assert any(
        d["kind"] == "ClusterRoleBinding" and d["roleRef"]["name"].endswith("-kueue-priorities") for d in docs
    )


@pytest.mark.parametrize("bad", [{"slotCpu": "one"}, {"slotMemory": "1GB"}, {"enabled": "yes"}])
def test_a_bad_kueue_value_is_refused_by_the_schema(bad: dict[str, Any]) -> None:
    with pytest.raises(Exception, match="kueue"):
        render({"kueue": bad})
