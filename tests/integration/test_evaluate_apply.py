"""`oasis evaluate` applying to the real API server (no operator): refuse, replace, generateName."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml
from kubernetes.client import CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.support import PLURAL, evaluation, get

AGENT = {"name": "careful", "http": {"url": "http://127.0.0.1:1"}}


def _oasis(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    return subprocess.run(
        [str(VENV_BIN / "oasis"), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_existing_evaluation_is_refused_then_replaced(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text(yaml.safe_dump(evaluation("ci-run", AGENT)))
    first = _oasis(cluster, "evaluate", "-f", str(path), "-n", namespace, "-o", "name")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "oasisevaluation.oasis.evaluation.dev/ci-run\n"
    uid = get(custom, namespace, "ci-run")["metadata"]["uid"]
    listed = _oasis(cluster, "report", "list", "-n", namespace)
    assert listed.stdout.splitlines()[1].split()[:3] == ["ci-run", "careful", "Pending"], listed.stderr
    everywhere = _oasis(cluster, "report", "list", "-A", "-o", "name")
    assert "oasisevaluation.oasis.evaluation.dev/ci-run" in everywhere.stdout.splitlines()

    refused = _oasis(cluster, "evaluate", "-f", str(path), "-n", namespace)
    assert refused.returncode == 3
    assert f"OASISEvaluation {namespace}/ci-run already exists" in refused.stderr
    assert "--replace" in refused.stderr
    assert get(custom, namespace, "ci-run")["metadata"]["uid"] == uid

    replaced = _oasis(cluster, "evaluate", "-f", str(path), "-n", namespace, "--replace", "--timeout", "60")
    assert replaced.returncode == 0, replaced.stderr
    assert get(custom, namespace, "ci-run")["metadata"]["uid"] != uid


def test_generate_name_gives_a_new_evaluation_per_run(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    body = evaluation("unused", AGENT)
    body["metadata"] = {"generateName": "ci-", "namespace": namespace}
    path = tmp_path / "evaluation.yaml"
    path.write_text(yaml.safe_dump(body))
    for _ in range(2):
        assert _oasis(cluster, "evaluate", "-f", str(path)).returncode == 0
    items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)["items"]
    names = [i["metadata"]["name"] for i in items]
    assert len(names) == 2
    assert all(n.startswith("ci-") for n in names)


def test_a_spec_the_api_server_rejects_exits_3_with_its_message(cluster: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text(yaml.safe_dump({**evaluation("ci-run", AGENT), "metadata": {"name": "Not_A_Name"}}))
    result = _oasis(cluster, "evaluate", "-f", str(path), "-n", "default")
    assert result.returncode == 3
    assert "creating the evaluation in default: 422" in result.stderr
    assert "Not_A_Name" in result.stderr


def test_without_n_the_evaluation_goes_to_the_context_namespace(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    current = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    current["context"]["namespace"] = namespace
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    path = tmp_path / "evaluation.yaml"
    path.write_text(yaml.safe_dump(evaluation("from-context", AGENT)))
    result = _oasis(cluster, "evaluate", "-f", str(path), "--kubeconfig", str(kubeconfig))
    assert result.returncode == 0, result.stderr
    assert f"created OASISEvaluation {namespace}/from-context" in result.stderr
    assert get(custom, namespace, "from-context")["metadata"]["name"] == "from-context"
