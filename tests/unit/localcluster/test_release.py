"""The pinned release: one source of versions for the build, the local control plane and the chart."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from oasis_operator.localcluster.components import (
    apiserver_args,
    controller_manager_args,
    kwok_args,
    scheduler_args,
)
from oasis_operator.localcluster.control_plane import ControlPlaneError, LocalControlPlane, choose_ports
from oasis_operator.localcluster.release import (
    CURRENT,
    ReleaseError,
    default_bin_dir,
    kueue_dir,
    kueue_version,
    pinned,
    read_pins,
    selected,
)
from oasis_operator.sandbox.twin.infra import KUBELET_VERSION
from tests.unit.chart.chart_render import find, render

REPO = Path(__file__).resolve().parents[3]


def test_pins_are_versions_and_current() -> None:
    release = pinned()
    assert re.fullmatch(r"v1\.\d+\.\d+", release.kubernetes)
    assert re.fullmatch(r"v3\.\d+\.\d+", release.etcd)
    assert release.minor >= 34


def test_build_script_reads_the_same_pins() -> None:
    script = (REPO / "hack" / "build-kube.sh").read_text()
    assert ". operator/oasis_operator/localcluster/release.env" in script
    assert set(read_pins()) == {"KUBE_VERSION", "ETCD_VERSION", "KWOK_VERSION", "KUEUE_VERSION"}
    assert "sigs.k8s.io/kwok/cmd/kwok" in script
    assert "kube-scheduler" in script


def test_kueue_build_script_reads_the_pin_and_the_plane_finds_its_cache() -> None:
    script = (REPO / "hack" / "build-kueue.sh").read_text()
    assert ". operator/oasis_operator/localcluster/release.env" in script
    assert "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" in script
    assert re.fullmatch(r"v0\.\d+\.\d+", kueue_version())
    assert kueue_dir().name == "kueue-" + kueue_version().removeprefix("v")


def test_chart_sandbox_images_are_the_pinned_release() -> None:
    release = pinned()
    objects = render(namespace="oasis-system")
    pods = [
        find(objects, kind, suffix)["spec"]["template"]["spec"]
        for kind, suffix in (
            ("StatefulSet", "-sandbox-etcd"),
            ("Deployment", "-sandbox-apiserver"),
            ("Deployment", "-sandbox-controller-manager"),
            ("Deployment", "-sandbox-scheduler"),
            ("Deployment", "-sandbox-kwok"),
        )
    ]
    images = {
        c["name"]: c["image"] for pod in pods for c in pod["containers"] + pod.get("initContainers", [])
    }
    k8s = release.kubernetes
    assert images == {
        "etcd": f"registry.k8s.io/etcd:{release.etcd.removeprefix('v')}-0",
        "kube-apiserver": f"registry.k8s.io/kube-apiserver:{k8s}",
        "kube-controller-manager": f"registry.k8s.io/kube-controller-manager:{k8s}",
        "kube-scheduler": f"registry.k8s.io/kube-scheduler:{k8s}",
        "kwok": f"registry.k8s.io/kwok/kwok:{read_pins()['KWOK_VERSION']}",
        # The init containers that apply kwok's Stage CRD: the release's kubectl.
        "stage-crd": f"registry.k8s.io/kubectl:{k8s}",
        "stage-crd-established": f"registry.k8s.io/kubectl:{k8s}",
    }


def test_twin_nodes_run_the_pinned_release() -> None:
    assert pinned().kubernetes == KUBELET_VERSION


def test_selection_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OASIS_KUBE_CACHE", raising=False)
    monkeypatch.delenv("OASIS_CACHE_ROOT", raising=False)
    monkeypatch.delenv("OASIS_KUBE_BIN_DIR", raising=False)
    monkeypatch.delenv("OASIS_KUBE_VERSION", raising=False)
    current = pinned()
    assert selected() == current  # unset: the pinned release
    for name in (CURRENT, current.kubernetes, current.kubernetes[1:], "  "):
        monkeypatch.setenv("OASIS_KUBE_VERSION", name)
        assert selected() == current
        assert default_bin_dir() == Path(f"/var/cache/oasis-operator/kube-{current.kubernetes[1:]}/bin")
    # The 1.20 plane is gone: asking for it is refused, naming what is built.
    monkeypatch.setenv("OASIS_KUBE_VERSION", "1.20")
    with pytest.raises(ReleaseError, match=rf"'1.20' is not built.*{CURRENT} or {current.kubernetes[1:]}"):
        selected()
    monkeypatch.setenv("OASIS_KUBE_VERSION", CURRENT)
    monkeypatch.setenv("OASIS_KUBE_CACHE", "/opt/kube")
    assert default_bin_dir() == Path("/opt/kube/bin")
    monkeypatch.setenv("OASIS_KUBE_BIN_DIR", "/opt/bin")
    assert default_bin_dir() == Path("/opt/bin")
    monkeypatch.setenv("OASIS_KUBE_VERSION", "1.29")
    with pytest.raises(ReleaseError, match=r"OASIS_KUBE_VERSION='1.29' is not built by this project"):
        selected()


def test_flags_of_the_current_release(tmp_path: Path) -> None:
    current = LocalControlPlane(run_dir=tmp_path / "a", bin_dir=tmp_path, release=pinned())
    api_args = apiserver_args(current.pki, 2, 1, tmp_path / "policy.yaml", tmp_path / "audit.log")
    assert "--secure-port=1" in api_args
    assert not any(a.startswith("--insecure-port") for a in api_args)  # removed in 1.24
    # Each environment's pods stay on its own nodes (namespace annotations read by these plugins).
    assert "--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction" in api_args
    assert not any(a.startswith("--disable-admission-plugins") for a in api_args)
    cm_current = controller_manager_args(current.pki, tmp_path / "kc")
    assert "--secure-port=0" in cm_current
    assert not any(a.startswith("--port") for a in cm_current)  # removed in 1.24
    # The standard controllers, less the autoscaler (no metrics API in the sandbox).
    assert "--controllers=*,-horizontal-pod-autoscaler-controller" in cm_current
    assert "--leader-elect=false" in scheduler_args(tmp_path / "kc")
    kwok = kwok_args(tmp_path / "kc")
    assert "--enable-crds=Stage" in kwok
    # kwok plays every node but a real one (a kubelet of `oasis cluster up --node`).
    assert "--manage-all-nodes=false" in kwok
    assert "--manage-nodes-with-label-selector=!oasis.evaluation.dev/real-node" in kwok
    assert not any(a.startswith("--server-address") for a in kwok)  # no kubelet API: no exec, no logs
    # etcd comes from the release's cache (built with it), not from PATH.
    with pytest.raises(ControlPlaneError, match=r"etcd missing: run hack/install-deps.sh"):
        current.binary("etcd")


def test_choose_ports_keeps_free_preferred_ports_and_replaces_taken_ones() -> None:
    first = choose_ports([])
    assert len(set(first)) == 3
    assert choose_ports(first) == first
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", first[1]))
        taken.listen(1)
        again = choose_ports(first)
    assert again[0] == first[0]
    assert again[2] == first[2]
    assert again[1] != first[1]
    assert len(set(again)) == 3


def _time_wait_port() -> int:
    """A port whose server side closed first: its accepted connection is left in TIME_WAIT.

    The listener sets SO_REUSEADDR as Go's net package does for etcd and kube-apiserver.
    """
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = int(listener.getsockname()[1])
        client = socket.create_connection(("127.0.0.1", port))
        served, _ = listener.accept()
        served.close()  # the server closes first, as kube-apiserver does at shutdown
        client.recv(1)
        client.close()
    return port


def test_a_port_in_time_wait_is_chosen_again() -> None:
    port = _time_wait_port()
    with socket.socket() as plain, pytest.raises(OSError, match="Address already in use"):
        plain.bind(("127.0.0.1", port))  # what the old probe did: the port looked taken
    assert choose_ports([port, 0, 0])[0] == port


def test_the_kube_cache_follows_the_cache_root_as_build_kube_does(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OASIS_KUBE_CACHE", "OASIS_KUBE_BIN_DIR", "OASIS_KUBE_VERSION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OASIS_CACHE_ROOT", "/opt/cold-cache")
    version = pinned().kubernetes[1:]
    assert default_bin_dir() == Path(f"/opt/cold-cache/kube-{version}/bin")
    script = (REPO / "hack" / "build-kube.sh").read_text()
    assert (
        'CACHE_DIR="${OASIS_KUBE_CACHE:-${OASIS_CACHE_ROOT:-/var/cache/oasis-operator}/kube-${KUBE_VERSION#v}}"'
        in script
    )
