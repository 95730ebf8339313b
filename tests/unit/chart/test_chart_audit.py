"""The chart's sandbox control plane sends its audit to the operator: webhook flags, TLS, Service, policy."""

from __future__ import annotations

import pytest
import yaml

from oasis_operator.environments.runtime import AuditWebhookConfig, RuntimeSetupError
from oasis_operator.localcluster.audit import audit_policy
from tests.unit.chart.chart_render import find, render

NS = "oasis-system"
FULL = "oasis-oasis-operator"


def test_sandbox_api_server_posts_its_audit_to_the_operator() -> None:
    objects = render(namespace=NS)
    apiserver = find(objects, "Deployment", "-sandbox-apiserver")["spec"]["template"]["spec"]
    command = apiserver["containers"][0]["command"]
    assert "--audit-webhook-config-file=/etc/kubernetes/pki/audit-webhook.kubeconfig" in command
    assert "--audit-webhook-mode=batch" in command
    items = {i["key"] for v in apiserver["volumes"] if "secret" in v for i in v["secret"]["items"]}
    assert "audit-webhook.kubeconfig" in items

    operator = find(objects, "Deployment", FULL)["spec"]["template"]["spec"]
    container = operator["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OASIS_AUDIT_WEBHOOK_PORT"] == "8444"
    assert env["OASIS_AUDIT_WEBHOOK_TLS_DIR"] == "/etc/oasis/audit-webhook"
    assert {"name": "audit", "containerPort": 8444, "protocol": "TCP"} in container["ports"]
    tls = next(v for v in operator["volumes"] if v["name"] == "audit-webhook-tls")["secret"]
    assert tls["secretName"] == f"{FULL}-sandbox-pki"
    assert {i["path"] for i in tls["items"]} == {"tls.crt", "tls.key", "client-ca.crt"}

    service = find(objects, "Service", "-audit")
    assert service["spec"]["ports"][0]["port"] == 8444
    assert service["spec"]["ports"][0]["targetPort"] == "audit"


def test_no_webhook_outside_control_plane_mode() -> None:
    objects = render({"sandbox": {"mode": "host"}}, namespace=NS)
    operator = find(objects, "Deployment", FULL)["spec"]["template"]["spec"]["containers"][0]
    assert not [e for e in operator["env"] if e["name"].startswith("OASIS_AUDIT_WEBHOOK")]
    assert not [o for o in objects if o["kind"] == "Service" and o["metadata"]["name"].endswith("-audit")]


def test_chart_policy_is_the_local_planes_with_the_chart_operator_identity() -> None:
    policy = find(render(namespace=NS), "ConfigMap", "-sandbox-audit")["data"]["policy.yaml"]
    assert yaml.safe_load(policy) == audit_policy("oasis-operator")


def test_webhook_settings_name_what_is_missing() -> None:
    assert AuditWebhookConfig.from_env({}) is None
    env = {"OASIS_AUDIT_WEBHOOK_PORT": "8444", "OASIS_AUDIT_WEBHOOK_TLS_DIR": "/nope"}
    with pytest.raises(RuntimeSetupError, match=r"OASIS_AUDIT_WEBHOOK_TLS_DIR: /nope lacks tls\.crt"):
        AuditWebhookConfig.from_env(env)
