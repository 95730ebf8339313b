"""The gateway's certificate as the chart sets it up: a Secret, a cert-manager Certificate, or the
operator's own CA, each covering the names agents use (the names are computed once, in gateway/tls.py,
and the chart's Certificate must list the same)."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from oasis_operator.gateway.tls import LOOPBACK_NAMES, GatewayTLSConfig, serving_names
from tests.unit.chart.chart_render import Manifest, find, render

NS = "oasis-system"
SERVICE = "oasis-oasis-operator-gateway"
SERVICE_NAMES = [SERVICE, f"{SERVICE}.{NS}", f"{SERVICE}.{NS}.svc", f"{SERVICE}.{NS}.svc.cluster.local"]
INGRESS = {"enabled": True, "host": "gw.example.test"}
EXTERNAL = "https://agents.example.test:8443"
ISSUER = {"name": "platform-ca", "kind": "ClusterIssuer"}


def _pod(objects: list[Manifest]) -> dict[str, Any]:
    spec: dict[str, Any] = find(objects, "Deployment", "oasis-operator")["spec"]["template"]["spec"]
    return spec


def _env(objects: list[Manifest]) -> dict[str, str]:
    return {e["name"]: str(e.get("value")) for e in _pod(objects)["containers"][0]["env"]}


def _names_from_env(objects: list[Manifest]) -> tuple[str, ...]:
    """What the operator's own certificate would name, from the environment the chart gives it."""
    config = GatewayTLSConfig.from_env(_env(objects))
    return serving_names(config.service, config.namespace, config.hosts)


def _tls_volume(objects: list[Manifest]) -> dict[str, Any] | None:
    pod = _pod(objects)
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    volume = next((v for v in pod["volumes"] if v["name"] == "gateway-tls"), None)
    if volume is not None:
        assert mounts["gateway-tls"] == "/etc/oasis/gateway-tls"
    return volume


def test_without_a_secret_the_operator_certifies_the_service_names_itself() -> None:
    objects = render()
    assert not [o for o in objects if o["kind"] == "Certificate"]
    assert _tls_volume(objects) is None
    assert "OASIS_GATEWAY_TLS_DIR" not in _env(objects)
    # The four Service forms, and the host of the advertised URL (here the Service again), then loopback.
    assert _names_from_env(objects) == (*SERVICE_NAMES, *LOOPBACK_NAMES)


def test_the_own_certificate_names_the_ingress_host_and_the_external_url() -> None:
    objects = render({"gateway": {"ingress": INGRESS, "externalURL": EXTERNAL}})
    assert _env(objects)["OASIS_GATEWAY_HOSTS"] == "gw.example.test"
    assert _names_from_env(objects) == (
        *SERVICE_NAMES,
        "gw.example.test",
        "agents.example.test",
        *LOOPBACK_NAMES,
    )


def test_cert_manager_certificate_names_what_the_operator_would_and_is_mounted() -> None:
    values = {
        "gateway": {
            "ingress": INGRESS,
            "externalURL": EXTERNAL,
            "tls": {"certManager": {"enabled": True, "issuerRef": ISSUER}},
        }
    }
    objects = render(values, namespace=NS)
    cert = find(objects, "Certificate", "-gateway")
    assert cert["apiVersion"] == "cert-manager.io/v1"
    spec = cert["spec"]
    assert spec["secretName"] == "oasis-oasis-operator-gateway-tls"
    assert spec["dnsNames"] == [n for n in _names_from_env(objects) if n not in LOOPBACK_NAMES]
    assert spec["issuerRef"] == {"name": "platform-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    assert spec["privateKey"]["rotationPolicy"] == "Always"
    assert "server auth" in spec["usages"]
    # The operator serves the Secret cert-manager writes, mounted whole so rotations reach the pod.
    volume = _tls_volume(objects)
    assert volume == {
        "name": "gateway-tls",
        "secret": {"secretName": spec["secretName"], "defaultMode": 0o400},
    }
    assert _env(objects)["OASIS_GATEWAY_TLS_DIR"] == "/etc/oasis/gateway-tls"


def test_cert_manager_needs_an_issuer() -> None:
    with pytest.raises(helm.HelmError, match=r"gateway\.tls\.certManager\.issuerRef\.name is required"):
        render({"gateway": {"tls": {"certManager": {"enabled": True}}}})


def test_a_named_secret_is_served_and_the_chart_requests_no_certificate() -> None:
    objects = render({"gateway": {"tls": {"secretName": "platform-gateway-tls"}}})
    assert not [o for o in objects if o["kind"] == "Certificate"]
    volume = _tls_volume(objects)
    assert volume is not None
    assert volume["secret"] == {"secretName": "platform-gateway-tls", "defaultMode": 0o400}
    assert "items" not in volume["secret"]
    # With cert-manager too, the named Secret is where cert-manager writes.
    both = render(
        {"gateway": {"tls": {"secretName": "mine", "certManager": {"enabled": True, "issuerRef": ISSUER}}}}
    )
    assert find(both, "Certificate", "-gateway")["spec"]["secretName"] == "mine"
