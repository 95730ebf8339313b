"""Kueue's manager on the local plane (localcluster.kueue_manifests): its configuration and webhooks."""

from __future__ import annotations

from typing import Any

from oasis_operator.evaluation.kueue_workload import EXTERNAL_FRAMEWORK
from oasis_operator.localcluster.kueue_manifests import (
    EVALUATION_FRAMEWORK,
    configuration,
    manager_args,
    webhook_configurations,
)


def _hook(path: str) -> dict[str, Any]:
    return {
        "name": path.strip("/") + ".kb.io",
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "rules": [{"apiGroups": ["x"], "resources": ["y"]}],
    }


SHIPPED = [
    None,
    {
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "mutating-webhook-configuration"},
        "webhooks": [_hook("/mutate-batch-v1-job"), _hook("/mutate-kueue-x-k8s-io-v1beta2-workload")],
    },
    {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "validating-webhook-configuration"},
        "webhooks": [_hook("/validate--v1-pod")],
    },
]


def test_only_kueues_own_webhooks_are_registered_by_url_on_loopback_with_the_plane_ca() -> None:
    (mutating,) = webhook_configurations(SHIPPED, 9443, "Q0E=")
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    assert mutating["metadata"]["name"] == "oasis-local-mutating-webhook-configuration"
    (hook,) = mutating["webhooks"]
    assert hook["clientConfig"] == {
        "url": "https://127.0.0.1:9443/mutate-kueue-x-k8s-io-v1beta2-workload",
        "caBundle": "Q0E=",
    }
    assert hook["rules"] == [{"apiGroups": ["x"], "resources": ["y"]}]
    # The shipped documents are not changed.
    assert "service" in SHIPPED[1]["webhooks"][1]["clientConfig"]  # type: ignore[index]


def test_the_configuration_registers_the_evaluation_as_the_only_framework_and_binds_loopback() -> None:
    config = configuration(9443, 8081, "/run/certs")
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["integrations"] == {"frameworks": [], "externalFrameworks": [EVALUATION_FRAMEWORK]}
    assert config["webhook"] == {"host": "127.0.0.1", "port": 9443, "certDir": "/run/certs"}
    assert config["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}
    assert config["internalCertManagement"] == {"enable": False}
    assert config["leaderElection"] == {"leaderElect": False}


def test_the_framework_name_is_the_one_the_evaluation_side_uses() -> None:
    assert EVALUATION_FRAMEWORK == EXTERNAL_FRAMEWORK


def test_the_manager_runs_without_the_visibility_server() -> None:
    assert manager_args("/c.yaml") == ["--config=/c.yaml", "--feature-gates=VisibilityOnDemand=false"]
