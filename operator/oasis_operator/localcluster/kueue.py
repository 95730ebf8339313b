"""Kueue's manager on the local plane (`oasis cluster up --kueue`, the Kueue e2e test).

Kueue's manager is built from its Go module at the pinned KUEUE_VERSION by hack/build-kueue.sh, which
caches it with the CRDs and webhook configurations of the same module (`release.kueue_dir`). `start_kueue`
applies the CRDs, registers Kueue's webhooks by URL on 127.0.0.1 (`kueue_manifests`), writes its
Configuration (OASISEvaluation registered as an external framework) and starts the manager as one more
process of the plane: the plane's `stop` stops it first. Its serving certificate is the plane's own API
server certificate (for 127.0.0.1, signed by the plane's CA, which the webhooks trust).
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.localcluster.control_plane import ControlPlaneError, LocalControlPlane, choose_ports
from oasis_operator.localcluster.kueue_manifests import (
    NAMESPACE,
    configuration,
    manager_args,
    webhook_configurations,
    wrapped,
)
from oasis_operator.localcluster.kwok import plane_context
from oasis_operator.localcluster.release import kueue_dir, kueue_version

COMPONENT = "kueue"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WEBHOOK_PATHS = {
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
}


def missing_kueue() -> str | None:
    """Why Kueue's manager cannot start here (what to run), or None when it is built."""
    where = kueue_dir()
    needed = [where / "bin" / COMPONENT, where / "webhook" / "manifests.yaml"]
    absent = [str(p) for p in needed if not p.is_file()]
    if not absent and not list((where / "crd").glob("*.yaml")):
        absent.append(str(where / "crd"))
    if not absent:
        return None
    return (
        f"Kueue {kueue_version()} is not built ({', '.join(absent)} missing): run hack/build-kueue.sh "
        "(make test-deps runs it), or set OASIS_KUEUE_CACHE"
    )


class _Api:
    """The plane's API with its admin kubeconfig (plain HTTPS: `kube` is not below this layer)."""

    def __init__(self, kubeconfig: Path) -> None:
        self.server, self.context = plane_context(kubeconfig)

    def __call__(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        url = self.server + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        # The server is the plane's own https address, read from the kubeconfig it wrote.
        call = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
        with urllib.request.urlopen(call, context=self.context, timeout=30) as resp:  # noqa: S310
            raw = resp.read()
        return json.loads(raw) if raw else None


def _apply(api: _Api, collection: str, document: dict[str, Any]) -> None:
    """Create `document` in `collection`, or replace what has its name."""
    name = document["metadata"]["name"]
    try:
        api("POST", collection, document)
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise
        current = api("GET", f"{collection}/{name}")
        meta = {**document["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
        api("PUT", f"{collection}/{name}", {**document, "metadata": meta})


def apply_kueue_crds(api: _Api, timeout: float = 60.0) -> list[str]:
    """Kueue's CRDs from the cache, applied and established; their names."""
    names = []
    for path in sorted((kueue_dir() / "crd").glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if crd:
                _apply(api, CRD_PATH, crd)
                names.append(crd["metadata"]["name"])
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            crd = api("GET", f"{CRD_PATH}/{name}")
            conditions = (crd.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                pending.discard(name)
        time.sleep(0.2 if pending else 0)
    if pending:
        raise ControlPlaneError(f"Kueue's CRDs not established after {timeout:.0f}s: {sorted(pending)}")
    return names


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_kueue(plane: LocalControlPlane, timeout: float = 120.0) -> int:
    """Start Kueue's manager beside the running plane (idempotent); its PID once it is ready."""
    reason = missing_kueue()
    if reason is not None:
        raise ControlPlaneError(reason)
    state = plane.read_state()
    if state is None:
        raise ControlPlaneError("the plane is not running: `oasis cluster up` first")
    if plane.component_alive(COMPONENT):
        return state.pids[COMPONENT]
    api = _Api(plane.kubeconfig)
    apply_kueue_crds(api)
    try:
        api("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    except urllib.error.HTTPError as exc:
        if exc.code != 409:
            raise
    home = plane.run_dir / COMPONENT
    certs = home / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plane.pki.serving_cert, certs / "tls.crt")
    shutil.copyfile(plane.pki.serving_key, certs / "tls.key")
    (certs / "tls.key").chmod(0o600)
    webhook_port, health_port = choose_ports([], 2)
    config_file = home / "config.yaml"
    config_file.write_text(yaml.safe_dump(configuration(webhook_port, health_port, str(certs))))
    ca_bundle = base64.b64encode(Path(plane.pki.ca_cert).read_bytes()).decode()
    shipped = list(yaml.safe_load_all((kueue_dir() / "webhook" / "manifests.yaml").read_text()))
    for document in webhook_configurations(shipped, webhook_port, ca_bundle):
        _apply(api, WEBHOOK_PATHS[document["kind"]], document)
    binary = kueue_dir() / "bin" / COMPONENT
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise ControlPlaneError("bwrap (Debian package bubblewrap) is needed to start Kueue's manager")
    argv = [str(binary), *manager_args(str(config_file)), f"--kubeconfig={plane.kubeconfig}"]
    pid = plane.add_component(
        COMPONENT, wrapped(bwrap, str(certs), argv, die_with_parent=plane.die_with_parent)
    )
    deadline = time.monotonic() + timeout
    while not _ready(health_port):
        if not plane.component_alive(COMPONENT):
            raise ControlPlaneError(f"Kueue's manager exited during start: see {plane.log_file(COMPONENT)}")
        if time.monotonic() > deadline:
            raise ControlPlaneError(
                f"Kueue's manager not ready after {timeout:.0f}s: see {plane.log_file(COMPONENT)}"
            )
        time.sleep(0.3)
    _wait_for_webhooks(api, timeout=max(5.0, deadline - time.monotonic()))
    return pid


def _wait_for_webhooks(api: _Api, timeout: float) -> None:
    """Until the API server reaches Kueue's webhooks (a dry-run ResourceFlavor goes through them)."""
    probe = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "oasis-webhook-probe"},
    }
    deadline = time.monotonic() + timeout
    while True:
        try:
            api("POST", "/apis/kueue.x-k8s.io/v1beta2/resourceflavors", probe, {"dryRun": "All"})
        except (urllib.error.HTTPError, ssl.SSLError, OSError) as exc:
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"Kueue's webhooks do not answer: {exc}") from exc
            time.sleep(0.5)
        else:
            return
