"""`/v1/inject-state`: more declared state written into a running environment, built by the twin builder.

The scenario's own state plus the injected entries go through `build_twin` again, so an injected entry
becomes exactly the objects (and status) it would have been at provisioning. Objects the first plan did
not have are created; objects it had are patched to the new body and status; fixture entries (metrics,
logs, alerts, ...) replace the gateway's entry of the same kind and name. A new namespace cannot be
injected (the agent's RBAC and the gateway's name map were made for the provisioned ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oasis_operator.kube import MERGE_PATCH, request, resource_path
from oasis_operator.models.declared_parse import ParsedState
from oasis_operator.models.environment import FixtureEntry
from oasis_operator.models.scenario import Scenario
from oasis_operator.provider_api.wire import WireError, state_key
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider
from oasis_operator.sandbox.twin import TwinObject, TwinPlan, build_twin, parse_twin_state
from oasis_operator.sandbox.twin.plan import TwinError


@dataclass(frozen=True)
class Injection:
    """What one inject-state call changed, and the scenario and twin as they now stand."""

    scenario: Scenario
    parsed: ParsedState  # the grown scenario's state, parsed (for the next injection)
    plan: TwinPlan
    created: list[str]
    patched: list[str]
    fixtures: list[FixtureEntry]


def with_state(scenario: Scenario, entries: list[dict[str, Any]]) -> Scenario:
    """`scenario` whose declared state has `entries` added (an entry for the same resource replaced)."""
    document = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    state = document["preconditions"]["environment"]["state"]
    replaced = {state_key(e) for e in entries}
    document["preconditions"]["environment"]["state"] = [
        e for e in state if state_key(e) not in replaced
    ] + entries
    return Scenario.model_validate(document)


def _label(obj: TwinObject, declared: dict[str, str]) -> str:
    """`Kind namespace/name` in the names the agent and the runner know (never a sandbox name)."""
    namespace = declared.get(obj.namespace or "", obj.namespace)
    return f"{obj.kind} {namespace + '/' if namespace else ''}{obj.name}"


def inject(
    provider: SandboxProvider,
    scenario: Scenario,
    env_id: str,
    entries: list[dict[str, Any]],
    parsed: ParsedState | None = None,
) -> Injection:
    """Write `entries` into the environment; returns what changed.

    `parsed`: `scenario`'s state as parsed when it was provisioned or last injected into (the
    record's, or the last `Injection.parsed`); parsed again here if None.
    """
    now = provider.clock()
    try:
        grown = with_state(scenario, entries)
        old = build_twin(scenario, env_id, provider.prefix, now, parsed)
        grown_parsed = parse_twin_state(grown)
        new = build_twin(grown, env_id, provider.prefix, now, grown_parsed)
    except (TwinError, ValueError) as exc:
        raise WireError(422, "state", str(exc)) from None
    known = {b.sandbox for b in old.namespaces}
    fresh = [b.declared for b in new.namespaces if b.sandbox not in known]
    if fresh:
        raise WireError(
            422, "state", f"namespace {fresh[0]!r} was not provisioned; declare it in the scenario's state"
        )
    declared = {b.sandbox: b.declared for b in new.namespaces}
    created: list[str] = []
    patched: list[str] = []
    for obj in new.objects:
        if obj.kind == "Namespace":
            continue
        before = old.find(obj.kind, obj.namespace, obj.name)
        if before is not None and before.body == obj.body and before.status == obj.status:
            continue
        version = obj.api_version  # the current API versions the twin writes (policy/v1, autoscaling/v2, ...)
        path = resource_path(obj.kind, obj.namespace, obj.name, api_version=version)
        if before is None:
            body = _with_owner(provider, obj)
            body["metadata"].setdefault("labels", {})[ENV_LABEL] = env_id
            collection = resource_path(obj.kind, obj.namespace, api_version=version)
            request(provider.api, "POST", collection, {"apiVersion": version, "kind": obj.kind, **body})
            created.append(_label(obj, declared))
        else:
            patch = {k: v for k, v in obj.body.items() if k != "metadata"}
            patch["metadata"] = {"labels": obj.body.get("metadata", {}).get("labels", {})}
            request(provider.api, "PATCH", path, patch, content_type=MERGE_PATCH)
            patched.append(_label(obj, declared))
        if obj.status is not None:
            request(provider.api, "PATCH", path + "/status", {"status": obj.status}, content_type=MERGE_PATCH)
    old_fixtures = {(f.kind, f.name, f.namespace): f for f in old.fixtures}
    changed = [f for f in new.fixtures if old_fixtures.get((f.kind, f.name, f.namespace)) != f]
    return Injection(
        scenario=grown, parsed=grown_parsed, plan=new, created=created, patched=patched, fixtures=changed
    )


def _with_owner(provider: SandboxProvider, obj: TwinObject) -> dict[str, Any]:
    body = dict(obj.body)
    body["metadata"] = dict(body.get("metadata", {}))
    if obj.owner is not None:
        kind, name = obj.owner
        owner = request(provider.api, "GET", resource_path(kind, obj.namespace, name))
        body["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "name": name,
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return body
