"""Run kubectl against the sandbox with the kubeconfig the evaluation handed over, recording each call."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oasis_operator.agents.protocol import AgentAction

MAX_RESULT = 20_000


def kubectl_binary() -> str:
    """`$OASIS_KUBECTL`, else kubectl next to this Python (the venv's), else on PATH."""
    configured = os.environ.get("OASIS_KUBECTL")
    if configured:
        return configured
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    return shutil.which("kubectl") or "kubectl"


@dataclass
class Kubectl:
    """One agent run's kubectl: every call becomes an action in the transcript."""

    kubeconfig: str
    actions: list[AgentAction] = field(default_factory=list)
    binary: str = field(default_factory=kubectl_binary)
    _dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Kubectl:
        self._dir = tempfile.TemporaryDirectory(prefix="kubectl-")
        path = Path(self._dir.name) / "kubeconfig"
        path.write_text(self.kubeconfig)
        path.chmod(0o600)
        self._path = path
        return self

    def __exit__(self, *_: object) -> None:
        if self._dir is not None:
            self._dir.cleanup()

    def run(
        self, *args: str, stdin: str | None = None, note: dict[str, Any] | None = None
    ) -> tuple[int, str]:
        """Run `kubectl ARGS`; returns (exit code, stdout or stderr). `note` adds trail fields to the
        recorded action (operation, reasoning, trigger, state_delta)."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self._path.parent),
            "KUBECONFIG": str(self._path),
        }
        proc = subprocess.run(
            [self.binary, *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        output = proc.stdout if proc.returncode == 0 else proc.stderr
        self.actions.append(
            AgentAction.model_validate(
                {
                    "tool": "kubectl",
                    # An object, as the public runner's HTTP adapter requires of `arguments`.
                    "arguments": {"command": ["kubectl", *args]},
                    "result": output[:MAX_RESULT],
                    "error": None if proc.returncode == 0 else f"exit {proc.returncode}",
                    **(note or {}),
                }
            )
        )
        return proc.returncode, output

    def patch_data(self, namespace: str, configmap: str, data: dict[str, str | None]) -> int:
        """Merge `data` into a ConfigMap (a None value removes the key); the exit code."""
        patch = json.dumps({"data": data})
        return self.run("patch", "configmap", configmap, "-n", namespace, "--type", "merge", "-p", patch)[0]
