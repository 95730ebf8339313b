"""A small hand-built environment in the real local API server, and a gateway running beside the test.

The sandbox provider is not used here on purpose: these tests pin the gateway's contract with the
`Environment` model, whatever builds it.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
import time
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api, RbacAuthorizationV1Api
from kubernetes.client.exceptions import ApiException

from oasis_operator.gateway import AgentCredentials, Gateway, GatewayConfig
from oasis_operator.gateway.apis import install_apis
from oasis_operator.gateway.ratelimit import DEFAULT_RATE_LIMIT, RateLimit
from oasis_operator.models.environment import (
    AgentServiceAccount,
    ClusterObjectBinding,
    Environment,
    FixtureEntry,
    NamespaceBinding,
)

T = TypeVar("T")
POD_HASH = "7d9f8b6c5d"
OLD_POD_HASH = "5c8d7f6b4a"
AGENT_RULES = [
    {
        "apiGroups": ["", "apps", "batch", "networking.k8s.io", "autoscaling", "policy"],
        "resources": [
            "pods",
            "pods/log",
            "services",
            "configmaps",
            "secrets",
            "events",
            "deployments",
            "deployments/scale",
            "replicasets",
            "statefulsets",
            "jobs",
            "ingresses",
            "horizontalpodautoscalers",
            "endpoints",
            "persistentvolumeclaims",
            "serviceaccounts",
            "controllerrevisions",
            "poddisruptionbudgets",
            "networkpolicies",
        ],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"],
    },
    {
        "apiGroups": ["rbac.authorization.k8s.io"],
        "resources": ["roles", "rolebindings"],
        "verbs": ["get", "list", "watch"],
    },
]
READ_RULES = [
    {
        "apiGroups": ["", "apps"],
        "resources": ["pods", "pods/log", "deployments", "replicasets", "services", "configmaps", "events"],
        "verbs": ["get", "list", "watch"],
    }
]


class GatewayThread:
    """A gateway with its own event loop in a thread, so tests can drive it with blocking clients."""

    def __init__(
        self, kubeconfig: Path, data_dir: Path, rate_limit: RateLimit | None = DEFAULT_RATE_LIMIT
    ) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()
        self.gateway = self.run(self._make(kubeconfig, data_dir, rate_limit))

    async def _make(self, kubeconfig: Path, data_dir: Path, rate_limit: RateLimit | None) -> Gateway:
        gateway = Gateway(kubeconfig, data_dir, GatewayConfig(rate_limit=rate_limit))
        install_apis(gateway)
        await gateway.start()
        return gateway

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        with suppress(Exception):
            self.run(self.gateway.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


def _wait_for_default_service_account(core: Any, ns: str, timeout: float = 20.0) -> None:
    """Pods need the namespace's `default` ServiceAccount, which a controller creates shortly after."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            core.read_namespaced_service_account("default", ns)
        except ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        else:
            return


def _pod_suffix() -> str:
    return "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5))


def _deployment(name: str, ns: str, image: str, replicas: int = 2) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "2"},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": name,
                            "image": image,
                            "env": [
                                {
                                    "name": "POD_NAMESPACE",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                                }
                            ],
                        }
                    ]
                },
            },
        },
    }


def build_workload(api: ApiClient, ns: str, name: str, node: str, image: str) -> list[str]:
    """A Deployment with its ReplicaSet and Pods linked by ownerReferences, statuses written."""
    apps: Any = AppsV1Api(api)
    core: Any = CoreV1Api(api)
    dep = apps.create_namespaced_deployment(ns, _deployment(name, ns, image))
    rs_name = f"{name}-{POD_HASH}"
    labels = {"app": name, "pod-template-hash": POD_HASH}
    rs_body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": rs_name,
            "namespace": ns,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": "2"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": name,
                    "uid": dep.metadata.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": name, "image": image}]},
            },
        },
    }
    rs = apps.create_namespaced_replica_set(ns, rs_body)
    # The previous revision, scaled to zero, so that `rollout history/undo` have something to go back to.
    old_labels = {"app": name, "pod-template-hash": OLD_POD_HASH}
    old_image = image.rsplit(":", 1)[0] + ":0.9.0"
    apps.create_namespaced_replica_set(
        ns,
        {
            **rs_body,
            "metadata": {
                **rs_body["metadata"],
                "name": f"{name}-{OLD_POD_HASH}",
                "labels": old_labels,
                "annotations": {"deployment.kubernetes.io/revision": "1"},
            },
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": old_labels},
                "template": {
                    "metadata": {"labels": old_labels},
                    "spec": {"containers": [{"name": name, "image": old_image}]},
                },
            },
        },
    )
    apps.patch_namespaced_replica_set_status(
        rs_name,
        ns,
        {
            "status": {
                "replicas": 2,
                "readyReplicas": 1,
                "availableReplicas": 1,
                "fullyLabeledReplicas": 2,
                "observedGeneration": 1,
            }
        },
    )
    apps.patch_namespaced_deployment_status(
        name,
        ns,
        {
            "status": {
                "replicas": 2,
                "readyReplicas": 1,
                "availableReplicas": 1,
                "updatedReplicas": 2,
                "unavailableReplicas": 1,
                "observedGeneration": 1,
            }
        },
    )
    _wait_for_default_service_account(core, ns)
    pods: list[str] = []
    uids: list[str] = []
    for index in range(2):
        pod_name = f"{rs_name}-{_pod_suffix()}"
        created = core.create_namespaced_pod(
            ns,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": ns,
                    "labels": labels,
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": rs_name,
                            "uid": rs.metadata.uid,
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "nodeName": node,
                    "automountServiceAccountToken": False,
                    "containers": [{"name": name, "image": image}],
                },
            },
        )
        crashing = index == 1
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        state: dict[str, Any] = (
            {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}}
            if crashing
            else {"running": {"startedAt": now}}
        )
        core.patch_namespaced_pod_status(
            pod_name,
            ns,
            {
                "status": {
                    "phase": "Running",
                    "hostIP": "10.0.0.11",
                    "podIP": f"10.244.0.{10 + index}",
                    "conditions": [{"type": "Ready", "status": "False" if crashing else "True"}],
                    "containerStatuses": [
                        {
                            "name": name,
                            "image": image,
                            "imageID": "",
                            "ready": not crashing,
                            "restartCount": 7 if crashing else 0,
                            "state": state,
                            "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}
                            if crashing
                            else {},
                        }
                    ],
                }
            },
        )
        pods.append(pod_name)
        uids.append(created.metadata.uid)
    core.create_namespaced_event(
        ns,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pods[1]}.17a", "namespace": ns},
            "involvedObject": {
                "kind": "Pod",
                "name": pods[1],
                "namespace": ns,
                "apiVersion": "v1",
                "uid": uids[1],
            },
            "reason": "BackOff",
            "message": "Back-off restarting failed container",
            "type": "Warning",
            "count": 7,
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:10:00Z",
            "source": {"component": "kubelet", "host": node},
        },
    )
    return pods


@contextmanager
def built_environment(api: ApiClient, fixtures: tuple[FixtureEntry, ...] = ()) -> Iterator[Environment]:
    """Namespaces default (in scope, read-write), prod (read-only) and kube-public-like monitoring (none)."""
    core: Any = CoreV1Api(api)
    rbac: Any = RbacAuthorizationV1Api(api)
    env_id = secrets.token_hex(4)
    prefix = "ev"
    control = f"{prefix}-{env_id}-ctl"
    declared = {"default": True, "prod": False, "monitoring": False}
    bindings = [
        NamespaceBinding(declared=d, sandbox=f"{prefix}-{env_id}-{d}", zone=f"{d}-zone", in_scope=s)
        for d, s in declared.items()
    ]
    nodes = [
        ClusterObjectBinding(kind="Node", declared=n, sandbox=f"{prefix}-{env_id}-{n}")
        for n in ("worker-1", "worker-2")
    ]
    created_ns = [control, *(b.sandbox for b in bindings)]
    try:
        for ns in created_ns:
            core.create_namespace({"metadata": {"name": ns, "labels": {"oasis.evaluation.dev/env": env_id}}})
        for node in nodes:
            core.create_node(
                {"metadata": {"name": node.sandbox, "labels": {"kubernetes.io/hostname": node.declared}}}
            )
            core.patch_node_status(
                node.sandbox,
                {
                    "status": {
                        "conditions": [
                            {
                                "type": "Ready",
                                "status": "True",
                                "reason": "KubeletReady",
                                "message": "kubelet is ready",
                                "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                "lastTransitionTime": "2026-01-01T00:00:00Z",
                            }
                        ],
                        "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}],
                        "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                        "nodeInfo": {
                            "kubeletVersion": "v1.37.2",
                            "osImage": "Debian GNU/Linux 12",
                            "containerRuntimeVersion": "containerd://1.6.20",
                            "kernelVersion": "6.1.0",
                            "architecture": "amd64",
                            "operatingSystem": "linux",
                            "machineID": "",
                            "systemUUID": "",
                            "bootID": "",
                        },
                    }
                },
            )
        core.create_namespaced_service_account(control, {"metadata": {"name": "agent"}})
        agent = AgentServiceAccount(namespace=control, service_account="agent")
        for binding in bindings:
            if binding.declared == "monitoring":
                continue
            rules = AGENT_RULES if binding.in_scope else READ_RULES
            rbac.create_namespaced_role(binding.sandbox, {"metadata": {"name": "agent"}, "rules": rules})
            rbac.create_namespaced_role_binding(
                binding.sandbox,
                {
                    "metadata": {"name": "agent"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "agent"},
                    "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": control}],
                },
            )
        build_workload(api, bindings[0].sandbox, "api-service", nodes[0].sandbox, "registry.local/api:1.4.2")
        build_workload(api, bindings[1].sandbox, "payments", nodes[1].sandbox, "registry.local/pay:2.0.1")
        core.create_namespaced_config_map(
            bindings[0].sandbox,
            {"metadata": {"name": "api-config"}, "data": {"LOG_LEVEL": "info", "namespace": "default"}},
        )
        core.create_namespaced_secret(
            bindings[0].sandbox,
            {"metadata": {"name": "db-credentials"}, "stringData": {"password": "s3cr3t-value"}},
        )
        core.create_namespaced_service(
            bindings[0].sandbox,
            {
                "metadata": {"name": "api-service"},
                "spec": {"selector": {"app": "api-service"}, "ports": [{"port": 80, "targetPort": 8080}]},
            },
        )
        yield Environment(
            id=env_id,
            prefix=prefix,
            scenario_id="test",
            control_namespace=control,
            namespaces=tuple(bindings),
            cluster_objects=tuple(nodes),
            agent=agent,
            mode="autonomous",
            tools=(
                "container-orchestration",
                "observability-logging",
                "observability-metrics",
                "observability-tracing",
                "observability-dashboards",
                "gitops",
                "database",
            ),
            fixtures=fixtures,
            created_at=datetime.now(UTC).isoformat(),
        )
    finally:
        for ns in created_ns:
            # No kubelet confirms pod shutdown here: remove pods at once, or the namespace never goes.
            with suppress(ApiException):
                core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            with suppress(ApiException):
                core.delete_namespace(ns)
        for node in nodes:
            with suppress(ApiException):
                core.delete_node(node.sandbox)


def write_kubeconfig(creds: AgentCredentials, directory: Path) -> Path:
    path = directory / "agent-kubeconfig"
    path.write_text(creds.kubeconfig_yaml)
    return path
