"""The agent's identity declaration through the operator: every declared field reaches the status, the
verdict, the report and the evidence, and answers from two models flag the run heterogeneous."""

from __future__ import annotations

import json
from itertools import count

from aiohttp import web
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator.evaluation.store import DocumentStore
from tests.e2e.agent_server import ScriptedAgent
from tests.e2e.support import OperatorProcess, condition, create, evaluation, wait_phase

ONE = {"ids": ["infra.safety.be.zone-violation-001"]}
TWO = {"ids": ["infra.safety.be.zone-violation-001", "infra.safety.de.direct-secret-request-001"]}
DIGEST = "sha256:" + "5e" * 32
DECLARED = {
    "name": "declaring",
    "version": "2.0.0",
    "binary_version": "2.0.0+b42",
    "binary_digest": DIGEST,
    "config_hash": "sha256:" + "c0" * 32,
    "system_prompt_hash": "sha256:" + "d1" * 32,
    "model": "model-a",
    "provider": "provider-x",
    "wrapper_text": "Task follows.\n{prompt}",
    "temperature": 0.3,
}


class DeclaringAgent(ScriptedAgent):
    """Declares `identity`; does nothing, and names model-a, then model-b, in its answers."""

    def __init__(self, identity: dict[str, object] | None = None) -> None:
        super().__init__("declaring")
        self.identity = DECLARED if identity is None else identity
        self._answers = count()

    async def _identity(self, _: web.Request) -> web.Response:
        return web.json_response({"identity": self.identity, "configuration": {}})

    async def _run(self, _: web.Request) -> web.StreamResponse:
        self.calls += 1
        model = "model-a" if next(self._answers) % 2 == 0 else "model-b"
        return web.json_response({"actions": [], "final_answer": "nothing to do", "model": model})


def test_declared_identity_is_kept_and_two_models_flag_the_run_heterogeneous(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    with DeclaringAgent() as agent:
        spec_agent = {"name": "declaring", "http": {"url": agent.url, "timeoutSeconds": 30}}
        create(custom, namespace, evaluation("declaring", spec_agent, scenarios=TWO))
        obj = wait_phase(custom, namespace, "declaring", timeout=300)
    status = obj["status"]
    assert status["phase"] == "Completed", status
    assert {k: status["agent"].get(k) for k in ("binaryDigest", "model", "provider", "wrapperText")} == {
        "binaryDigest": DIGEST,
        "model": "model-a",
        "provider": "provider-x",
        "wrapperText": "Task follows.\n{prompt}",
    }
    assert status["summary"]["agentModels"] == {
        "declared": "model-a",
        "observed": ["model-a", "model-b"],
        "heterogeneous": True,
    }

    sets = DocumentStore(api).read_all(namespace, obj["metadata"]["uid"])
    metadata = json.loads(sets["verdict"]["verdict.json"])["verdict"]["metadata"]
    assert metadata["agent_declaration"] == {
        **{k: v for k, v in DECLARED.items() if k not in ("name", "version", "temperature")},
        "additional": {"temperature": 0.3},
    }
    assert metadata["agent_models"]["heterogeneous"] is True
    report = json.loads(sets["report"]["report.json"])["report"]
    assert "Heterogeneous models" in report["statements"]["agent_models"]
    assert "HETEROGENEOUS MODELS" in sets["report"]["report.html"]
    bundles = [
        json.loads(files["bundle.json"]) for name, files in sets.items() if name.startswith("scenario-")
    ]
    assert sorted(b["transcript"]["model"] for b in bundles) == ["model-a", "model-b"]
    assert {b["agent"]["identity"]["system_prompt_hash"] for b in bundles} == {"sha256:" + "d1" * 32}
    models = {r["scenario_id"]: r["agent_model"] for r in report["scenarios"]}
    assert sorted(models.values()) == ["model-a", "model-b"]


def test_a_declared_field_of_the_wrong_type_is_a_degraded_condition_naming_it(
    custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    with DeclaringAgent({"name": "declaring", "model": 7}) as agent:
        spec_agent = {"name": "fallback-name", "http": {"url": agent.url, "timeoutSeconds": 30}}
        create(custom, namespace, evaluation("wrong-model", spec_agent, scenarios=ONE))
        status = wait_phase(custom, namespace, "wrong-model", timeout=300)["status"]
    assert status["phase"] == "Completed", status
    degraded = condition({"status": status}, "Degraded")
    assert degraded is not None
    assert degraded["reason"] == "AgentIdentityUnavailable"
    assert "identity-and-configuration.identity.model: Input should be a valid string" in degraded["message"]
    assert status["agent"]["name"] == "fallback-name"
    assert "model" not in status["agent"]
