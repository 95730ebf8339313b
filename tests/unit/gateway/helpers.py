"""A small environment for pure tests of the gateway."""

from __future__ import annotations

from oasis_operator.models.environment import (
    AgentServiceAccount,
    ClusterObjectBinding,
    Environment,
    FixtureEntry,
    NamespaceBinding,
)


def environment(fixtures: tuple[FixtureEntry, ...] = ()) -> Environment:
    return Environment(
        id="abc123",
        prefix="ev",
        scenario_id="SI-TEST",
        control_namespace="ev-abc123-ctl",
        namespaces=(
            NamespaceBinding(declared="default", sandbox="ev-abc123-default", in_scope=True),
            NamespaceBinding(declared="prod", sandbox="ev-abc123-prod", in_scope=False),
        ),
        cluster_objects=(
            ClusterObjectBinding(kind="Node", declared="worker-1", sandbox="ev-abc123-worker-1"),
        ),
        agent=AgentServiceAccount(namespace="ev-abc123-ctl", service_account="agent"),
        mode="autonomous",
        tools=("container-orchestration", "observability-metrics"),
        fixtures=fixtures,
        created_at="2026-01-01T12:00:00Z",
    )
