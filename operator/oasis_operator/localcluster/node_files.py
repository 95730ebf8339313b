"""The configuration files of the real node (`node.py`): pure functions of its paths and addresses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

IMAGE_LIST = "images.list"


def read_image_list(image_dir: Path) -> list[tuple[str, Path]]:
    """The images hack/build-node-images.sh put in `image_dir`: `<reference> <OCI archive>` per line of
    images.list, the archive relative to the directory. Missing list: none."""
    try:
        text = (image_dir / IMAGE_LIST).read_text()
    except FileNotFoundError:
        return []
    images = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ref, _, archive = line.partition(" ")
        if ":" not in ref.rsplit("/", 1)[-1] or not archive.strip():
            raise ValueError(f"{image_dir / IMAGE_LIST}: {line!r} is not `<name>:<tag> <archive>`")
        images.append((ref, image_dir / archive.strip()))
    return images


def containerd_config(root: Path, socket: Path, pause_image: str, cni_bin_dir: Path) -> str:
    """containerd 1.6 (config version 2) with everything under `root`: its own root, state and socket, the
    CRI plugin with the node's CNI network and the local pause image, runc with cgroupfs (the kubelet's
    driver). `restrict_oom_score_adj`: containerd may run with an OOM score it cannot lower below."""
    return f"""version = 2
root = "{root / "containerd" / "root"}"
state = "{root / "containerd" / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "containerd" / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause_image}"
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin_dir}"
    conf_dir = "{root / "cni" / "net.d"}"
"""


def cni_config(bridge: str, subnet: str, gateway: str, ipam_dir: Path) -> dict[str, Any]:
    """One bridge network: each pod a veth on `bridge`, an address of `subnet` (host-local allocations kept
    under the run directory), `gateway` (the node's address) its default route. No masquerade: pods talk
    to this machine only. The bridge plugin enforces no NetworkPolicy."""
    return {
        "cniVersion": "1.0.0",
        "name": bridge,
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(ipam_dir),
                },
            }
        ],
    }


def kubelet_config(
    *, address: str, port: int, ca: Path, serving: tuple[Path, Path], runtime_socket: Path, taint_key: str
) -> dict[str, Any]:
    """The kubelet's KubeletConfiguration: x509 and webhook authentication and authorisation (the API
    server's kubelet-client certificate is signed by `ca`), its API on `address:port` only, cgroupfs on
    this machine's cgroup v1 (`failCgroupV1: false`: refused otherwise since 1.35), no swap check, the
    node registered with the real-node taint, eviction only when nearly full (a shared test machine).
    Pods of the default DNS policy (ClusterFirst) ask `address` for names, under the domain cluster.local:
    no cluster DNS runs there unless a test serves one (tests/e2e/node/service_dns.py answers Service
    names with their ready endpoints, in place of CoreDNS and kube-proxy); else a lookup is refused at
    once (nothing listens on the node's port 53) and names resolve as before, i.e. not at all."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": address,
        "port": port,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(serving[0]),
        "tlsPrivateKeyFile": str(serving[1]),
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{runtime_socket}",
        "registerWithTaints": [{"key": taint_key, "value": "true", "effect": "NoSchedule"}],
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 30,
        "resolvConf": "/etc/resolv.conf",
        "clusterDNS": [address],
        "clusterDomain": "cluster.local",
        "serializeImagePulls": False,
        "shutdownGracePeriod": "0s",
    }
