"""Joining a worker plane to a manager plane's Kueue: the kubeconfig MultiKueue accepts, the objects."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from oasis_operator.cli.main import main
from oasis_operator.localcluster.kubeconfigs import kubeconfig_document
from oasis_operator.localcluster.kueue_manifests import NAMESPACE
from oasis_operator.localcluster.multikueue import inline_kubeconfig, parse_worker, worker_objects


def test_the_worker_kubeconfig_carries_its_certificates_inline_not_by_path(tmp_path: Path) -> None:
    for name, text in (("ca.crt", "CA"), ("admin.crt", "CERT"), ("admin.key", "KEY")):
        (tmp_path / name).write_text(text)
    document = kubeconfig_document(
        "https://127.0.0.1:6443", Path("ca.crt"), tmp_path / "admin.crt", tmp_path / "admin.key", "admin"
    )
    inlined = inline_kubeconfig(document, tmp_path)
    cluster, user = inlined["clusters"][0]["cluster"], inlined["users"][0]["user"]
    assert cluster == {
        "server": "https://127.0.0.1:6443",
        "certificate-authority-data": base64.b64encode(b"CA").decode(),
    }
    assert user == {
        "client-certificate-data": base64.b64encode(b"CERT").decode(),
        "client-key-data": base64.b64encode(b"KEY").decode(),
    }
    assert "certificate-authority" in document["clusters"][0]["cluster"]  # the input is not changed


def test_a_worker_is_a_kubeconfig_secret_in_kueues_namespace_and_a_multikueuecluster_naming_it() -> None:
    (secret_path, secret), (cluster_path, cluster) = worker_objects("worker1", "apiVersion: v1\n")
    assert secret_path == f"/api/v1/namespaces/{NAMESPACE}/secrets"
    assert secret["metadata"] == {"name": "multikueue-worker1", "namespace": NAMESPACE}
    assert yaml.safe_load(base64.b64decode(secret["data"]["kubeconfig"])) == {"apiVersion": "v1"}
    assert cluster_path == "/apis/kueue.x-k8s.io/v1beta2/multikueueclusters"
    assert cluster["metadata"]["name"] == "worker1"
    assert cluster["spec"] == {
        "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": "multikueue-worker1"}}
    }


def test_the_worker_flag_names_what_is_wrong(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    assert parse_worker(f"w1={kubeconfig}") == ("w1", kubeconfig)
    with pytest.raises(ValueError, match="NAME=KUBECONFIG"):
        parse_worker(str(kubeconfig))
    with pytest.raises(ValueError, match="not a DNS label"):
        parse_worker(f"Worker_1={kubeconfig}")
    with pytest.raises(ValueError, match="no kubeconfig at"):
        parse_worker(f"w1={tmp_path / 'absent'}")


def test_cluster_up_refuses_a_worker_without_kueue_or_with_a_bad_name_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "worker.kubeconfig"
    kubeconfig.write_text("{}")
    run_dir = tmp_path / "manager"
    assert main(["cluster", "--run-dir", str(run_dir), "up", "--multikueue-worker", f"w1={kubeconfig}"]) == 2
    assert "add --kueue" in capsys.readouterr().err
    bad = ["cluster", "--run-dir", str(run_dir), "up", "--kueue", "--multikueue-worker", f"W_1={kubeconfig}"]
    assert main(bad) == 2
    assert "not a DNS label" in capsys.readouterr().err
    assert not run_dir.exists()  # nothing was started
