"""The start-up sweep of orphaned sandboxes when the sandbox cluster is missing or does not answer."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import kopf
import pytest
import yaml

from oasis_operator.controllers.sandbox_gc import collect_orphan_sandboxes


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: connections are refused


def _kubeconfig(path: Path, server: str) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_without_a_sandbox_cluster_there_is_nothing_to_sweep(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("OASIS_SANDBOX_KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with caplog.at_level(logging.INFO):
        collect_orphan_sandboxes(memo=kopf.Memo(), logger=logging.getLogger("test"))
    assert "no default sandbox cluster configured" in caplog.text


def test_a_sandbox_cluster_that_does_not_answer_does_not_stop_the_operator(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", f"https://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("OASIS_SANDBOX_KUBECONFIG", str(kubeconfig))
    # The client reads $KUBECONFIG when it is imported; point its default at the same file.
    monkeypatch.setattr("kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    with caplog.at_level(logging.WARNING):
        collect_orphan_sandboxes(memo=kopf.Memo(), logger=logging.getLogger("test"))
    assert "sweep of orphaned sandboxes failed; it runs again at the next start" in caplog.text
