"""The command agents' sandbox: what an agent process sees, who it is, and refusal where none can be had."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes.client import ApiClient

from oasis_operator.agents import sandbox
from oasis_operator.agents.adapters import CommandAdapter
from oasis_operator.agents.sandbox import (
    SandboxPolicy,
    SandboxUnavailableError,
    isolation_characteristics,
    wrap,
)
from oasis_operator.cli.main import main
from oasis_operator.environments.runtime import OperatorConfig, RuntimeSetupError
from oasis_operator.evaluation.adapter import agent_adapter
from oasis_operator.models.crd import AgentSpec, CommandAgent


def _in_sandbox(
    tmp_path: Path, code: str, policy: SandboxPolicy | None = None
) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    sandbox.prepare_home(home)
    argv = wrap([sys.executable, "-I", "-c", code], home, policy or SandboxPolicy())
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=60, check=False, env={"PATH": "/usr/bin"}
    )


def test_the_host_outside_the_view_does_not_exist_for_the_agent(tmp_path: Path) -> None:
    secret = tmp_path / "admin.kubeconfig"
    secret.write_text("token: admin")
    code = (
        f"import os; print(os.path.exists({str(secret)!r}), os.path.exists('/root/.kube'), os.listdir('/'))"
    )
    result = _in_sandbox(tmp_path, code)
    assert result.returncode == 0, result.stderr
    exists, kube, top = result.stdout.split(" ", 2)
    assert (exists, kube) == ("False", "False")
    # A top-level directory holding the operator's own install (a checkout under /var/tmp, say) is shown
    # as far as that install; the others do not exist for the agent.
    shown = {p.parts[1] for p in sandbox.own_install() if len(p.parts) > 1}
    for hidden in {"sys", "var", "run"} - shown:
        assert f"'{hidden}'" not in top


@pytest.mark.skipif(os.geteuid() != 0, reason="the unprivileged user is for a root operator")
def test_under_a_root_operator_the_agent_is_an_unprivileged_user(tmp_path: Path) -> None:
    secret = tmp_path / "shown" / "key.pem"
    secret.parent.mkdir()
    secret.write_text("private key")
    secret.chmod(0o600)  # root's own file, shown read-only on purpose: still unreadable
    code = f"import os; print(os.getuid(), os.getgroups()); open({str(secret)!r}).read()"
    result = _in_sandbox(tmp_path, code, SandboxPolicy(read_only=(secret.parent,)))
    assert result.stdout.split(" ", 1)[0] == str(sandbox.agent_user()[1].uid) != "0"
    assert "PermissionError" in result.stderr


def test_the_system_is_read_only_and_the_home_is_the_agents(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "open('/home/agent/note', 'w').write('x')\n"
        "try:\n    open('/usr/oasis-probe', 'w')\nexcept OSError as e:\n    print(type(e).__name__)\n"
    )
    result = _in_sandbox(tmp_path, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in {"PermissionError", "OSError"}
    assert (tmp_path / "home" / "note").read_text() == "x"


def test_the_whole_filesystem_cannot_be_shown() -> None:
    with pytest.raises(ValueError, match="whole filesystem"):
        wrap(["/bin/true"], None, SandboxPolicy(read_only=(Path("/"),)))


def test_no_bubblewrap_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap"):
        wrap(["/bin/true"], None, SandboxPolicy())


def test_without_a_sandbox_the_command_agent_is_refused_unless_the_spec_opts_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "check", lambda: "bubblewrap cannot set up a sandbox on this machine (test)")
    with pytest.raises(SandboxUnavailableError, match="cannot set up"):
        CommandAdapter(["/bin/true"])
    api = ApiClient()
    spec = AgentSpec(command=CommandAgent(command=["/bin/true"]))
    with pytest.raises(RuntimeSetupError, match=r"spec\.agent\.command\.isolation: .*isolation: none"):
        agent_adapter(api, "ns", spec, OperatorConfig())
    opted_out = AgentSpec(command=CommandAgent(command=["/bin/true"], isolation="none"))
    adapter, _limit = agent_adapter(api, "ns", opted_out, OperatorConfig(agent_uid=4321))
    assert isinstance(adapter, CommandAdapter)
    assert not adapter.policy.isolated
    assert adapter.policy.uid == 4321  # the operator's OASIS_AGENT_UID, handed over as a value
    assert "agent isolation: none" in isolation_characteristics(opted_out)[0]
    assert "bubblewrap sandbox" in isolation_characteristics(spec)[0]


def test_the_agent_user_is_the_uid_given_never_root() -> None:
    assert sandbox.agent_user(4321) == ("4321", sandbox.AgentUser(4321, 4321))
    assert sandbox.agent_user(0)[1].uid != 0
    assert sandbox.agent_user(None) == sandbox.agent_user()


@pytest.mark.parametrize("path", ["relative/bin", "/", "/opt/../root"])
def test_read_only_paths_must_be_absolute_and_not_everything(path: str) -> None:
    with pytest.raises(ValueError, match=r"readOnlyPaths\[0\]"):
        CommandAgent(command=["agent"], readOnlyPaths=[path])


def test_oasis_agent_sandbox_runs_the_command_sandboxed_and_passes_its_status(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MODEL_API_KEY", "k-123")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "do-not-leak")
    script = (
        "test -e /proc/$HOST_PID && s=seen || s=unseen; "
        'echo "$HOME $MODEL_API_KEY ${AWS_SECRET_ACCESS_KEY:-none} $s"; exit 3'
    )
    args = ["--pass-env", "MODEL_API_KEY", "--env", f"HOST_PID={os.getpid()}"]
    assert main(["agent", "sandbox", *args, "--", "/bin/sh", "-c", script]) == 3
    assert capfd.readouterr().out.split() == ["/home/agent", "k-123", "none", "unseen"]
    assert main(["agent", "sandbox", "--env", "NOVALUE", "--", "/bin/true"]) == 2
    assert main(["agent", "sandbox"]) == 2
