"""The kubeconfigs the local plane writes into its run directory, one per client identity.

- `kubeconfig`: the operator's admin (`local-admin`), for the operator, the CLI and the tests;
- `controller-manager.kubeconfig`: the controller manager;
- `scheduler.kubeconfig`: the scheduler (`system:kube-scheduler`);
- `node-simulator.kubeconfig`: kwok, which plays the nodes' kubelets;
- `gateway.kubeconfig`: the agent gateway's own identity (`oasis:gateway`), which the gateway finds
  beside the admin one (`gateway/upstream.py: gateway_kubeconfig`).

Each names the plane's CA and a client certificate by path (the files stay in `<run dir>/pki`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from oasis_operator.pki import GATEWAY_KUBECONFIG, Pki

ADMIN = "kubeconfig"
CONTROLLER_MANAGER = "controller-manager.kubeconfig"
SCHEDULER = "scheduler.kubeconfig"
KWOK = "node-simulator.kubeconfig"
GATEWAY = GATEWAY_KUBECONFIG


def kubeconfig_document(server: str, ca: Path, cert: Path, key: Path, user: str) -> dict[str, Any]:
    """A one-context kubeconfig: the plane at `server`, authenticated by a client certificate."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": user, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [
            {"name": "local", "context": {"cluster": "local", "user": user, "namespace": "default"}}
        ],
        "current-context": "local",
    }


def write_kubeconfigs(run_dir: Path, pki: Pki, api_port: int) -> None:
    """Write (or rewrite, should the port have moved) every identity's kubeconfig, mode 0600."""
    server = f"https://127.0.0.1:{api_port}"
    identities = (
        (ADMIN, pki.admin_cert, pki.admin_key, "admin"),
        (CONTROLLER_MANAGER, pki.controller_manager_cert, pki.controller_manager_key, "admin"),
        (SCHEDULER, pki.scheduler_cert, pki.scheduler_key, "scheduler"),
        (KWOK, pki.kwok_cert, pki.kwok_key, "node-simulator"),
        (GATEWAY, pki.gateway_cert, pki.gateway_key, "gateway"),
    )
    for name, cert, key, user in identities:
        path = run_dir / name
        doc = kubeconfig_document(server, pki.ca_cert, cert, key, user)
        tmp = path.with_suffix(".tmp")
        tmp.touch(mode=0o600)
        tmp.chmod(0o600)
        tmp.write_text(yaml.safe_dump(doc, sort_keys=False))
        tmp.replace(path)
