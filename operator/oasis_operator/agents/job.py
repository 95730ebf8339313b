"""The `job` adapter's objects: an agent image run as a Job beside its sandbox (pure builders).

The Job runs in the namespace it is given (the chart's agent namespace, `OASIS_AGENT_NAMESPACE`) with
the gateway kubeconfig and the request mounted read-only, as the chart's agent ServiceAccount (no RBAC)
and with no ServiceAccount token mounted, so the gateway kubeconfig is the only credential inside the
pod. Its pods carry `AGENT_POD_LABELS`, which the chart's agents NetworkPolicy selects: they may reach
the gateway and DNS only. Running it needs a kubelet, which the local control plane does not have;
rendering and applying are tested there.
"""

from __future__ import annotations

from typing import Any

from oasis_operator import API_GROUP
from oasis_operator.agents.protocol import AgentRequest
from oasis_operator.models.crd import JobAgent

Body = dict[str, Any]
MOUNT = "/var/run/agent"
# Labels of every agent pod; charts/oasis-operator/templates/networkpolicies.yaml selects the second.
AGENT_POD_LABELS = {"app.kubernetes.io/component": "agent", f"{API_GROUP}/agent": "true"}


def build_agent_inputs(name: str, namespace: str, request: AgentRequest) -> list[Body]:
    """The Secret with the kubeconfig and the ConfigMap with the request for one agent run."""
    kubeconfig = request.environment.kubeconfig if request.environment else ""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{name}-kubeconfig", "namespace": namespace},
        "type": "Opaque",
        "stringData": {"kubeconfig": kubeconfig},
    }
    request_cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-request", "namespace": namespace},
        "data": {"request.json": request.model_dump_json(exclude_none=True), "prompt.txt": request.prompt},
    }
    return [secret, request_cm]


def build_agent_job(
    name: str, namespace: str, spec: JobAgent, request: AgentRequest, service_account: str | None = None
) -> Body:
    """A Job that runs the agent image once with its inputs mounted and a hard deadline.

    `service_account` is the identity the pod runs as (the chart's `<fullname>-agent`, which has no
    RBAC); its token is never mounted.
    """
    endpoints = request.environment.endpoints if request.environment else {}
    env = [
        {"name": "KUBECONFIG", "value": f"{MOUNT}/kubeconfig/kubeconfig"},
        {"name": "OASIS_REQUEST", "value": f"{MOUNT}/request/request.json"},
        {"name": "HOME", "value": "/tmp"},  # noqa: S108 - a private emptyDir in the agent's pod
    ]
    env += [
        {"name": f"OASIS_ENDPOINT_{k.upper().replace('-', '_')}", "value": v}
        for k, v in sorted(endpoints.items())
    ]
    env += [{"name": k, "value": v} for k, v in sorted(spec.env.items())]
    container: Body = {
        "name": "agent",
        "image": spec.image,
        "env": env,
        "volumeMounts": [
            {"name": "kubeconfig", "mountPath": f"{MOUNT}/kubeconfig", "readOnly": True},
            {"name": "request", "mountPath": f"{MOUNT}/request", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - a private emptyDir
        ],
        "securityContext": {
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    }
    if spec.command:
        container["command"] = list(spec.command)
    if spec.args:
        container["args"] = list(spec.args)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(AGENT_POD_LABELS),
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": spec.timeoutSeconds,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "metadata": {"labels": {**AGENT_POD_LABELS, "job-name": name}},
                "spec": {
                    **({"serviceAccountName": service_account} if service_account else {}),
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "kubeconfig",
                            "secret": {"secretName": f"{name}-kubeconfig", "defaultMode": 0o400},
                        },
                        {"name": "request", "configMap": {"name": f"{name}-request"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}},
                    ],
                },
            },
        },
    }
