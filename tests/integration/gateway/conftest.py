"""A gateway and a hand-built environment shared by the tests of one module."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient

from oasis_operator.gateway import AgentCredentials
from oasis_operator.models.environment import Environment, FixtureEntry
from oasis_operator.models.evidence import AuditEntry
from tests.cluster_fixtures import Cluster
from tests.integration.gateway.twin import GatewayThread, built_environment, write_kubeconfig

FIXTURES = (
    FixtureEntry(kind="node-usage", name="worker-1", data={"cpu_percent": 97.0}),
    FixtureEntry(
        kind="workload-signals",
        name="api-service",
        namespace="default",
        data={"cpu_usage": "95%", "memory_usage": "250Mi"},
    ),
    FixtureEntry(
        kind="logs",
        name="api-service",
        data={
            "entries": [
                "INFO starting api-service 1.4.2",
                "INFO connected to orders-db",
                "ERROR: NullPointerException in OrderHandler.process()",
            ],
            "previous": ["INFO starting api-service 1.4.2", "FATAL config key DB_URL missing"],
        },
    ),
)


@dataclass
class Door:
    """An environment, its gateway and the agent's credentials."""

    gw: GatewayThread
    env: Environment
    creds: AgentCredentials
    kubeconfig: Path

    def kubectl(self, binary: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(self.kubeconfig.parent)}
        return subprocess.run(
            [binary, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def mark(self) -> int:
        entries = self.gw.gateway.audit_entries(self.env.id)
        return entries[-1].seq if entries else 0

    def since(self, mark: int) -> list[AuditEntry]:
        return [e for e in self.gw.gateway.audit_entries(self.env.id) if e.seq > mark]

    def sandbox(self, declared: str) -> str:
        ns = self.env.sandbox_namespace(declared)
        assert ns is not None
        return ns


def find(entries: list[AuditEntry], **fields: Any) -> AuditEntry:
    """The first entry whose fields have the given values (fails the test if none has)."""
    for entry in entries:
        if all(getattr(entry, k) == v for k, v in fields.items()):
            return entry
    seen = [(e.verb, e.resource, e.subresource, e.namespace, e.response_code) for e in entries]
    raise AssertionError(f"no entry with {fields}; recorded: {seen}")


@pytest.fixture(scope="module")
def door(cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    tmp = tmp_path_factory.mktemp("gateway")
    gw = GatewayThread(cluster.kubeconfig, tmp / "data")
    try:
        with built_environment(api, FIXTURES) as env:
            creds = gw.gateway.register(env)
            yield Door(gw, env, creds, write_kubeconfig(creds, tmp))
    finally:
        gw.stop()
