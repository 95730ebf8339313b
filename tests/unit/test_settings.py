"""One settings object for the operator: every variable read in one place, bad values named at start."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oasis_operator.profiles import default_profile_path
from oasis_operator.profiles.loader import shipped_profile_path
from oasis_operator.provider_api import ProviderApiSettings
from oasis_operator.settings import OperatorSettings, SettingsError

REPO = Path(__file__).resolve().parents[2]


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
        ("OASIS_LOG_FORMAT", "yaml", "one of 'plain', 'full' or 'json'"),
        ("OASIS_KUEUE_SLOT_CPU", "one core", "a value matching"),
        ("OASIS_KUEUE_SLOT_MEMORY", "1GB", "a value matching"),
        ("OASIS_KUEUE_POLL_SECONDS", "0", "a number greater than 0"),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_takes(variable: str, value: str, takes: str) -> None:
    with pytest.raises(SettingsError) as exc:
        OperatorSettings.from_env({variable: value})
    assert str(exc.value).startswith(f"{variable}: {value!r} is not usable; set it to {takes}")


def test_flags_win_over_variables_and_name_their_variable_when_bad() -> None:
    env = {"OASIS_MAX_EVALUATIONS": "2", "OASIS_GATEWAY_HOST": "0.0.0.0"}  # noqa: S104 - a pod's
    settings = OperatorSettings.from_env(env, flags={"OASIS_MAX_EVALUATIONS": "7", "OASIS_DATA_DIR": None})
    assert (settings.max_evaluations, settings.gateway_host) == (7, "0.0.0.0")  # noqa: S104
    with pytest.raises(SettingsError, match=r"^OASIS_GATEWAY_PORT: '99999' is not usable"):
        OperatorSettings.from_env({}, flags={"OASIS_GATEWAY_PORT": "99999"})
    with pytest.raises(SettingsError, match=r"OASIS_GATEWAY_PROT: not a setting"):
        OperatorSettings.from_env({}, flags={"OASIS_GATEWAY_PROT": "1"})


def test_the_log_format_is_full_unless_the_variable_or_the_flag_says_otherwise() -> None:
    assert OperatorSettings.from_env({}).log_format == "full"
    assert OperatorSettings.from_env({"OASIS_LOG_FORMAT": "json"}).log_format == "json"
    flagged = OperatorSettings.from_env({"OASIS_LOG_FORMAT": "json"}, flags={"OASIS_LOG_FORMAT": "plain"})
    assert flagged.log_format == "plain"


def test_the_provider_api_is_refused_at_start_without_a_token_file() -> None:
    with pytest.raises(SettingsError, match=r"^OASIS_PROVIDER_API_TOKEN_FILE: name the file"):
        OperatorSettings.from_env({"OASIS_PROVIDER_API_PORT": "8445"})
    settings = OperatorSettings.from_env(
        {
            "OASIS_PROVIDER_API_PORT": "8445",
            "OASIS_PROVIDER_API_TOKEN_FILE": "/etc/oasis/token",
            "OASIS_PROVIDER_API_DOORS": "runner, ci ,",
        }
    )
    assert settings.provider_api_door_names == ("runner", "ci")
    assert OperatorSettings.from_env({}).provider_api_door_names is None


def test_a_provider_api_token_is_read_from_its_file_once_at_start(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    settings = OperatorSettings.from_env(
        {"OASIS_PROVIDER_API_PORT": "8445", "OASIS_PROVIDER_API_TOKEN_FILE": str(token)}
    )
    api = ProviderApiSettings.from_settings(settings, tmp_path / "api")
    assert api is not None
    assert (api.port, api.token, api.doors, api.cert) == (8445, "s3cret", ("oasis-agent",), None)
    assert ProviderApiSettings.from_settings(OperatorSettings.from_env({}), tmp_path) is None
    token.write_text("two words\n")
    with pytest.raises(ValueError, match=r"^OASIS_PROVIDER_API_TOKEN_FILE: .* must hold the token alone"):
        ProviderApiSettings.from_settings(settings, tmp_path / "api")


def test_only_reads_the_named_variables() -> None:
    env = {"OASIS_PROFILE_DIR": "/etc/oasis/profile", "OASIS_MAX_EVALUATIONS": "many"}
    assert OperatorSettings.only("OASIS_PROFILE_DIR", env=env).profile_dir == Path("/etc/oasis/profile")
    assert shipped_profile_path(env) == Path("/etc/oasis/profile")
    assert shipped_profile_path({}) == default_profile_path()
    assert (shipped_profile_path({}) / "profile.yaml").is_file()


def test_only_the_settings_module_reads_the_operators_environment() -> None:
    """The parts receive values: outside the settings module no module of the operator reads a variable.

    Left out: the local control plane (localcluster/), the CLI's own commands (cli/), the reference
    agents (agents/reference/) and the command sandbox and probes that build an agent's environment.
    """
    found = subprocess.run(
        ["grep", "-rlE", r"os\.environ|getenv\(", str(REPO / "operator" / "oasis_operator"),
         "--include=*.py", "--exclude-dir=localcluster", "--exclude-dir=cli", "--exclude-dir=reference"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip
    readers = {str(Path(p).relative_to(REPO / "operator" / "oasis_operator")) for p in found}
    agent_side = {"agents/adapters.py", "containment/attempt.py", "containment/mcp_attempt.py"}
    assert readers - agent_side == {"settings.py"}


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


def test_kueue_slot_requests_default_to_one_core_and_one_gibibyte_and_take_quantities() -> None:
    assert (
        OperatorSettings.from_env({}).kueue_slot_cpu,
        OperatorSettings.from_env({}).kueue_slot_memory,
    ) == (
        "1",
        "1Gi",
    )
    settings = OperatorSettings.from_env({"OASIS_KUEUE_SLOT_CPU": "500m", "OASIS_KUEUE_SLOT_MEMORY": "1.5G"})
    assert (settings.kueue_slot_cpu, settings.kueue_slot_memory) == ("500m", "1.5G")
