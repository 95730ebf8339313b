"""The local plane's audit: what the API server records, and the flags that write it.

The policy keeps what evidence uses and drops the rest (first matching rule wins):

1. the audit fence (`GET /audit-fence/<token>`, see `evidence.stream`): always recorded, at Metadata;
2. health, version, OpenAPI and metrics endpoints: dropped;
3. leases (leader election, node heartbeats): dropped, for every identity;
4. reads (get, list, watch) by the controller-manager and the kube-system ServiceAccounts: dropped;
5. the operator's own reads of its own API (its custom resources and their definitions): dropped;
6. writes by every identity (create, update, patch, delete, deletecollection): RequestResponse;
7. every other request (reads, including the agent's through the gateway): Metadata.

Audit policy rules match the identity that authenticated, not the one impersonated. The gateway
authenticates as the operator and impersonates the agent, so the operator's reads of the sandbox cannot
be told apart from the agent's by the policy: rule 5 drops only reads the agent never makes.
Nothing is recorded at RequestReceived: one event per request, at ResponseComplete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oasis_operator.models.evidence import API_WRITE_VERBS

# Identities of the local plane's own certificates (pki.py).
OPERATOR_USER = "local-admin"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
READS = ["get", "list", "watch"]
# Rotate at this size (MB; $OASIS_AUDIT_LOG_MAX_MB overrides it), keeping this many backups: bounded
# disk, and the reader follows rotation.
MAX_SIZE_MB = 200
MAX_BACKUPS = 3


def audit_policy(operator_user: str = OPERATOR_USER) -> dict[str, Any]:
    """The `audit.k8s.io/v1` Policy of the local plane (the chart renders the same rules)."""
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [
            {"level": "Metadata", "nonResourceURLs": ["/audit-fence/*"]},
            {
                "level": "None",
                "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*", "/metrics"],
            },
            {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
            {"level": "None", "users": [CONTROLLER_MANAGER_USER], "verbs": READS},
            {"level": "None", "userGroups": ["system:serviceaccounts:kube-system"], "verbs": READS},
            {
                "level": "None",
                "users": [operator_user],
                "verbs": READS,
                "resources": [
                    {"group": "oasis.evaluation.dev"},
                    {"group": "apiextensions.k8s.io", "resources": ["customresourcedefinitions"]},
                ],
            },
            {"level": "RequestResponse", "verbs": list(API_WRITE_VERBS)},
            {"level": "Metadata"},
        ],
    }


def apiserver_audit_args(policy_file: Path, log_file: Path) -> list[str]:
    """kube-apiserver flags for the file backend (the same in Kubernetes 1.20 and current releases)."""
    return [
        f"--audit-policy-file={policy_file}",
        f"--audit-log-path={log_file}",
        "--audit-log-format=json",
        f"--audit-log-maxsize={int(os.environ.get('OASIS_AUDIT_LOG_MAX_MB') or MAX_SIZE_MB)}",
        f"--audit-log-maxbackup={MAX_BACKUPS}",
    ]
