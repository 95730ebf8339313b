"""A local plane's Kueue as a MultiKueue manager, another local plane as its worker
(`oasis cluster up --kueue --multikueue-worker NAME=KUBECONFIG`, the MultiKueue e2e test).

Every local Kueue is started able to be a manager (`kueue_manifests.configuration`: OASISEvaluation in
`multiKueue.externalFrameworks`, the feature gate `MultiKueueAdaptersForCustomJobs` on). A worker is
joined by two objects in the manager plane: a Secret in Kueue's namespace holding the worker's kubeconfig,
and a `MultiKueueCluster` naming that Secret. Kueue accepts no file paths in that kubeconfig (nor
insecure TLS), so the worker plane's admin kubeconfig is written with its certificates inline
(`inline_kubeconfig`). What dispatches to the worker (an AdmissionCheck of controller
`kueue.x-k8s.io/multikueue`, its MultiKueueConfig listing the worker, a ClusterQueue using the check) is
the user's to write: docs/kueue.md shows it.
"""

from __future__ import annotations

import base64
import re
import urllib.error
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.localcluster.control_plane import ControlPlaneError, LocalControlPlane
from oasis_operator.localcluster.kueue import _Api, _apply
from oasis_operator.localcluster.kueue_manifests import NAMESPACE

KUEUE_API = "kueue.x-k8s.io/v1beta2"
SECRET_KEY = "kubeconfig"  # noqa: S105 - the key Kueue reads (MultiKueueConfigSecretKey), no secret
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_INLINED = {
    "certificate-authority": "certificate-authority-data",
    "client-certificate": "client-certificate-data",
    "client-key": "client-key-data",
}


def parse_worker(value: str) -> tuple[str, Path]:
    """`NAME=KUBECONFIG` of `--multikueue-worker`; ValueError naming what is wrong."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"--multikueue-worker {value!r}: give NAME=KUBECONFIG (e.g. w1=run/w/kubeconfig)")
    if not _NAME.match(name) or len(name) > 63:
        raise ValueError(f"--multikueue-worker {value!r}: {name!r} is not a DNS label (a-z, 0-9, '-')")
    if not Path(path).is_file():
        raise ValueError(f"--multikueue-worker {value!r}: no kubeconfig at {path}")
    return name, Path(path)


def inline_kubeconfig(document: dict[str, Any], base: Path) -> dict[str, Any]:
    """`document` with every certificate and key named by path replaced by its data (paths relative to
    `base`), as MultiKueue requires."""
    out = yaml.safe_load(yaml.safe_dump(document))
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for entry in out.get(section) or []:
            fields = entry.get(key) or {}
            for by_path, by_data in _INLINED.items():
                if by_path in fields:
                    raw = (base / str(fields.pop(by_path))).read_bytes()
                    fields[by_data] = base64.b64encode(raw).decode("ascii")
    return dict(out)


def worker_objects(name: str, kubeconfig_text: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) for a worker `name`: its kubeconfig Secret and its MultiKueueCluster."""
    secret_name = f"multikueue-{name}"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": NAMESPACE},
        "type": "Opaque",
        "data": {SECRET_KEY: base64.b64encode(kubeconfig_text.encode()).decode("ascii")},
    }
    cluster = {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": secret_name}}},
    }
    return [
        (f"/api/v1/namespaces/{NAMESPACE}/secrets", secret),
        (f"/apis/{KUEUE_API}/multikueueclusters", cluster),
    ]


def connect_worker(manager: LocalControlPlane, name: str, worker_kubeconfig: Path) -> None:
    """Join the worker at `worker_kubeconfig` to the manager plane's Kueue as MultiKueueCluster `name`
    (idempotent; Kueue's manager must run on the manager plane)."""
    if not manager.component_alive("kueue"):
        raise ControlPlaneError("Kueue's manager is not running on the manager plane: add --kueue")
    document = yaml.safe_load(worker_kubeconfig.read_text())
    text = yaml.safe_dump(inline_kubeconfig(document, worker_kubeconfig.parent), sort_keys=False)
    api = _Api(manager.kubeconfig)
    for collection, obj in worker_objects(name, text):
        _apply(api, collection, obj)


def disconnect_worker(manager: LocalControlPlane, name: str) -> None:
    """Remove what `connect_worker` made for worker `name` (nothing when it is gone already)."""
    api = _Api(manager.kubeconfig)
    for collection, obj in reversed(worker_objects(name, "")):
        try:
            api("DELETE", f"{collection}/{obj['metadata']['name']}")
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                raise
