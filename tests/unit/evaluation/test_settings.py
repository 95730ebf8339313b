"""One settings object for the operator: every variable read in one place, bad values named at start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oasis_operator.evaluation.settings import OperatorSettings, SettingsError

REPO = Path(__file__).resolve().parents[3]


def test_defaults_and_empty_variables_count_as_unset() -> None:
    settings = OperatorSettings.from_env({"OASIS_GATEWAY_URL": "", "OASIS_MAX_EVALUATIONS": ""})
    assert (settings.max_evaluations, settings.host_patience, settings.gateway_url) == (4, 300.0, None)
    assert settings.effective_sandbox_kubeconfig is None


def test_values_are_read_and_typed() -> None:
    settings = OperatorSettings.from_env(
        {
            "OASIS_MAX_EVALUATIONS": "2",
            "OASIS_HOST_PATIENCE": "12.5",
            "OASIS_SANDBOX_AUDIT_LOG": "/a.log:/b.log",
            "KUBECONFIG": "/run/a:/run/b",
            "OASIS_AGENT_NAMESPACE": "agents",
        }
    )
    assert (settings.max_evaluations, settings.host_patience) == (2, 12.5)
    assert settings.audit_logs == (Path("/a.log"), Path("/b.log"))
    assert settings.effective_sandbox_kubeconfig == Path("/run/a")
    assert settings.agent_namespace == "agents"


@pytest.mark.parametrize(
    ("variable", "value", "takes"),
    [
        ("OASIS_MAX_EVALUATIONS", "many", "a whole number"),
        ("OASIS_MAX_EVALUATIONS", "0", "a number of at least 1"),
        ("OASIS_HOST_PATIENCE", "forever", "a number of seconds"),
        ("OASIS_GATEWAY_PORT", "70000", "a number of at most 65535"),
        ("OASIS_AUDIT_WEBHOOK_PORT", "https", "a whole number"),
        ("OASIS_GATEWAY_URL", "gw.example:443", "a value matching ^https?://"),
        ("OASIS_SANDBOX_PREFIX", "Sandbox_", "a value matching"),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_takes(variable: str, value: str, takes: str) -> None:
    with pytest.raises(SettingsError) as exc:
        OperatorSettings.from_env({variable: value})
    assert str(exc.value).startswith(f"{variable}: {value!r} is not usable; set it to {takes}")


def test_every_variable_the_operator_reads_is_a_setting() -> None:
    """No module of the operator process reads a variable the settings do not know.

    The local control plane (`oasis cluster`, localcluster/) and the CLI's own commands have theirs.
    """
    found = subprocess.run(
        ["grep", "-rhoE", "--exclude-dir=localcluster", "--exclude-dir=cli",
         r"environ(\.get)?[(\[]\"[A-Z_]+\"", str(REPO / "operator" / "oasis_operator")],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    read = {line.split('"')[1] for line in found}
    # Read by the reference agents and the command sandbox inside an agent's process, not the operator's.
    agent_side = {"OASIS_MODE", "OASIS_REQUEST", "OASIS_KUBECTL", "OASIS_ENDPOINT_MCP", "PATH", "KUBECONFIG"}
    assert read - agent_side <= set(OperatorSettings.variables())
