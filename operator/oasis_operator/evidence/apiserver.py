"""The sandbox API server's own audit (evidence type `audit_log_file`) as one environment's `AuditLog`.

Pure functions over `audit.k8s.io/v1` events. Every identity is kept and attributed (`Actor`):

- ``agent``: the environment's ServiceAccount, as the gateway's identity impersonates it (or its own
  token);
- ``provider``: the operator's own identity acting as itself (setup, dynamics, snapshots, teardown),
  and the gateway's identity acting as itself (its filtered reads, temporal stimuli);
- ``controller``: the cluster's controllers and system identities (controller-manager, kube-system
  ServiceAccounts, nodes, the API server itself);
- ``anonymous``: no credential;
- ``foreign``: any other credential used in the sandbox, e.g. a ServiceAccount token the agent found;
- ``other``: an identity of ours impersonating someone who is not the agent, or the operator's own
  identity impersonating the agent (only the gateway forwards the agent's requests).

The identities of ours are learnt from what the API server authenticated (`Identities`, from fences:
`evidence.stream`). Where the gateway has no identity of its own (the chart's sandbox.mode=host) the
two sets hold the same name, and the operator's identity impersonating the agent is the agent.

Which events belong to an environment (`belongs_to`): those on its sandbox namespaces (objects in them
and the namespaces themselves), on its renamed cluster-scoped objects and on its own objects in the shared
control namespace, and those made by an identity that lives in the environment (its agent, or a
ServiceAccount of one of its namespaces), wherever they went. Another environment's agent is not of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from oasis_operator.models.environment import Environment
from oasis_operator.models.evidence import Actor, AuditEntry, AuditLog, EvidenceSource, SourceStatus

SOURCE_TYPE = "audit_log_file"
_METHODS = {
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}
# The cluster's own identities: the controllers, the scheduler, the API server, and kwok playing the
# kubelets of the sandbox's nodes (its certificate's name, `pki.KWOK_USER`; a real kubelet is
# `system:node:<name>`).
CONTROLLER_USERS = frozenset(
    {"system:kube-controller-manager", "system:kube-scheduler", "system:apiserver", "system:node-simulator"}
)
CONTROLLER_PREFIXES = ("system:serviceaccount:kube-system:", "system:node:")
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ANONYMOUS = "system:anonymous"
# The API server records the credential's id (a ServiceAccount token's JTI, a certificate's serial) from
# Kubernetes 1.30 on; older servers leave it out and the entry carries the identity alone.
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"


@dataclass(frozen=True)
class Identities:
    """Our identities on the sandbox API server, as it authenticated them."""

    provider: frozenset[str] = frozenset()  # the operator's
    gateway: frozenset[str] = frozenset()  # the agent gateway's

    @property
    def ours(self) -> frozenset[str]:
        return self.provider | self.gateway


def username_of(block: Any) -> str:
    return str(block.get("username") or "") if isinstance(block, Mapping) else ""


def acting_user(event: Mapping[str, Any]) -> str:
    """The identity the request acted as: the impersonated user if any, else the authenticated one."""
    return username_of(event.get("impersonatedUser")) or username_of(event.get("user"))


def attribute(event: Mapping[str, Any], env: Environment, ours: Identities) -> Actor:
    """Who made the request, by the identities the API server authenticated (never by what it claims)."""
    authenticated = username_of(event.get("user"))
    impersonated = username_of(event.get("impersonatedUser"))
    acting = impersonated or authenticated
    if acting == env.agent.username and (not impersonated or authenticated in ours.gateway):
        return Actor.AGENT
    if impersonated and authenticated in ours.ours:
        return Actor.OTHER
    if acting == ANONYMOUS:
        return Actor.ANONYMOUS
    if authenticated in ours.ours:
        return Actor.PROVIDER
    if acting in CONTROLLER_USERS or acting.startswith(CONTROLLER_PREFIXES):
        return Actor.CONTROLLER
    return Actor.FOREIGN


def _fingerprint(event: Mapping[str, Any]) -> str | None:
    user = event.get("user")
    extra = user.get("extra") if isinstance(user, Mapping) else None
    values = extra.get(CREDENTIAL_ID) if isinstance(extra, Mapping) else None
    if not values:
        return None
    text = ",".join(str(v) for v in values) if isinstance(values, list) else str(values)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _namespaces(env: Environment) -> frozenset[str]:
    return frozenset(b.sandbox for b in env.namespaces)


def _own_control_object(env: Environment, namespace: Any, name: Any) -> bool:
    """An object of this environment in the control namespace, which every environment shares: its
    ServiceAccount and record carry the environment id in their names."""
    return namespace == env.control_namespace and env.id in str(name or "")


def belongs_to(event: Mapping[str, Any], env: Environment) -> bool:
    """True when the event touched the environment or was made by an identity living in it."""
    namespaces = _namespaces(env)
    ref = event.get("objectRef") or {}
    name = ref.get("name")
    if ref.get("namespace") in namespaces or _own_control_object(env, ref.get("namespace"), name):
        return True
    if ref.get("resource") == "namespaces" and name in namespaces:
        return True
    if name and any(o.sandbox == name for o in env.cluster_objects):
        return True
    for user in (acting_user(event), username_of(event.get("user"))):
        if not user.startswith(SERVICE_ACCOUNT_PREFIX):
            continue
        parts = user.split(":")
        if len(parts) == 4 and (parts[2] in namespaces or _own_control_object(env, parts[2], parts[3])):
            return True
    return False


def declared_path(uri: str, env: Environment) -> str:
    """The request path with sandbox names replaced by the ones the agent knows (no query)."""
    renames = env.renames()
    return "/".join(renames.get(part, part) for part in urlsplit(uri).path.split("/"))


def _query(uri: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(uri).query, keep_blank_values=True))


def _response_meta(event: Mapping[str, Any]) -> tuple[str | None, str | None, Any]:
    body = event.get("responseObject")
    if not isinstance(body, Mapping) or body.get("kind") == "Status":
        return None, None, None
    meta = body.get("metadata") or {}
    uid = meta.get("uid")
    version = meta.get("resourceVersion")
    return (str(uid) if uid else None), (str(version) if version else None), body


def to_entry(seq: int, event: Mapping[str, Any], env: Environment, ours: Identities) -> AuditEntry:
    """One audit event as the engine reads it, with sandbox namespaces named as the agent knows them."""
    ref = event.get("objectRef") or {}
    sandbox_ns = ref.get("namespace")
    declared = env.declared_namespace(sandbox_ns) if sandbox_ns else None
    name = ref.get("name")
    if ref.get("resource") == "namespaces" and name:
        name = env.declared_namespace(name) or name
    elif name:
        name = next((o.declared for o in env.cluster_objects if o.sandbox == name), name)
    verb = str(event.get("verb", ""))
    uri = str(event.get("requestURI", ""))
    query = _query(uri)
    actor = attribute(event, env, ours)
    uid, version, body = _response_meta(event)
    return AuditEntry(
        seq=seq,
        time=str(event.get("requestReceivedTimestamp") or event.get("stageTimestamp") or ""),
        method=_METHODS.get(verb, verb.upper()),
        path=declared_path(uri, env),
        verb=verb,
        group=str(ref.get("apiGroup") or ""),
        version=str(ref.get("apiVersion") or "v1"),
        resource=str(ref.get("resource") or ""),
        subresource=ref.get("subresource"),
        name=name,
        namespace=declared,
        sandbox_namespace=sandbox_ns,
        user=acting_user(event),
        actor=actor,
        credential=_fingerprint(event) if actor == Actor.FOREIGN else None,
        query=query,
        request_body=event.get("requestObject"),
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
        response_code=int((event.get("responseStatus") or {}).get("code") or 0),
        response_uid=uid,
        response_resource_version=version,
        response_body=body,
    )


def audit_log(
    events: Iterable[Mapping[str, Any]],
    env: Environment,
    ours: Identities,
    fault: str | None = None,
) -> AuditLog:
    """The environment's entries, oldest first; a stream fault makes the source `unreachable`.

    A faulted stream never yields an empty, healthy record: its entries are dropped with it.
    """
    if fault is not None:
        source = EvidenceSource(type=SOURCE_TYPE, status=SourceStatus.UNREACHABLE, detail=fault)
        return AuditLog(evidence_source=source, entries=[])
    ordered = sorted(
        (e for e in events if belongs_to(e, env)),
        key=lambda e: (str(e.get("requestReceivedTimestamp", "")), str(e.get("auditID", ""))),
    )
    return AuditLog(
        evidence_source=EvidenceSource(type=SOURCE_TYPE, status=SourceStatus.AVAILABLE),
        entries=[to_entry(i, e, env, ours) for i, e in enumerate(ordered)],
    )
