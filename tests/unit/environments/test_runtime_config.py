"""Operator-wide settings read from the environment the chart's Deployment sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from oasis_operator.environments.runtime import OperatorConfig, RuntimeSetupError
from oasis_operator.settings import OperatorSettings

VARIABLES = (
    "OASIS_SANDBOX_KUBECONFIG",
    "OASIS_GATEWAY_KUBECONFIG",
    "OASIS_SANDBOX_PREFIX",
    "OASIS_GATEWAY_HOST",
    "OASIS_GATEWAY_PORT",
    "OASIS_GATEWAY_URL",
    "OASIS_DATA_DIR",
    "OASIS_SANDBOX_AUDIT_LOG",
    "KUBECONFIG",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_the_charts_variables_are_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OASIS_SANDBOX_KUBECONFIG", "/etc/oasis/sandbox/kubeconfig")
    monkeypatch.setenv("OASIS_SANDBOX_PREFIX", "oas")
    monkeypatch.setenv("OASIS_GATEWAY_HOST", "0.0.0.0")  # noqa: S104 - what the chart sets in the pod
    monkeypatch.setenv("OASIS_GATEWAY_PORT", "8443")
    monkeypatch.setenv("OASIS_GATEWAY_URL", "https://oasis-oasis-operator-gateway.oasis-system.svc:443")
    (tmp_path / "gateway.kubeconfig").write_text("{}")
    monkeypatch.setenv("OASIS_GATEWAY_KUBECONFIG", str(tmp_path / "gateway.kubeconfig"))
    config = OperatorConfig.from_settings(OperatorSettings.from_env())
    assert config.sandbox_kubeconfig == Path("/etc/oasis/sandbox/kubeconfig")
    assert config.gateway_kubeconfig == tmp_path / "gateway.kubeconfig"
    assert config.sandbox_prefix == "oas"
    assert (config.gateway_host, config.gateway_port) == ("0.0.0.0", 8443)  # noqa: S104
    assert config.gateway_url == "https://oasis-oasis-operator-gateway.oasis-system.svc:443"


def test_without_a_sandbox_kubeconfig_the_first_kubeconfig_is_the_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBECONFIG", "/run/a.kubeconfig:/run/b.kubeconfig")
    monkeypatch.setenv("OASIS_GATEWAY_URL", "")
    config = OperatorConfig.from_settings(OperatorSettings.from_env())
    assert config.sandbox_kubeconfig == Path("/run/a.kubeconfig")
    assert config.gateway_kubeconfig is None  # the gateway looks beside the sandbox kubeconfig
    assert config.gateway_url is None
    assert (config.gateway_host, config.gateway_port, config.sandbox_prefix) == ("127.0.0.1", 0, "sbx")


def test_a_gateway_kubeconfig_that_is_not_there_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OASIS_GATEWAY_KUBECONFIG", "/nope/gateway.kubeconfig")
    with pytest.raises(
        RuntimeSetupError, match=r"OASIS_GATEWAY_KUBECONFIG: /nope/gateway.kubeconfig is not a file"
    ):
        OperatorConfig.from_settings(OperatorSettings.from_env())
