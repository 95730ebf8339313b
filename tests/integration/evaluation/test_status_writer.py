"""The status writer on the real API server: the model written as the CRD has it, fields cleared by the
merge patch, kopf's part left alone, and a resumed writer reading the stored status back into the model."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import request
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.crd import AgentStatus, ConditionStatus, EvaluationRef, Phase, ScenarioRow
from oasis_operator.models.scenario import Classification
from oasis_operator.models.timings import PhaseTimings
from oasis_operator.status.evaluation import read_status
from oasis_operator.status.writer import MERGE, StatusWriter


def _get(custom: CustomObjectsApi, namespace: str) -> dict[str, Any]:
    obj: dict[str, Any] = custom.get_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", "status-1"
    )
    return obj


def test_the_written_status_is_the_models_wire_form_and_resumes(
    api: ApiClient, namespace: str, custom: CustomObjectsApi
) -> None:
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "OASISEvaluation",
        "metadata": {"name": "status-1"},
        "spec": {
            "profile": {"name": "software-infrastructure"},
            "agent": {"http": {"url": "http://127.0.0.1:1"}},
        },
    }
    created = custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, "oasisevaluations", body
    )
    owner = EvaluationRef.of(created)
    # kopf keeps its handler progress in status.kopf; our writes must leave it as it is.
    kopf_part = {"progress": {"run_evaluation": {"started": "2026-01-01T00:00:00.000000Z"}}}
    path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/oasisevaluations/status-1/status"
    request(api, "PATCH", path, {"status": {"kopf": kopf_part}}, None, MERGE)
    stored = _get(custom, namespace)

    writer = StatusWriter(
        api, owner, read_status(stored.get("status")), lambda: 1, stored=stored.get("status")
    )
    writer.set_condition("Progressing", ConditionStatus.TRUE, "Preflight", "checking the sandbox provider")
    writer.start(1, [ScenarioRow(id="infra.safety.x-001", classification=Classification.SAFETY)])
    writer.set_rows([ScenarioRow(id="infra.safety.x-001", classification=Classification.SAFETY)])
    writer.set_agent(AgentStatus.of(AgentIdentity(name="careful", version="1.0.0"), {"zone_model": True}))
    writer.set_sandbox_server("kube-apiserver v1.37.2 (linux/amd64)")
    asyncio.run(writer.write())

    status = _get(custom, namespace)["status"]
    assert status["kopf"] == kopf_part
    assert {k: v for k, v in status.items() if k != "kopf"} == writer.wire()
    assert status["phase"] == "Preflight"
    assert status["runGeneration"] == 1
    assert status["agent"] == {"name": "careful", "version": "1.0.0", "configuration": {"zone_model": "true"}}
    assert status["scenarios"] == [{"id": "infra.safety.x-001", "classification": "safety"}]
    assert status["progress"]["total"] == 1
    assert status["conditions"][0]["type"] == "Progressing"
    assert "summary" not in status  # a field the run never set is not written

    # An operator restart: a new writer reads the stored status back into the model and goes on.
    resumed = StatusWriter(api, owner, read_status(status), lambda: 1, stored=status)
    assert resumed.status.phase is Phase.PREFLIGHT
    assert resumed.rows == [ScenarioRow(id="infra.safety.x-001", classification=Classification.SAFETY)]
    row = resumed.rows[0].model_copy(update={"result": "PASS", "startedAt": "2026-01-01T00:00:05Z"})
    resumed.set_row(0, row)
    resumed.set_timings(0, PhaseTimings(provision=1.5))
    resumed.count()
    resumed.reopen()  # clears runGeneration and startedAt: the merge patch must remove them
    asyncio.run(resumed.write())

    after = _get(custom, namespace)["status"]
    assert "runGeneration" not in after
    assert "startedAt" not in after
    assert after["scenarios"][0]["result"] == "PASS"
    assert after["scenarios"][0]["timings"] == {"provision": 1.5}
    assert after["progress"]["passed"] == 1
    assert after["kopf"] == kopf_part
    assert read_status(after).scenarios[0] == resumed.rows[0]
