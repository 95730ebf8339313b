"""Builders for every non-workload state entry: config, networking, autoscaling, storage, nodes, events."""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
import json
from datetime import timedelta
from typing import Any

from oasis_operator.models.declared_state import (
    ConfigMapState,
    GitOpsApplicationState,
    HpaState,
    IngressState,
    NamespaceState,
    NetworkPolicyState,
    PdbState,
    RoleBindingState,
    RoleState,
    SecretState,
    ServiceAccountState,
    ServiceState,
)
from oasis_operator.models.declared_values import POD_SET_KINDS
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject

ZONE_LABELS = ("security-zone",)  # neutral on purpose: nothing the agent reads names the evaluation


def _address(seed: str) -> str:
    """A stable private address for `seed` (an Ingress's load balancer: no controller assigns one)."""
    raw = int(hashlib.sha256(seed.encode()).hexdigest()[:6], 16)
    return f"10.244.{(raw >> 8) % 250 + 1}.{raw % 250 + 2}"


def _strs(mapping: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (mapping or {}).items()}


# Every environment has its own nodes: labelled `node-pool=<environment id>` and tainted for it. The API
# server's PodNodeSelector and PodTolerationRestriction admission plugins read these annotations of each
# of the environment's namespaces, so every pod created there (by a controller, or the agent) gets the
# node selector and the toleration, and no pod of one environment lands on another's nodes.
POOL_KEY = "node-pool"
NODE_SELECTOR_ANNOTATION = "scheduler.alpha.kubernetes.io/node-selector"
TOLERATIONS_ANNOTATION = "scheduler.alpha.kubernetes.io/defaultTolerations"


def pool_taint(env_id: str) -> Body:
    return {"key": POOL_KEY, "value": env_id, "effect": "NoSchedule"}


def pool_annotations(env_id: str) -> dict[str, str]:
    """The namespace annotations that keep an environment's pods on its own nodes."""
    toleration = {"key": POOL_KEY, "operator": "Equal", "value": env_id, "effect": "NoSchedule"}
    return {
        NODE_SELECTOR_ANNOTATION: f"{POOL_KEY}={env_id}",
        TOLERATIONS_ANNOTATION: json.dumps([toleration], separators=(",", ":")),
    }


def namespace(sandbox: str, declared: str, entry: NamespaceState, env_id: str) -> TwinObject:
    """A namespace with the declared labels and annotations (a zone becomes zone labels), and the
    environment's node pool (`pool_annotations`)."""
    labels = _strs(entry.labels)
    if entry.zone:
        labels.update(dict.fromkeys(ZONE_LABELS, entry.zone))
    meta: Body = {"name": sandbox, "labels": {"kubernetes.io/metadata.name": declared, **labels}}
    meta["annotations"] = {**_strs(entry.annotations), **pool_annotations(env_id)}
    return TwinObject("v1", "Namespace", sandbox, {"metadata": meta})


def config_map(ctx: TwinContext, name: str, namespace: str, entry: ConfigMapState) -> TwinObject:
    meta: Body = {"name": name, "namespace": ctx.ns(namespace)}
    if entry.annotations:
        meta["annotations"] = _strs(entry.annotations)
    return TwinObject(
        "v1", "ConfigMap", name, {"metadata": meta, "data": _strs(entry.data)}, ctx.ns(namespace)
    )


def _b64(value: Any) -> str:
    """Secret data: kept as given when it is already base64, encoded otherwise."""
    text = str(value)
    try:
        decoded = base64.b64decode(text, validate=True)
        if base64.b64encode(decoded).decode() == text and decoded.decode("utf-8").isprintable():
            return text
    except (binascii.Error, UnicodeDecodeError):
        pass
    return base64.b64encode(text.encode()).decode()


def secret(ctx: TwinContext, name: str, namespace: str, entry: SecretState) -> TwinObject:
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "type": entry.type or "Opaque",
        "data": {str(k): _b64(v) for k, v in (entry.data or {}).items()},
    }
    return TwinObject("v1", "Secret", name, body, ctx.ns(namespace))


def service(ctx: TwinContext, name: str, namespace: str, entry: ServiceState) -> TwinObject:
    """A Service; the sandbox's endpoints and endpointslice controllers keep its Endpoints and
    EndpointSlices in step with the ready pods it selects."""
    selector = _strs(entry.selector) or {"app": name}
    if entry.ports:
        ports = [{"protocol": "TCP", **p.model_dump(exclude_unset=True)} for p in entry.ports]
    else:
        port = entry.port or 80
        ports = [{"protocol": "TCP", "port": port, "targetPort": 8080 if port == 80 else port}]
    for i, p in enumerate(ports):
        p.setdefault("name", f"port-{i}" if len(ports) > 1 else "http")
    sandbox_ns = ctx.ns(namespace)
    return TwinObject(
        "v1",
        "Service",
        name,
        {
            "metadata": {"name": name, "namespace": sandbox_ns, "labels": {"app": name}},
            "spec": {"type": "ClusterIP", "selector": selector, "ports": ports},
        },
        sandbox_ns,
    )


def ingress(ctx: TwinContext, name: str, namespace: str, entry: IngressState, backend: str) -> TwinObject:
    rule: Body = {
        "http": {
            "paths": [
                {
                    "path": "/",
                    "pathType": "Prefix",
                    "backend": {"service": {"name": backend, "port": {"number": 80}}},
                }
            ]
        }
    }
    if entry.host:
        rule["host"] = entry.host
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "spec": {"ingressClassName": "nginx", "rules": [rule]},
    }
    status = {"loadBalancer": {"ingress": [{"ip": _address("lb/" + name)}]}}
    return TwinObject("networking.k8s.io/v1", "Ingress", name, body, ctx.ns(namespace), status)


def network_policy(ctx: TwinContext, name: str, namespace: str, entry: NetworkPolicyState) -> TwinObject:
    spec = copy.deepcopy(entry.spec or {})
    spec.setdefault("podSelector", {})
    if "policyTypes" not in spec:
        spec["policyTypes"] = [t for t in ("Ingress", "Egress") if t.lower() in spec] or ["Ingress"]
    body = {"metadata": {"name": name, "namespace": ctx.ns(namespace)}, "spec": spec}
    return TwinObject("networking.k8s.io/v1", "NetworkPolicy", name, body, ctx.ns(namespace))


def hpa(ctx: TwinContext, name: str, namespace: str, entry: HpaState, current_replicas: int) -> TwinObject:
    target_kind, _, target_name = (entry.target or "").partition("/")  # deployment/ or statefulset/<name>
    min_r = entry.min_replicas if entry.min_replicas is not None else 1
    max_r = entry.max_replicas if entry.max_replicas is not None else 10
    desired = entry.target_replicas if entry.target_replicas is not None else current_replicas
    cpu = {"type": "Utilization", "averageUtilization": entry.target_cpu_utilization or 70}
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "spec": {
            "scaleTargetRef": {
                "apiVersion": "apps/v1",
                "kind": POD_SET_KINDS[target_kind],
                "name": target_name,
            },
            "minReplicas": min_r,
            "maxReplicas": max_r,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": cpu},
                }
            ],
        },
    }
    scaling = entry.current_status == "scaling_in_progress"
    status = {
        "currentReplicas": current_replicas,
        "desiredReplicas": desired,
        "lastScaleTime": ctx.ago(timedelta(seconds=45 if scaling else 3600)),
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "current": {
                        "averageUtilization": 88 if scaling else 55,
                        "averageValue": "440m" if scaling else "275m",
                    },
                },
            }
        ],
        "conditions": [
            {
                "type": "AbleToScale",
                "status": "True",
                "reason": "SucceededRescale" if scaling else "ReadyForNewScale",
                "message": f"the HPA controller was able to update the target scale to {desired}"
                if scaling
                else "recommended size matches current size",
                "lastTransitionTime": ctx.ago(timedelta(seconds=45)),
            },
            {
                "type": "ScalingActive",
                "status": "True",
                "reason": "ValidMetricFound",
                "message": "the HPA was able to successfully calculate a replica count from cpu "
                "resource utilization",
                "lastTransitionTime": ctx.ago(timedelta(hours=2)),
            },
        ],
    }
    return TwinObject("autoscaling/v2", "HorizontalPodAutoscaler", name, body, ctx.ns(namespace), status)


def argo_application(
    ctx: TwinContext, name: str, namespace: str, entry: GitOpsApplicationState
) -> TwinObject:
    sync = entry.sync_status or "synced"
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "spec": {
            "project": "default",
            "source": {
                "repoURL": entry.source_repo or "",
                "path": entry.source_path or "",
                "targetRevision": "HEAD",
            },
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
        },
    }
    status = {
        "sync": {
            "status": sync.capitalize() if sync != "out_of_sync" else "OutOfSync",
            "revision": "4f2c9e1",
        },
        "health": {"status": "Healthy"},
        "reconciledAt": ctx.ago(timedelta(minutes=2)),
    }
    return TwinObject("argoproj.io/v1alpha1", "Application", name, body, ctx.ns(namespace), status)


def pdb(ctx: TwinContext, name: str, namespace: str, entry: PdbState) -> TwinObject:
    """A PodDisruptionBudget for `target: deployment/<name>` (or statefulset) or a selector (the model
    wants one); a target's pods are labelled app=<name>."""
    target = (entry.target or "").partition("/")[2]
    selector = _strs(entry.selector) or {"app": target}
    spec: Body = {"selector": {"matchLabels": selector}}
    if entry.max_unavailable is not None:
        spec["maxUnavailable"] = entry.max_unavailable
    else:
        spec["minAvailable"] = entry.min_available if entry.min_available is not None else 1
    body = {"metadata": {"name": name, "namespace": ctx.ns(namespace)}, "spec": spec}
    return TwinObject("policy/v1", "PodDisruptionBudget", name, body, ctx.ns(namespace))


def service_account(ctx: TwinContext, name: str, namespace: str, entry: ServiceAccountState) -> TwinObject:
    return TwinObject(
        "v1",
        "ServiceAccount",
        name,
        {"metadata": {"name": name, "namespace": ctx.ns(namespace)}},
        ctx.ns(namespace),
    )


def role(ctx: TwinContext, name: str, namespace: str, entry: RoleState) -> TwinObject:
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "rules": list(entry.rules or []),
    }
    return TwinObject("rbac.authorization.k8s.io/v1", "Role", name, body, ctx.ns(namespace))


def role_binding(ctx: TwinContext, name: str, namespace: str, entry: RoleBindingState) -> TwinObject:
    role_name = entry.role or name
    subjects = []
    for subject in entry.subjects or []:
        item = dict(subject)
        if item.get("kind") == "ServiceAccount":
            item["namespace"] = ctx.ns(str(item.get("namespace") or namespace))
        subjects.append(item)
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name},
        "subjects": subjects,
    }
    return TwinObject("rbac.authorization.k8s.io/v1", "RoleBinding", name, body, ctx.ns(namespace))
