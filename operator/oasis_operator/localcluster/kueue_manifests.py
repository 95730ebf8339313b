"""What Kueue's manager on the local plane is started with: pure functions of its ports and certificates.

Kueue ships its CRDs and its webhook configurations in its Go module; hack/build-kueue.sh copies both
into the cache beside the binary (`crd/*.yaml`, `webhook/manifests.yaml`). On the local plane no Service
reaches a process on 127.0.0.1, so each webhook of Kueue's own kinds is registered by URL
(`https://127.0.0.1:<port>/<path>`) with the plane's CA as its bundle; the manager serves with a
certificate for 127.0.0.1 signed by that CA (its internal certificate management, which names a Service,
is off). The webhooks of the job integrations (batch/Job, Pods, ...) are left out: this manager admits
OASISEvaluations only, registered as an external framework.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

EVALUATION_FRAMEWORK = "OASISEvaluation.v1alpha1.oasis.evaluation.dev"
NAMESPACE = "kueue-system"
# Only the webhooks of Kueue's own API group: `/mutate-kueue-x-k8s-io-...`, `/validate-kueue-x-k8s-io-...`.
_OWN_PATHS = "-kueue-x-k8s-io-"
CONFIG_PREFIX = "oasis-local-"


def configuration(webhook_port: int, health_port: int, cert_dir: str) -> dict[str, Any]:
    """Kueue's `Configuration` (config.kueue.x-k8s.io/v1beta2) for the local plane."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": cert_dir},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": [], "externalFrameworks": [EVALUATION_FRAMEWORK]},
    }


def manager_args(config_file: str) -> list[str]:
    """The manager's flags: its configuration, and no visibility API server (no APIService here)."""
    return [f"--config={config_file}", "--feature-gates=VisibilityOnDemand=false"]


# Kueue 0.17's manager reads a metrics serving certificate from this fixed path whenever its internal
# certificate management is off (cmd/kueue/main.go), even with metrics off. The local plane hands it one
# in a private mount namespace (bubblewrap, which the command agents' sandbox uses too): /etc is a fresh
# tmpfs there, with what a Go program reads of /etc bound back read-only and the certificate added.
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
_ETC_KEPT = ("hosts", "nsswitch.conf", "resolv.conf", "localtime", "ssl", "passwd", "group")


def wrapped(bwrap: str, cert_dir: str, argv: list[str], *, die_with_parent: bool) -> list[str]:
    """`argv` run by bubblewrap with `cert_dir` at METRICS_CERT_DIR; everything else as outside.

    `die_with_parent`: gone with the process that started it (a test session's plane); else it outlives
    it (`oasis cluster up`) and the plane's `stop` ends its process group."""
    kept = [arg for name in _ETC_KEPT for arg in ("--ro-bind-try", f"/etc/{name}", f"/etc/{name}")]
    dies = ["--die-with-parent"] if die_with_parent else []
    return [
        bwrap, "--dev-bind", "/", "/", "--tmpfs", "/etc", *kept,
        "--ro-bind", cert_dir, METRICS_CERT_DIR, *dies, "--", *argv,
    ]  # fmt: skip


def webhook_configurations(
    shipped: Iterable[Mapping[str, Any]], webhook_port: int, ca_bundle: str
) -> list[dict[str, Any]]:
    """Kueue's own webhook configurations, each webhook of its API group pointed at 127.0.0.1 by URL."""
    out = []
    for document in shipped:
        if not document or document.get("kind") not in (
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ):
            continue
        webhooks = []
        for hook in document.get("webhooks") or []:
            service = (hook.get("clientConfig") or {}).get("service") or {}
            path = str(service.get("path") or "")
            if _OWN_PATHS not in path:
                continue
            rewritten = copy.deepcopy(dict(hook))
            rewritten["clientConfig"] = {
                "url": f"https://127.0.0.1:{webhook_port}{path}",
                "caBundle": ca_bundle,
            }
            webhooks.append(rewritten)
        if webhooks:
            name = CONFIG_PREFIX + str((document.get("metadata") or {}).get("name") or "kueue")
            out.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": document["kind"],
                    "metadata": {"name": name},
                    "webhooks": webhooks,
                }
            )
    return out
