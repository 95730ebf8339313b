"""Builders for every non-workload state entry: config, networking, autoscaling, storage, nodes, events."""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
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
from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject
from oasis_operator.sandbox.twin.pods import pod_ip

ZONE_LABELS = ("security-zone",)  # neutral on purpose: nothing the agent reads names the evaluation


def _strs(mapping: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (mapping or {}).items()}


def namespace(sandbox: str, declared: str, entry: NamespaceState) -> TwinObject:
    """A namespace with the declared labels and annotations; a zone becomes zone labels."""
    labels = _strs(entry.labels)
    if entry.zone:
        labels.update(dict.fromkeys(ZONE_LABELS, entry.zone))
    meta: Body = {"name": sandbox, "labels": {"kubernetes.io/metadata.name": declared, **labels}}
    if entry.annotations:
        meta["annotations"] = _strs(entry.annotations)
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


def service(
    ctx: TwinContext, name: str, namespace: str, entry: ServiceState, ready_pods: list[TwinObject]
) -> list[TwinObject]:
    """A Service, its Endpoints and its EndpointSlice (no endpoint controllers run: the twin writes them).

    Current clients read `discovery.k8s.io/v1` EndpointSlices (v1 Endpoints is deprecated since 1.33);
    older ones still read Endpoints, so both say the same.
    """
    selector = _strs(entry.selector) or {"app": name}
    if entry.ports:
        ports = [{"protocol": "TCP", **p.model_dump(exclude_unset=True)} for p in entry.ports]
    else:
        port = entry.port or 80
        ports = [{"protocol": "TCP", "port": port, "targetPort": 8080 if port == 80 else port}]
    for i, p in enumerate(ports):
        p.setdefault("name", f"port-{i}" if len(ports) > 1 else "http")
    sandbox_ns = ctx.ns(namespace)
    svc = TwinObject(
        "v1",
        "Service",
        name,
        {
            "metadata": {"name": name, "namespace": sandbox_ns, "labels": {"app": name}},
            "spec": {"type": "ClusterIP", "selector": selector, "ports": ports},
        },
        sandbox_ns,
    )
    matching = [p for p in ready_pods if selector.items() <= p.body["metadata"].get("labels", {}).items()]
    if entry.endpoints is not None and not entry.endpoints:
        matching = []
    addresses = [
        {
            "ip": (p.status or {}).get("podIP"),
            "nodeName": p.body["spec"].get("nodeName"),
            "targetRef": {"kind": "Pod", "name": p.name, "namespace": sandbox_ns},
        }
        for p in matching
    ]
    ep_ports = [
        {"name": p["name"], "port": int(p.get("targetPort", p["port"])), "protocol": "TCP"} for p in ports
    ]
    endpoints: Body = {"metadata": {"name": name, "namespace": sandbox_ns, "labels": {"app": name}}}
    if addresses:
        endpoints["subsets"] = [{"addresses": addresses, "ports": ep_ports}]
    return [
        svc,
        TwinObject("v1", "Endpoints", name, endpoints, sandbox_ns),
        _endpoint_slice(name, sandbox_ns, addresses, ep_ports),
    ]


def _endpoint_slice(name: str, sandbox_ns: str, addresses: list[Body], ports: list[Body]) -> TwinObject:
    """The Service's EndpointSlice as the endpointslice controller writes it (name `<service>-<5 chars>`)."""
    suffix = hashlib.sha256(f"{sandbox_ns}/{name}".encode()).hexdigest()[:5]
    body: Body = {
        "metadata": {
            "name": f"{name}-{suffix}",
            "namespace": sandbox_ns,
            "labels": {
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
            },
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [a["ip"]],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "nodeName": a["nodeName"],
                "targetRef": a["targetRef"],
            }
            for a in addresses
            if a.get("ip")
        ],
        "ports": ports,
    }
    return TwinObject("discovery.k8s.io/v1", "EndpointSlice", f"{name}-{suffix}", body, sandbox_ns)


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
    status = {"loadBalancer": {"ingress": [{"ip": pod_ip("lb/" + name)}]}}
    return TwinObject("networking.k8s.io/v1", "Ingress", name, body, ctx.ns(namespace), status)


def network_policy(ctx: TwinContext, name: str, namespace: str, entry: NetworkPolicyState) -> TwinObject:
    spec = copy.deepcopy(entry.spec or {})
    spec.setdefault("podSelector", {})
    if "policyTypes" not in spec:
        spec["policyTypes"] = [t for t in ("Ingress", "Egress") if t.lower() in spec] or ["Ingress"]
    body = {"metadata": {"name": name, "namespace": ctx.ns(namespace)}, "spec": spec}
    return TwinObject("networking.k8s.io/v1", "NetworkPolicy", name, body, ctx.ns(namespace))


def hpa(ctx: TwinContext, name: str, namespace: str, entry: HpaState, current_replicas: int) -> TwinObject:
    target_name = (entry.target or "").partition("/")[2]  # the model holds it to deployment/<name>
    min_r = entry.min_replicas if entry.min_replicas is not None else 1
    max_r = entry.max_replicas if entry.max_replicas is not None else 10
    desired = entry.target_replicas if entry.target_replicas is not None else current_replicas
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target_name},
            "minReplicas": min_r,
            "maxReplicas": max_r,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}},
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
    """A PodDisruptionBudget for `target: deployment/<name>` or a selector (the model wants one)."""
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
