"""`oasis matrix apply|status` against the real API server (no operator): all or nothing, --replace, the
summary and its exit code read from the evaluations' status, a deleted member counted as missing."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.models.matrix import MATRIX_LABEL
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.support import PLURAL, get

AGENTS = [
    {"name": "a", "agent": {"http": {"url": "http://127.0.0.1:1"}}},
    {"name": "b", "agent": {"job": {"image": "registry.example/agent:1"}}},
]


def _oasis(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run(
        [str(VENV_BIN / "oasis"), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _file(tmp_path: Path, namespace: str, **changes: Any) -> Path:
    document = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "EvaluationMatrix",
        "metadata": {"name": "nightly", "namespace": namespace},
        "repetitions": 2,
        "template": {
            "profile": {"name": "software-infrastructure"},
            "scenarios": {"ids": ["infra.safety.*"]},
        },
        "agents": AGENTS,
        **changes,
    }
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _set_status(custom: CustomObjectsApi, namespace: str, name: str, phase: str, safety: str | None) -> None:
    status = {"phase": phase, "summary": {"safety": safety}, "progress": {"done": 3, "total": 3}}
    custom.patch_namespaced_custom_object_status(
        API_GROUP, API_VERSION, namespace, PLURAL, name, {"status": status}
    )


def _names(custom: CustomObjectsApi, namespace: str) -> list[str]:
    items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)["items"]
    return sorted(i["metadata"]["name"] for i in items)


def test_apply_creates_every_evaluation_labelled_then_refuses_all_unless_replaced(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    path = _file(tmp_path, namespace)
    first = _oasis(cluster, "matrix", "apply", "-f", str(path))
    assert first.returncode == 0, first.stderr
    assert _names(custom, namespace) == ["nightly-a", "nightly-b"]
    created = get(custom, namespace, "nightly-b")
    assert created["metadata"]["labels"][MATRIX_LABEL] == "nightly"
    assert created["spec"]["repetitions"] == 2
    uid = created["metadata"]["uid"]

    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "nightly-a")
    refused = _oasis(cluster, "matrix", "apply", "-f", str(path))
    assert refused.returncode == 3
    assert "1 of the matrix's evaluations already exist" in refused.stderr
    assert "Nothing was created" in refused.stderr
    assert _names(custom, namespace) == ["nightly-b"]  # nightly-a was not created by the refused apply

    replaced = _oasis(cluster, "matrix", "apply", "-f", str(path), "--replace", "--timeout", "60")
    assert replaced.returncode == 0, replaced.stderr
    assert _names(custom, namespace) == ["nightly-a", "nightly-b"]
    assert get(custom, namespace, "nightly-b")["metadata"]["uid"] != uid


def test_status_wait_exits_with_the_most_severe_verdict_and_lists_every_evaluation(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    path = _file(tmp_path, namespace)
    assert _oasis(cluster, "matrix", "apply", "-f", str(path)).returncode == 0
    _set_status(custom, namespace, "nightly-a", "Completed", "PASS")
    _set_status(custom, namespace, "nightly-b", "Completed", "FAIL")
    result = _oasis(
        cluster, "matrix", "status", "nightly", "-n", namespace, "--wait", "--timeout", "30", "-o", "json"
    )
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert [(e["name"], e["safety"], e["exitCode"]) for e in summary["evaluations"]] == [
        ("nightly-a", "PASS", 0),
        ("nightly-b", "FAIL", 1),
    ]
    assert "2 evaluations: 1 FAIL, 1 PASS (exit 1)" in result.stderr

    _set_status(custom, namespace, "nightly-b", "Completed", "PASS")
    by_file = _oasis(cluster, "matrix", "status", "-f", str(path), "--wait", "--timeout", "30")
    assert by_file.returncode == 0, by_file.stderr
    assert by_file.stdout.splitlines()[1].split()[:5] == ["nightly-a", "a", "-", "Completed", "PASS"]

    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "nightly-b")
    missing = _oasis(cluster, "matrix", "status", "nightly", "-n", namespace, "--wait", "--timeout", "30")
    assert missing.returncode == 3, missing.stdout + missing.stderr
    assert "Missing" in missing.stdout


def test_status_without_wait_shows_running_evaluations_and_exits_0(
    cluster: Cluster, namespace: str, tmp_path: Path
) -> None:
    path = _file(tmp_path, namespace)
    assert _oasis(cluster, "matrix", "apply", "-f", str(path)).returncode == 0
    shown = _oasis(cluster, "matrix", "status", "nightly", "-n", namespace)
    assert shown.returncode == 0, shown.stderr
    assert [line.split()[3] for line in shown.stdout.splitlines()[1:]] == ["Pending", "Pending"]
    timed_out = _oasis(cluster, "matrix", "status", "nightly", "-n", namespace, "--wait", "--timeout", "2")
    assert timed_out.returncode == 3
    assert "not ended in time: nightly-a, nightly-b" in timed_out.stderr


def test_a_matrix_the_api_server_refuses_names_its_message_and_an_unknown_matrix_is_an_error(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    absent = _oasis(cluster, "matrix", "status", "nothing-here", "-n", namespace)
    assert absent.returncode == 3
    assert f"no evaluation of matrix 'nothing-here' in {namespace}" in absent.stderr
    nowhere = _oasis(cluster, "matrix", "apply", "-f", str(_file(tmp_path, "no-such-namespace-x1")))
    assert nowhere.returncode == 3
    assert nowhere.stderr.startswith("oasis matrix: 404")
    assert "Traceback" not in nowhere.stderr
    assert _names(custom, namespace) == []
