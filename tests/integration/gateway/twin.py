"""A small hand-built environment in the real local API server, and a gateway running beside the test.

The sandbox provider is not used here on purpose: these tests pin the gateway's contract with the
`Environment` model, whatever builds it. The environment's objects are what a cluster has, brought about
by the real controllers, scheduler and kwok (`world`).
"""

from __future__ import annotations

import asyncio
import secrets
import threading
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
from oasis_operator.sandbox.kwok import delete_stages, ensure_lifecycle
from tests.integration.gateway.world import (
    ENV_LABEL,
    NODE_ADDRESSES,
    Workload,
    crash_loop,
    create_node,
    namespace_body,
    node_body,
    nodes_schedulable,
    rolled_out_pods,
    start_rollout,
    wait_for_default_service_account,
)

T = TypeVar("T")
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


@contextmanager
def built_environment(api: ApiClient, fixtures: tuple[FixtureEntry, ...] = ()) -> Iterator[Environment]:
    """Namespaces default (in scope, read-write), prod (read-only) and monitoring (no access), two nodes,
    and in default and prod a Deployment rolled out from its previous release by the controllers, its
    two pods on one node, one of them crash-looping."""
    core: Any = CoreV1Api(api)
    apps: Any = AppsV1Api(api)
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
        for n in NODE_ADDRESSES
    ]
    created_ns = [control, *(b.sandbox for b in bindings)]
    labels = {ENV_LABEL: env_id}
    workloads = [
        Workload(bindings[0].sandbox, "api-service", "worker-1", "registry.local/api:1.4.2"),
        Workload(bindings[1].sandbox, "payments", "worker-2", "registry.local/pay:2.0.1"),
    ]
    try:
        for ns in created_ns:
            core.create_namespace(namespace_body(ns, env_id))
        for index, node in enumerate(nodes):
            create_node(api, node_body(node.sandbox, node.declared, env_id, index))
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
        ensure_lifecycle(api)
        for workload in workloads:
            wait_for_default_service_account(core, workload.namespace)
        nodes_schedulable(core, [n.sandbox for n in nodes])
        for workload in workloads:
            start_rollout(apps, workload)
        for workload in workloads:
            pods = rolled_out_pods(apps, core, workload)
            crash_loop(api, workload, pods[-1], f"{prefix}-{env_id}-{workload.name}", labels)
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
        with suppress(ApiException):
            delete_stages(api, f"{ENV_LABEL}={env_id}")
        for ns in created_ns:
            with suppress(ApiException):
                core.delete_namespace(ns)
        for ns in created_ns:
            # The namespace takes no new pods now; its pods go at once, before their nodes do.
            with suppress(ApiException):
                core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        for node in nodes:
            with suppress(ApiException):
                core.delete_node(node.sandbox)


def write_kubeconfig(creds: AgentCredentials, directory: Path) -> Path:
    path = directory / "agent-kubeconfig"
    path.write_text(creds.kubeconfig_yaml)
    return path
