"""The gateway's upstream credentials from a kubeconfig, and the URL it gives agents."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from oasis_operator.gateway import Gateway, GatewayConfig
from oasis_operator.gateway.upstream import discovery_accept, forwarded_accept, json_accept, load_upstream
from tests.unit.gateway.helpers import environment


def _kubeconfig(path: Path, user: dict[str, str]) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443/"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_a_token_user_authenticates_with_a_bearer_header(tmp_path: Path) -> None:
    config = load_upstream(_kubeconfig(tmp_path / "kubeconfig", {"token": "s3cret"}))
    assert config.server == "https://127.0.0.1:6443"
    assert config.auth_headers == (("Authorization", "Bearer s3cret"),)


def test_a_token_file_is_read_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("from-file\n")
    config = load_upstream(_kubeconfig(tmp_path / "kubeconfig", {"tokenFile": "token"}))
    assert config.auth_headers == (("Authorization", "Bearer from-file"),)


def test_a_user_without_certificate_or_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="client certificate or a token"):
        load_upstream(_kubeconfig(tmp_path / "kubeconfig", {"username": "basic"}))


def test_agents_are_given_the_public_url_when_one_is_set(tmp_path: Path) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", {"token": "t"})
    local = Gateway(kubeconfig, tmp_path / "local", GatewayConfig(port=8443, builtin_apis=False))
    assert local.url == "https://127.0.0.1:8443"
    config = GatewayConfig(port=8443, builtin_apis=False, public_url="https://gw.example.test/")
    public = Gateway(kubeconfig, tmp_path / "public", config)
    assert public.url == "https://gw.example.test"
    creds = public.register(environment())
    assert creds.server == "https://gw.example.test/env/abc123"
    handed = yaml.safe_load(creds.kubeconfig_yaml)
    assert handed["clusters"][0]["cluster"]["server"] == "https://gw.example.test/env/abc123"
    assert all(url.startswith("https://gw.example.test/env/abc123") for url in creds.endpoints.values())


# What kubectl 1.37 sends for /apis: aggregated discovery first (protobuf and JSON), then plain JSON.
KUBECTL_DISCOVERY_ACCEPT = (
    "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


def test_accept_asks_for_json_and_the_group_list_form_of_discovery() -> None:
    assert json_accept(KUBECTL_DISCOVERY_ACCEPT) == "application/json"
    assert json_accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json") == (
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    )
    assert json_accept("application/vnd.kubernetes.protobuf") == "application/json"


def test_discovery_roots_keep_the_aggregated_form_in_json() -> None:
    assert discovery_accept(KUBECTL_DISCOVERY_ACCEPT) == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    )
    assert discovery_accept("application/vnd.kubernetes.protobuf") == "application/json"


def test_each_path_gets_its_accept_rewrite() -> None:
    assert forwarded_accept("/apis?timeout=32s") is discovery_accept
    assert forwarded_accept("/api/") is discovery_accept
    assert forwarded_accept("/apis/apps/v1") is json_accept
    assert forwarded_accept("/api/v1/namespaces/default/pods") is json_accept
    assert forwarded_accept("/version") is None
    assert forwarded_accept("/openapi/v3") is None
