"""The local plane's audit: what the API server records, and the flags that write it.

The policy keeps what evidence uses and drops the rest (first matching rule wins):

1. the audit fence (`GET /audit-fence/<token>`, see `evidence.stream`): always recorded, at Metadata,
   whoever sends it (the operator's fences close each scenario's record, the gateway's name its identity);
2. health, version, OpenAPI and metrics endpoints: dropped;
3. leases (leader election, node heartbeats): dropped, for every identity;
4. reads (get, list, watch) by the cluster's own components (the controller-manager, the scheduler, kwok
   playing the kubelets) and the kube-system ServiceAccounts: dropped;
5. every read by the operator's own identity: dropped. These are its snapshots, its observation and
   dynamics passes, its watches of its own custom resources: it knows what it read, and no verdict
   stands on it (the engine judges the agent's requests and what changed);
6. writes by the cluster's own components and the kube-system ServiceAccounts: Metadata. They are the
   cluster's answer to what others wrote (ReplicaSets scaled, pods scheduled, started and stopped,
   events): the evidence attributes them to the cluster by identity, and no verdict reads their bodies,
   which would be most of the log's bytes;
7. writes by every other identity (create, update, patch, delete, deletecollection): RequestResponse, so
   the provider's setup and teardown, the agent's writes and any foreign credential's are all there with
   their bodies and answers;
8. every other request, at Metadata: the agent's reads through the gateway, reads by any other
   identity (a foreign credential, a sandbox ServiceAccount), and the gateway's own reads.

Rules match the identity that *authenticated*, not the one impersonated. So the gateway, which forwards
the agent's requests impersonating its ServiceAccount, authenticates with an identity of its own
(`oasis:gateway`, `pki.py`), never the operator's: rule 5 can then drop the operator's reads while the
agent's reads, authenticated as the gateway, stay in (rule 8). Were the gateway to share the operator's
identity (the chart's `sandbox.mode=host`, docs/install.md §5), rule 5 would drop the agent's reads too.
Nothing is recorded at RequestReceived: one event per request, at ResponseComplete.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oasis_operator.models.verbs import REQUEST_WRITE_VERBS
from oasis_operator.pki import KWOK_USER

# Identities of the local plane's own certificates (pki.py).
OPERATOR_USER = "local-admin"
CONTROLLER_MANAGER_USER = "system:kube-controller-manager"
SCHEDULER_USER = "system:kube-scheduler"
# The cluster's own components: what they read is dropped, what they write is kept without bodies.
CLUSTER_USERS = [CONTROLLER_MANAGER_USER, SCHEDULER_USER, KWOK_USER]
CLUSTER_GROUPS = ["system:serviceaccounts:kube-system"]
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
            {"level": "None", "users": CLUSTER_USERS, "verbs": READS},
            {"level": "None", "userGroups": CLUSTER_GROUPS, "verbs": READS},
            {"level": "None", "users": [operator_user], "verbs": READS},
            {"level": "Metadata", "users": CLUSTER_USERS, "verbs": list(REQUEST_WRITE_VERBS)},
            {"level": "Metadata", "userGroups": CLUSTER_GROUPS, "verbs": list(REQUEST_WRITE_VERBS)},
            {"level": "RequestResponse", "verbs": list(REQUEST_WRITE_VERBS)},
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
