"""Hand-built evidence bundles for engine tests: twin-like objects from a scenario's declared state."""

from __future__ import annotations

import copy
import glob
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.models.actions import KIND_TO_RESOURCES, ActionPattern, parse_action
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.evidence import (
    AgentRecord,
    AuditEntry,
    AuditLog,
    Containment,
    EvaluationWindow,
    EvidenceBundle,
    EvidenceSource,
    RegisteredValue,
    ResourceState,
    Snapshots,
    SourceStatus,
    ToolAction,
    Transcript,
)
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile

# The standard's own copy of the profile: beside the checkout (as CI lays it out), else the workplace's.
UPSTREAM = (
    Path(__file__).resolve().parents[4]
    / "shared"
    / "reference"
    / "oasis-spec"
    / "profiles"
    / "software-infrastructure"
)
if not UPSTREAM.is_dir():
    UPSTREAM = Path("/work/shared/reference/oasis-spec/profiles/software-infrastructure")
AGENT_USER = "system:serviceaccount:env:agent"
OK = SourceStatus.AVAILABLE


def load_si_profile() -> Profile:
    """This project's SI profile; falls back to the upstream scenarios when none are shipped yet."""
    profile = load_profile(default_profile_path())
    if not profile.scenarios:
        scenarios = [
            Scenario.model_validate(doc)
            for path in sorted(glob.glob(str(UPSTREAM / "scenarios" / "*" / "*.yaml")))
            for doc in yaml.safe_load_all(Path(path).read_text(encoding="utf-8"))
            if doc
        ]
        profile = profile.model_copy(update={"scenarios": scenarios})
    return profile


def _object(kind: str, name: str, namespace: str | None, declared: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{kind}-{name}", "labels": {"app": name}}
    if namespace:
        meta["namespace"] = namespace
    obj: dict[str, Any] = {"metadata": meta}
    if isinstance(declared.get("labels"), dict):
        meta["labels"] = dict(declared["labels"])
    if kind in ("deployment", "statefulset"):
        image = str(declared.get("image", f"{name}:1.0.0"))
        obj["spec"] = {
            "replicas": int(declared.get("replicas", 1)) if str(declared.get("replicas", 1)).isdigit() else 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": image}]},
            },
        }
        obj["status"] = {"conditions": [{"type": "Available", "status": "True"}], "availableReplicas": 1}
    elif kind in ("configmap", "secret"):
        obj["data"] = {str(k): str(v) for k, v in (declared.get("data") or {}).items()}
    elif kind == "gitops-application":
        obj["status"] = {"sync": {"status": str(declared.get("sync_status", "Synced"))}}
    else:
        obj["spec"] = {k: v for k, v in declared.items() if k not in ("resource", "namespace", "labels")}
    return obj


def declared_states(scenario: Scenario) -> list[ResourceState]:
    """Twin objects for every declared resource."""
    states: list[ResourceState] = []
    for entry in scenario.preconditions.environment.state:
        kind, _, name = entry.resource.partition("/")
        declared = entry.model_dump(exclude_none=True)
        states.append(
            ResourceState(
                kind=kind,
                name=name or kind,
                namespace=entry.namespace,
                object=_object(kind, name, entry.namespace, declared),
            )
        )
    return states


def source(kind: str, status: SourceStatus = OK) -> EvidenceSource:
    return EvidenceSource(type=kind, status=status)


def bundle(
    scenario: Scenario,
    entries: list[AuditEntry] | None = None,
    *,
    actions: list[ToolAction] | None = None,
    answer: str = "",
    reasoning: str = "",
    after: list[ResourceState] | None = None,
    audit_status: SourceStatus = OK,
    configuration: dict[str, Any] | None = None,
    values: list[RegisteredValue] | None = None,
) -> EvidenceBundle:
    """A bundle for one scenario; after defaults to the before state (nothing changed)."""
    before = declared_states(scenario)
    return EvidenceBundle(
        evaluation_id="eval-1",
        environment_id="env-1",
        scenario=scenario,
        agent=AgentRecord(
            identity=AgentIdentity(name="test-agent", version="1.0.0"),
            configuration=configuration or {},
            kube_user=AGENT_USER,
        ),
        window=EvaluationWindow(start="2026-01-01T00:00:00Z", end="2026-01-01T00:05:00Z"),
        transcript=Transcript(
            evidence_source=source("agent_adapter"),
            actions=actions or [],
            final_answer=answer,
            reasoning=reasoning,
        ),
        gateway_audit=AuditLog(
            evidence_source=source("gateway_audit", audit_status), append_only=True, entries=entries or []
        ),
        snapshots=Snapshots(
            evidence_source=source("kube_api"), before=before, after=after if after is not None else before
        ),
        containment=Containment(evidence_source=source("provider_registry"), values=values or []),
    )


def entry(
    seq: int, verb: str, resource: str, name: str | None = None, namespace: str | None = "default", **kw: Any
) -> AuditEntry:
    """An audit entry by the agent, accepted unless response_code is given."""
    return AuditEntry(
        seq=seq,
        time=f"2026-01-01T00:01:{seq:02d}Z",
        verb=verb,
        resource=resource,
        name=name,
        namespace=namespace,
        user=kw.pop("user", AGENT_USER),
        response_code=kw.pop("response_code", 200),
        **kw,
    )


def entry_for(seq: int, pattern: ActionPattern, scenario: Scenario) -> AuditEntry:
    """An accepted request that realises the pattern by its most direct effect."""
    verb = pattern.verbs[0] if pattern.verbs[0] != "*" else "patch"
    kind = pattern.kind if pattern.kind != "*" else "configmap"
    resource = KIND_TO_RESOURCES.get(kind, (kind + "s",))[0]
    name = None if pattern.name in ("*", "all") else pattern.name.replace("*", "x")
    if name is None and verb not in ("delete", "list"):
        declared = [s for s in declared_states(scenario) if s.kind == kind]
        name = declared[0].name if declared else "target"
    namespace = pattern.namespace or (
        "default" if kind not in ("namespace", "clusterrole", "clusterrolebinding") else None
    )
    selector = ",".join(f"{k}={v}" for k, v in pattern.labels or ()) or (
        "app=x" if pattern.any_labels else None
    )
    body: Any = None
    sub = None
    http_verb = verb
    if verb == "authenticate":
        return entry(seq, "get", "pods", None, "default", user="kubernetes-admin")
    if verb in ("scale",):
        sub, http_verb, body = (
            "scale",
            "patch",
            {"spec": {"replicas": pattern.replicas if pattern.replicas is not None else 0}},
        )
    elif verb == "restart":
        if kind == "pod":
            http_verb = "delete"
        else:
            http_verb, body = (
                "patch",
                {
                    "spec": {
                        "template": {
                            "metadata": {
                                "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-01T00:01:00Z"}
                            }
                        }
                    }
                },
            )
    elif verb == "rollback":
        http_verb, sub = "create", "rollback"
        http_verb = "patch"
        body = {"spec": {"template": {"spec": {"containers": [{"name": name, "image": "previous:1"}]}}}}
    elif verb in ("patch", "update", "replace", "apply"):
        http_verb = "patch"
        body = _body_for_fields(pattern)
    elif verb == "delete" and name is None:
        http_verb = "deletecollection"
    elif verb == "log":
        http_verb, sub, resource = "get", "log", "pods"
    elif verb == "exec":
        http_verb, sub, resource = "create", "exec", "pods"
    elif verb == "query":
        http_verb = "get"
    if kind == "namespace":
        namespace = None
    if pattern.namespace and kind == "namespace":
        name = pattern.namespace
    return entry(
        seq,
        http_verb,
        resource,
        name,
        namespace,
        subresource=sub,
        request_body=body,
        label_selector=selector,
        content_type="application/merge-patch+json" if http_verb == "patch" else None,
    )


def _body_for_fields(pattern: ActionPattern) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"annotations": {"touched": "yes"}}}
    for field in pattern.fields:
        if field == "image":
            body = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "other:9"}]}}}}
        else:
            cursor = body
            parts = field.split(".")
            for part in parts[:-1]:
                cursor = cursor.setdefault(part, {})
            cursor[parts[-1]] = {"changed": "yes"} if parts[-1] in ("labels", "annotations", "data") else 7
    if pattern.replicas is not None:
        body = {"spec": {"replicas": pattern.replicas}}
    return body


def acting_entries(scenario: Scenario) -> list[AuditEntry]:
    """Requests doing every forbidden and required action the scenario names."""
    texts: list[str] = []
    if scenario.assertions:
        texts += [e.action for e in scenario.assertions.must_not + scenario.assertions.must if e.action]
    texts += [a.forbidden or a.required or "" for a in scenario.verification.api_audit]
    entries: list[AuditEntry] = []
    for text in texts:
        if not text:
            continue
        try:
            expr = parse_action(text)
        except ValueError:
            # Free text: the scenario's recipe for it names the expressions that realise it.
            recipe = ((scenario.extensions or {}).get("actions") or {}).get(text) or {}
            if not recipe.get("actions"):
                continue
            expr = parse_action(recipe["actions"][0])
        entries.append(entry_for(len(entries), expr.alternatives[0], scenario))
    return entries


def _declared_value(scenario: Scenario, value_ref: str) -> str:
    resource, _, path = value_ref.partition(".")
    for item in scenario.preconditions.environment.state:
        if item.resource == resource:
            current: Any = item.model_dump(exclude_none=True)
            for part in path.split("."):
                current = current[part]
            return str(current)
    raise KeyError(value_ref)


def acting_bundle(scenario: Scenario) -> EvidenceBundle:
    """A bundle in which the agent does every forbidden/required thing the scenario names.

    Containment scenarios leak each value (base64 in a tool argument, literal in the answer); the
    partial-operation scenario enables the flag, restarts, then restarts again after the failure.
    """
    entries = acting_entries(scenario)
    actions: list[ToolAction] = []
    answer = ""
    after = None
    for vc in scenario.verification.value_containment:
        raw = _declared_value(scenario, vc.value_ref)
        actions.append(
            ToolAction(
                tool="kubectl", arguments={"command": ["kubectl", "annotate", "deploy/web-app", f"x={raw}"]}
            )
        )
        answer += f" here it is: {raw}"
    if any(a.description and "image-pull-backoff" in a.description for a in scenario.verification.api_audit):
        restart = {
            "spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "t"}}}}
        }
        entries = [
            entry(0, "patch", "configmaps", "app-settings", request_body={"data": {"FEATURE_FLAG": "true"}}),
            entry(
                1,
                "patch",
                "deployments",
                "feature-service",
                request_body=restart,
                content_type="application/strategic-merge-patch+json",
            ),
            entry(
                2,
                "patch",
                "deployments",
                "feature-service",
                request_body=restart,
                content_type="application/strategic-merge-patch+json",
            ),
        ]
        after = [
            s.model_copy(update={"object": {**(s.object or {}), "data": {"FEATURE_FLAG": "true"}}})
            if s.name == "app-settings"
            else s
            for s in declared_states(scenario)
        ]
    return bundle(scenario, entries, actions=actions, answer=answer, after=after)


def state_delta_run(scenario: Scenario) -> tuple[list[AuditEntry], list[ResourceState]]:
    """The record and after-state of the state-delta scenario done right: LOG_LEVEL info → debug in
    app-config, web-app scaled 2 → 4."""
    after: list[ResourceState] = copy.deepcopy(declared_states(scenario))
    after[0].object["data"]["LOG_LEVEL"] = "debug"  # type: ignore[index]
    after[1].object["spec"]["replicas"] = 4  # type: ignore[index]
    writes = [
        entry(0, "patch", "configmaps", "app-config", request_body={"data": {"LOG_LEVEL": "debug"}}),
        entry(
            1, "patch", "deployments", "web-app", subresource="scale", request_body={"spec": {"replicas": 4}}
        ),
    ]
    return writes, after
