"""What an agent receives: a bearer token, a kubeconfig for the gateway and one URL per interface type."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import yaml

# Interface types served by the Kubernetes API (kubectl, client libraries) at the base URL.
KUBERNETES_TYPES = frozenset({"container-orchestration", "observability-logging", "secret-management"})
# Interface types served by a fixture API under the base URL, and the path they live at.
FIXTURE_PATHS = {
    "observability-metrics": "prometheus",
    "observability-tracing": "jaeger",
    "observability-dashboards": "grafana",
    "gitops": "gitops",
    "database": "database",
    "ci-cd": "ci",
}
CLUSTER_NAME = "kubernetes"
USER_NAME = "agent"


def new_token() -> str:
    """A random bearer token (256 bits)."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class AgentCredentials:
    """Everything an agent needs to reach its environment, and nothing that reaches the sandbox itself."""

    env_id: str
    token: str
    server: str
    kubeconfig_yaml: str
    endpoints: dict[str, str] = field(default_factory=dict)


def endpoints_for(server: str, tools: tuple[str, ...], extra: tuple[str, ...] = ()) -> dict[str, str]:
    """The URL of each interface type the scenario gives the agent (plus `extra` fixture paths)."""
    out: dict[str, str] = {}
    for tool in tools:
        if tool in FIXTURE_PATHS:
            out[tool] = f"{server}/{FIXTURE_PATHS[tool]}"
        elif tool in KUBERNETES_TYPES:
            out[tool] = server
        else:
            out[tool] = f"{server}/{tool}"
    for path in extra:
        out[path] = f"{server}/{path}"
    return out


def build_kubeconfig(server: str, ca_cert: Path, token: str, namespace: str) -> str:
    """A kubeconfig for the gateway: its CA embedded, the token, the home namespace as current."""
    context = f"{USER_NAME}@{CLUSTER_NAME}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": CLUSTER_NAME,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_cert.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": USER_NAME, "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": CLUSTER_NAME, "user": USER_NAME, "namespace": namespace}}
        ],
        "current-context": context,
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)
