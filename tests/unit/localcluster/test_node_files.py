"""The real node's files and identities (localcluster.node_files, pki.node_certs) and the flags every plane
gains for it: pure functions, checked without a kubelet (tests/e2e/node runs one)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from oasis_operator.localcluster.components import REAL_NODE_LABEL, apiserver_kubelet_args
from oasis_operator.localcluster.node import NODE_IP, NODE_NAME, POD_SUBNET, RealNode, pause_image
from oasis_operator.localcluster.node_files import (
    cni_config,
    containerd_config,
    kubelet_config,
    read_image_list,
)
from oasis_operator.localcluster.node_host import NodeError
from oasis_operator.pki import ensure_pki, node_certs


def _subject(path: Path) -> tuple[str, str]:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    org = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value
    return str(cn), str(org)


def test_the_image_list_names_each_archive_by_its_reference(tmp_path: Path) -> None:
    (tmp_path / "images.list").write_text(
        "# built by hack/build-node-images.sh\nlocalhost/oasis/pause:3.10 pause.oci.tar\n\n"
        "localhost/oasis-operator:0.1.0 /elsewhere/op.oci.tar\n"
    )
    assert read_image_list(tmp_path) == [
        ("localhost/oasis/pause:3.10", tmp_path / "pause.oci.tar"),
        ("localhost/oasis-operator:0.1.0", Path("/elsewhere/op.oci.tar")),
    ]
    assert pause_image(tmp_path) == "localhost/oasis/pause:3.10"
    assert read_image_list(tmp_path / "missing") == []


@pytest.mark.parametrize("line", ["localhost:5000/pause pause.oci.tar", "localhost/pause:1"])
def test_an_image_line_without_tag_or_archive_is_refused_naming_it(tmp_path: Path, line: str) -> None:
    (tmp_path / "images.list").write_text(line + "\n")
    with pytest.raises(ValueError, match=r"is not `<name>:<tag> <archive>`"):
        read_image_list(tmp_path)


def test_containerd_keeps_everything_under_the_run_directory(tmp_path: Path) -> None:
    config = tomllib.loads(
        containerd_config(tmp_path, tmp_path / "c.sock", "localhost/oasis/pause:3.10", Path("/cni"))
    )
    assert config["root"].startswith(str(tmp_path))
    assert config["state"].startswith(str(tmp_path))
    assert config["grpc"]["address"] == str(tmp_path / "c.sock")
    cri = config["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["restrict_oom_score_adj"] is True
    assert cri["sandbox_image"] == "localhost/oasis/pause:3.10"
    assert cri["stream_server_address"] == "127.0.0.1"
    assert cri["cni"]["conf_dir"].startswith(str(tmp_path))
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is False


def test_the_cni_network_is_one_bridge_without_masquerade(tmp_path: Path) -> None:
    [bridge] = cni_config("oasisnode0", POD_SUBNET, NODE_IP, tmp_path)["plugins"]
    assert (bridge["type"], bridge["bridge"], bridge["ipMasq"]) == ("bridge", "oasisnode0", False)
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.231.0.0/24", "gateway": "10.231.0.1"}]]
    assert bridge["ipam"]["dataDir"] == str(tmp_path)


def test_the_kubelet_accepts_cgroup_v1_and_registers_tainted(tmp_path: Path) -> None:
    config = kubelet_config(
        address=NODE_IP, port=10250, ca=tmp_path / "ca.crt", serving=(tmp_path / "k.crt", tmp_path / "k.key"),
        runtime_socket=tmp_path / "c.sock", taint_key=REAL_NODE_LABEL,
    )  # fmt: skip
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["authentication"]["anonymous"] == {"enabled": False}
    assert config["authorization"] == {"mode": "Webhook"}
    assert config["readOnlyPort"] == 0
    assert config["containerRuntimeEndpoint"] == f"unix://{tmp_path / 'c.sock'}"
    assert config["registerWithTaints"] == [{"key": REAL_NODE_LABEL, "value": "true", "effect": "NoSchedule"}]
    # Pods ask the node's address for names (a test's Service DNS answers there, tests/e2e/node).
    assert (config["clusterDNS"], config["clusterDomain"]) == ([NODE_IP], "cluster.local")


def test_the_node_certificates_are_the_kubelets_identity_and_its_address(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki")
    (client_cert, _), (serving_cert, serving_key) = node_certs(pki, tmp_path / "node", NODE_NAME, NODE_IP)
    assert _subject(client_cert) == (f"system:node:{NODE_NAME}", "system:nodes")
    ca = x509.load_pem_x509_certificate(pki.ca_cert.read_bytes())
    serving = x509.load_pem_x509_certificate(serving_cert.read_bytes())
    serving.verify_directly_issued_by(ca)
    names = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == [NODE_IP]
    assert oct(serving_key.stat().st_mode & 0o777) == "0o600"
    # Made once: a second call keeps them.
    before = serving_cert.read_bytes()
    node_certs(pki, tmp_path / "node", NODE_NAME, NODE_IP)
    assert serving_cert.read_bytes() == before


def test_every_plane_reaches_kubelets_with_its_own_client_certificate(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki")
    assert _subject(pki.kubelet_client_cert) == ("kube-apiserver-kubelet-client", "system:masters")
    assert apiserver_kubelet_args(pki) == [
        f"--kubelet-client-certificate={pki.kubelet_client_cert}",
        f"--kubelet-client-key={pki.kubelet_client_key}",
        f"--kubelet-certificate-authority={pki.ca_cert}",
        "--kubelet-preferred-address-types=InternalIP",
    ]


def test_a_plane_made_before_keeps_its_ca_and_gains_the_kubelet_client(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path / "pki")
    ca_before = pki.ca_cert.read_bytes()
    pki.kubelet_client_cert.unlink()
    pki.kubelet_client_key.unlink()
    again = ensure_pki(tmp_path / "pki")
    assert again.complete()
    assert again.ca_cert.read_bytes() == ca_before
    assert _subject(again.kubelet_client_cert)[0] == "kube-apiserver-kubelet-client"


class _NoPlane:
    def __init__(self, bin_dir: Path) -> None:
        self.run_dir = bin_dir / "run"
        self.bin_dir = bin_dir


def test_a_missing_kubelet_is_refused_naming_how_to_build_it(tmp_path: Path) -> None:
    node = RealNode(_NoPlane(tmp_path), image_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(NodeError, match=r"kubelet missing: run hack/build-kube.sh --with-kubelet"):
        node.check()
