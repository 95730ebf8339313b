"""`oasis agent run` starts light: a command agent is started once per scenario, so what its process
imports is paid 50 times per profile. Structural, not timed: the modules loaded, not the seconds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Run `oasis` in a fresh interpreter, then report which of the heavy parts ended up in `sys.modules`.
PROBE = """
import json, sys
from oasis_operator.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = json.loads(sys.stdin.readline() or "[]")
loaded = sorted({h for h in heavy for m in sys.modules if m == h or m.startswith(h + ".")})
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""
HEAVY = [
    "mcp",
    "httpx2",
    "kopf",
    "aiohttp",
    "kubernetes",
    "oasis_operator.localcluster",
    "oasis_operator.gateway",
    "oasis_operator.engine",
    "oasis_operator.evaluation",
    "oasis_operator.sandbox",
    "oasis_operator.models.evidence",
    "oasis_operator.models.scenario",
    "oasis_operator.agents.reference.expert",
]
REQUEST = {
    "prompt": "Why is checkout failing in namespace shop? Fix it.",
    "scope": {"namespaces": ["shop"]},
    "environment": {"kubeconfig": "apiVersion: v1\nkind: Config\n"},
}


def _oasis(args: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """Run `oasis ARGS` in a fresh interpreter: (exit code and heavy parts loaded, stdout)."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        input=json.dumps(HEAVY) + "\n",
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report: dict[str, Any] = json.loads(proc.stderr.strip().splitlines()[-1])
    return report, proc.stdout


@pytest.fixture
def failing_kubectl() -> str:
    """A kubectl that fails every call at once: the run reaches nothing, and needs no server."""
    binary = shutil.which("false")
    assert binary is not None
    return binary


def test_careful_run_imports_none_of_the_heavy_parts(tmp_path: Path, failing_kubectl: str) -> None:
    request = tmp_path / "request.json"
    request.write_text(json.dumps(REQUEST))
    env = {"OASIS_REQUEST": str(request), "OASIS_KUBECTL": failing_kubectl}
    report, stdout = _oasis(["agent", "run", "--policy", "careful"], env)
    assert report == {"code": 0, "loaded": []}
    answer = json.loads(stdout)
    # The run really acted (through the failing kubectl): it read the namespaces and its scope's objects.
    assert [a["arguments"]["command"][1:3] for a in answer["actions"]] == [
        ["get", "namespaces"],
        ["get", "deployments,pods,services,configmaps,hpa,events"],
    ]
    assert all(a["error"] == "exit 1" for a in answer["actions"])


def test_identity_and_help_import_none_of_the_heavy_parts() -> None:
    report, stdout = _oasis(["agent", "run", "--policy", "careful"], {"OASIS_MODE": "identity"})
    assert report == {"code": 0, "loaded": []}
    assert json.loads(stdout)["identity"]["name"] == "reference-careful"
    report, stdout = _oasis(["agent", "run", "--help"], {})
    assert report == {"code": 0, "loaded": []}
    assert "--policy" in stdout


def test_the_probe_sees_heavy_imports() -> None:
    """The control: `oasis --help` lists every command, so it imports them all, heavy parts included."""
    report, stdout = _oasis(["--help"], {})
    assert report["code"] == 0
    # (The MCP SDK is no longer among them: the gateway imports it at an environment's first MCP request.)
    assert {"kubernetes", "oasis_operator.gateway", "aiohttp"} <= set(report["loaded"])
    assert "provider-api" in stdout
