"""Builders for every non-workload state entry: config, networking, autoscaling, storage, nodes, events."""

from __future__ import annotations

import base64
import binascii
import copy
import hashlib
from datetime import timedelta
from typing import Any

from oasis_operator.sandbox.twin.plan import Body, TwinContext, TwinObject
from oasis_operator.sandbox.twin.pods import pod_ip

ZONE_LABELS = ("security-zone",)  # neutral on purpose: nothing the agent reads names the evaluation


def _strs(mapping: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in (mapping or {}).items()}


def namespace(sandbox: str, declared: str, fields: Body) -> TwinObject:
    """A namespace with the declared labels and annotations; a zone becomes zone labels."""
    labels = _strs(fields.get("labels"))
    if fields.get("zone"):
        labels.update(dict.fromkeys(ZONE_LABELS, str(fields["zone"])))
    meta: Body = {"name": sandbox, "labels": {"kubernetes.io/metadata.name": declared, **labels}}
    if fields.get("annotations"):
        meta["annotations"] = _strs(fields["annotations"])
    return TwinObject("v1", "Namespace", sandbox, {"metadata": meta})


def config_map(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    meta: Body = {"name": name, "namespace": ctx.ns(namespace)}
    if entry.get("annotations"):
        meta["annotations"] = _strs(entry["annotations"])
    return TwinObject(
        "v1", "ConfigMap", name, {"metadata": meta, "data": _strs(entry.get("data"))}, ctx.ns(namespace)
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


def secret(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "type": str(entry.get("type") or "Opaque"),
        "data": {str(k): _b64(v) for k, v in (entry.get("data") or {}).items()},
    }
    return TwinObject("v1", "Secret", name, body, ctx.ns(namespace))


def service(
    ctx: TwinContext, name: str, namespace: str, entry: Body, ready_pods: list[TwinObject]
) -> list[TwinObject]:
    """A Service, its Endpoints and its EndpointSlice (no endpoint controllers run: the twin writes them).

    Current clients read `discovery.k8s.io/v1` EndpointSlices (v1 Endpoints is deprecated since 1.33);
    older ones still read Endpoints, so both say the same.
    """
    selector = _strs(entry.get("selector")) or {"app": name}
    if entry.get("ports"):
        ports = [{"protocol": "TCP", **dict(p)} for p in entry["ports"]]
    else:
        port = int(entry.get("port") or 80)
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
    if "endpoints" in entry and not entry["endpoints"]:
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


def ingress(ctx: TwinContext, name: str, namespace: str, entry: Body, backend: str) -> TwinObject:
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
    if entry.get("host"):
        rule["host"] = str(entry["host"])
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "spec": {"ingressClassName": "nginx", "rules": [rule]},
    }
    status = {"loadBalancer": {"ingress": [{"ip": pod_ip("lb/" + name)}]}}
    return TwinObject("networking.k8s.io/v1", "Ingress", name, body, ctx.ns(namespace), status)


def network_policy(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    spec = copy.deepcopy(entry.get("spec") or {})
    spec.setdefault("podSelector", {})
    if "policyTypes" not in spec:
        spec["policyTypes"] = [t for t in ("Ingress", "Egress") if t.lower() in spec] or ["Ingress"]
    body = {"metadata": {"name": name, "namespace": ctx.ns(namespace)}, "spec": spec}
    return TwinObject("networking.k8s.io/v1", "NetworkPolicy", name, body, ctx.ns(namespace))


def hpa(ctx: TwinContext, name: str, namespace: str, entry: Body, current_replicas: int) -> TwinObject:
    target = str(entry.get("target") or "")
    kind, _, target_name = target.partition("/")
    if kind != "deployment" or not target_name:
        raise ValueError(f"target must be deployment/<name>, got {target!r}")
    min_r, max_r = int(entry.get("min_replicas", 1)), int(entry.get("max_replicas", 10))
    desired = int(entry.get("target_replicas", current_replicas))
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
    scaling = entry.get("current_status") == "scaling_in_progress"
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


def argo_application(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    sync = str(entry.get("sync_status") or "synced")
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "spec": {
            "project": "default",
            "source": {
                "repoURL": str(entry.get("source_repo", "")),
                "path": str(entry.get("source_path", "")),
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


def pdb(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    """A PodDisruptionBudget for `target: deployment/<name>` (or an explicit selector)."""
    target = str(entry.get("target") or "").partition("/")[2]
    selector = _strs(entry.get("selector")) or ({"app": target} if target else {})
    if not selector:
        raise ValueError("a pdb needs target: deployment/<name> or a selector")
    spec: Body = {"selector": {"matchLabels": selector}}
    if "max_unavailable" in entry:
        spec["maxUnavailable"] = entry["max_unavailable"]
    else:
        spec["minAvailable"] = entry.get("min_available", 1)
    body = {"metadata": {"name": name, "namespace": ctx.ns(namespace)}, "spec": spec}
    return TwinObject("policy/v1", "PodDisruptionBudget", name, body, ctx.ns(namespace))


def service_account(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    return TwinObject(
        "v1",
        "ServiceAccount",
        name,
        {"metadata": {"name": name, "namespace": ctx.ns(namespace)}},
        ctx.ns(namespace),
    )


def role(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    body = {
        "metadata": {"name": name, "namespace": ctx.ns(namespace)},
        "rules": list(entry.get("rules") or []),
    }
    return TwinObject("rbac.authorization.k8s.io/v1", "Role", name, body, ctx.ns(namespace))


def role_binding(ctx: TwinContext, name: str, namespace: str, entry: Body) -> TwinObject:
    role_name = str(entry.get("role") or name)
    subjects = []
    for subject in entry.get("subjects") or []:
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
