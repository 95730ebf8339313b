"""kwok's Stage resource on the local plane: its CustomResourceDefinition, applied before kwok starts.

kwok (`--enable-crds=Stage`) reads the Stages that move nodes and pods from the API server, and watches
them: the lifecycle every pod and node goes through, and each environment's faults, are created there by
the sandbox provider (`sandbox.kwok`). The definition below is the resource's identity with an open
schema; kwok's own typed client validates what it reads.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

STAGE_GROUP = "kwok.x-k8s.io"
STAGE_VERSION = "v1alpha1"
STAGE_API_VERSION = f"{STAGE_GROUP}/{STAGE_VERSION}"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
STAGE_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"stages.{STAGE_GROUP}"},
    "spec": {
        "group": STAGE_GROUP,
        "scope": "Cluster",
        "names": {"kind": "Stage", "listKind": "StageList", "plural": "stages", "singular": "stage"},
        "versions": [
            {
                "name": STAGE_VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": _OPEN, "status": _OPEN},
                    }
                },
            }
        ],
    },
}


class StageCrdError(RuntimeError):
    """The Stage definition could not be applied or did not become established."""


def plane_context(kubeconfig: Path) -> tuple[str, ssl.SSLContext]:
    doc = yaml.safe_load(kubeconfig.read_text())
    cluster = doc["clusters"][0]["cluster"]
    user = doc["users"][0]["user"]
    ctx = ssl.create_default_context(cafile=cluster["certificate-authority"])
    ctx.load_cert_chain(user["client-certificate"], user["client-key"])
    return str(cluster["server"]), ctx


def ensure_stage_crd(kubeconfig: Path, timeout: float = 30.0) -> None:
    """Create the Stage CRD unless it exists, and wait until the API server serves it."""
    server, ctx = plane_context(kubeconfig)
    body = json.dumps(STAGE_CRD).encode()
    # The server is the plane's own https address, read from the kubeconfig it wrote.
    post = urllib.request.Request(  # noqa: S310
        server + CRD_PATH, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(post, context=ctx, timeout=10):  # noqa: S310
            pass
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise StageCrdError(f"creating the kwok Stage CRD failed ({exc.code}): {exc.read()!r}") from exc
    deadline = time.monotonic() + timeout
    url = f"{server}{CRD_PATH}/{STAGE_CRD['metadata']['name']}"
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:  # noqa: S310
            crd = json.loads(resp.read())
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        time.sleep(0.2)
    raise StageCrdError(f"the kwok Stage CRD was not established after {timeout:.0f}s")
