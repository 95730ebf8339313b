"""A real node for the local plane: Debian's containerd and the release's kubelet (`oasis cluster up --node`).

A test facility (docs/real-node.md): the chart's pods, their probes and the Job agent adapter run for real
on it, while the sandbox world stays on kwok's nodes. kwok leaves this node alone (it carries
REAL_NODE_LABEL, which kwok's selector excludes), and its taint keeps every pod without the matching
toleration, the twin's included, off it.

Everything lives under `<run dir>/node`: containerd's root, state and socket, the CNI configuration and
IP allocations, the kubelet's root directory, certificates and configuration. The machine-wide things it
makes are few and named here: the bridge BRIDGE (POD_SUBNET, its gateway NODE_IP is the node's address and
the kubelet's), the nat chain NAT_CHAIN, which sends the pods' connections to the `kubernetes` Service
(10.96.0.1:443; no kube-proxy runs) to the API server on 127.0.0.1 (the bridge's `route_localnet`), and
the kubelet's `/kubepods` cgroups. `stop` removes all of them, with every pod, process and mount. One real
node per machine: the bridge and chain names are fixed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from oasis_operator.localcluster import kubeconfigs
from oasis_operator.localcluster.components import REAL_NODE_LABEL, SERVICE_CIDR
from oasis_operator.localcluster.node_files import (
    cni_config,
    containerd_config,
    kubelet_config,
    read_image_list,
)
from oasis_operator.localcluster.node_host import (
    NodeError,
    remove_cgroups,
    remove_nat_chain,
    run,
    unmount_under,
)
from oasis_operator.localcluster.processes import tail, terminate
from oasis_operator.pki import Pki, node_certs

NODE_NAME = "oasis-node"
BRIDGE = "oasisnode0"
POD_SUBNET = "10.231.0.0/24"
NODE_IP = "10.231.0.1"
NAT_CHAIN = "OASIS-NODE"
KUBERNETES_SERVICE_IP = SERVICE_CIDR.split("/")[0].rsplit(".", 1)[0] + ".1"
PROCESSES = ("containerd", "kubelet")
CNI_BIN_DIR = Path("/usr/lib/cni")
CRI_NAMESPACE = "k8s.io"


class _PlaneState(Protocol):
    @property
    def api_port(self) -> int: ...


class _PlaneStatus(Protocol):
    @property
    def ready(self) -> bool: ...


class Plane(Protocol):
    """What the node needs of its control plane (control_plane.LocalControlPlane)."""

    run_dir: Path
    bin_dir: Path
    pki: Pki

    @property
    def kubeconfig(self) -> Path: ...

    def read_state(self) -> _PlaneState | None: ...

    def status(self) -> _PlaneStatus: ...

    def log_file(self, component: str) -> Path: ...

    def _alive(self, component: str, pid: int | None) -> bool: ...

    def _spawn(self, component: str, argv: list[str]) -> int: ...


@dataclass
class NodeState:
    kubelet_port: int
    pids: dict[str, int] = field(default_factory=dict)


class RealNode:
    """Start and stop the real node of the plane in `plane.run_dir`."""

    def __init__(self, plane: Plane, image_dir: Path | None = None) -> None:
        self.plane = plane
        self.root = plane.run_dir / "node"
        self.image_dir = image_dir or default_image_dir()

    # --- paths -------------------------------------------------------------------------------------
    @property
    def socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubelet.kubeconfig"

    def read_state(self) -> NodeState | None:
        try:
            return NodeState(**json.loads(self.state_file.read_text()))
        except (FileNotFoundError, ValueError):
            return None

    def _write_state(self, state: NodeState) -> None:
        self.state_file.write_text(json.dumps(asdict(state), indent=2, sort_keys=True))

    def running(self) -> dict[str, bool]:
        state = self.read_state()
        pids = state.pids if state else {}
        return {p: self.plane._alive(p, pids.get(p)) for p in PROCESSES}

    # --- start -------------------------------------------------------------------------------------
    def check(self) -> dict[str, Path]:
        """The binaries the node runs, or a NodeError naming how to get each missing one."""
        found: dict[str, Path] = {}
        kubelet = self.plane.bin_dir / "kubelet"
        if not os.access(kubelet, os.X_OK):
            raise NodeError(f"{kubelet} missing: run hack/build-kube.sh --with-kubelet")
        found["kubelet"] = kubelet
        for tool in ("containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip"):
            path = shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
            if path is None:
                raise NodeError(f"{tool} not found: run hack/install-deps.sh node (Debian containerd, runc)")
            found[tool] = Path(path)
        for plugin in ("bridge", "host-local", "loopback"):
            if not (CNI_BIN_DIR / plugin).is_file():
                raise NodeError(
                    f"{CNI_BIN_DIR / plugin} missing: run hack/install-deps.sh node "
                    "(Debian containernetworking-plugins)"
                )
        if not read_image_list(self.image_dir):
            raise NodeError(f"no images in {self.image_dir}: run hack/build-node-images.sh")
        return found

    def start(self, timeout: float = 120.0) -> None:
        """Start containerd and the kubelet, import the images and wait until the node is Ready."""
        if all(self.running().values()):
            return
        if any(self.running().values()) or self.read_state():
            self.stop()
        tools = self.check()
        plane_state = self.plane.read_state()
        if plane_state is None or not self.plane.status().ready:
            raise NodeError("the control plane is not running: start it first (oasis cluster up)")
        for sub in ("containerd", "cni/net.d", "cni/ipam", "kubelet", "pki"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        state = NodeState(kubelet_port=0)
        self._write_state(state)
        try:
            self._network(plane_state.api_port)
            state.kubelet_port = _free_port(NODE_IP)
            (self.root / "containerd" / "config.toml").write_text(
                containerd_config(self.root, self.socket, pause_image(self.image_dir), CNI_BIN_DIR)
            )
            (self.root / "cni" / "net.d" / "10-oasisnode.conflist").write_text(
                json.dumps(cni_config(BRIDGE, POD_SUBNET, NODE_IP, self.root / "cni" / "ipam"), indent=2)
            )
            state.pids["containerd"] = self.plane._spawn(
                "containerd",
                [str(tools["containerd"]), "--config", str(self.root / "containerd" / "config.toml")],
            )
            self._write_state(state)
            self._wait(lambda: self._ctr("version", check=False).returncode == 0, "containerd", 30)
            self._import_images()
            self._kubelet_files(state.kubelet_port)
            self._kubectl_apply(_node_binding())
            state.pids["kubelet"] = self.plane._spawn(
                "kubelet",
                [
                    str(tools["kubelet"]),
                    f"--config={self.root / 'kubelet' / 'config.yaml'}",
                    f"--kubeconfig={self.kubeconfig}",
                    f"--root-dir={self.root / 'kubelet'}",
                    f"--hostname-override={NODE_NAME}",
                    f"--node-ip={NODE_IP}",
                    f"--node-labels={REAL_NODE_LABEL}=true",
                    "--v=1",
                ],
            )
            self._write_state(state)
            self._wait(self.ready, "kubelet", timeout)
        except BaseException:
            self.stop()
            raise

    def _wait(self, check: Callable[[], bool], process: str, timeout: float) -> None:
        """Poll `check` until it holds; fail early, with the log's tail, if `process` died."""
        state = self.read_state()
        pid = state.pids.get(process) if state else None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            if not self.plane._alive(process, pid):
                log = self.plane.log_file(process)
                raise NodeError(f"{process} exited during start: see {log}\n{tail(log)}")
            time.sleep(0.5)
        log = self.plane.log_file(process)
        raise NodeError(f"{process} not ready after {timeout:.0f}s: see {log}\n{tail(log)}")

    def ready(self) -> bool:
        result = self._kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if result.returncode != 0:
            return False
        conditions = json.loads(result.stdout).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    def _network(self, api_port: int) -> None:
        """The bridge with the node's address, and the pods' way to the API server on 127.0.0.1."""
        if not Path(f"/sys/class/net/{BRIDGE}").exists():
            run("ip", "link", "add", BRIDGE, "type", "bridge")
        run("ip", "addr", "replace", f"{NODE_IP}/{POD_SUBNET.split('/')[1]}", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")
        # A packet from a pod to the Service address, rewritten to 127.0.0.1, is routed only if the bridge
        # may carry loopback addresses; the setting goes with the bridge.
        Path(f"/proc/sys/net/ipv4/conf/{BRIDGE}/route_localnet").write_text("1\n")
        remove_nat_chain(BRIDGE, NAT_CHAIN)
        run("iptables", "-w", "-t", "nat", "-N", NAT_CHAIN)
        run("iptables", "-w", "-t", "nat", "-A", NAT_CHAIN, "-d", f"{KUBERNETES_SERVICE_IP}/32", "-p", "tcp",
             "--dport", "443", "-j", "DNAT", "--to-destination", f"127.0.0.1:{api_port}")  # fmt: skip
        run("iptables", "-w", "-t", "nat", "-I", "PREROUTING", "-i", BRIDGE, "-j", NAT_CHAIN)

    def expose(self, port: int) -> None:
        """Let pods reach another server of this machine's 127.0.0.1 at `10.96.0.1:<port>` (e.g. a second
        local plane, a sandbox for the chart's operator on this node: its certificate names 10.96.0.1 too).
        Removed with the node's nat chain at `stop`."""
        run("iptables", "-w", "-t", "nat", "-A", NAT_CHAIN, "-d", f"{KUBERNETES_SERVICE_IP}/32", "-p", "tcp",
            "--dport", str(port), "-j", "DNAT", "--to-destination", f"127.0.0.1:{port}")  # fmt: skip

    def _import_images(self) -> None:
        # An OCI archive names its image by tag only (`org.opencontainers.image.ref.name`): ctr names it
        # <base name>:<tag>, which the list's reference is.
        for ref, tarball in read_image_list(self.image_dir):
            self._ctr("images", "import", "--base-name", ref.rsplit(":", 1)[0], str(tarball))
            if self._ctr("images", "ls", "-q", f"name=={ref}", check=False).stdout.strip() != ref:
                raise NodeError(f"{tarball} did not import as {ref}: is its tag {ref.rsplit(':', 1)[1]}?")

    def _kubelet_files(self, port: int) -> None:
        pki = self.plane.pki
        client, serving = node_certs(pki, self.root / "pki", NODE_NAME, NODE_IP)
        doc = kubeconfigs.kubeconfig_document(
            f"https://127.0.0.1:{self.plane.read_state().api_port}",  # type: ignore[union-attr]
            pki.ca_cert,
            client[0],
            client[1],
            f"system:node:{NODE_NAME}",
        )
        self.kubeconfig.write_text(yaml.safe_dump(doc, sort_keys=False))
        self.kubeconfig.chmod(0o600)
        config = kubelet_config(
            address=NODE_IP,
            port=port,
            ca=pki.ca_cert,
            serving=serving,
            runtime_socket=self.socket,
            taint_key=REAL_NODE_LABEL,
        )
        (self.root / "kubelet" / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    # --- stop --------------------------------------------------------------------------------------
    def stop(self, timeout: float = 60.0) -> list[str]:
        """Drain the node's pods, stop the kubelet and containerd, and remove everything they made."""
        state = self.read_state()
        if state is None and not self.root.exists():
            return []
        pids = state.pids if state else {}
        stopped = []
        api_up = self.plane.status().ready
        if api_up and self.plane._alive("kubelet", pids.get("kubelet")):
            self._drain(timeout)
        if self.plane._alive("kubelet", pids.get("kubelet")):
            terminate(pids["kubelet"], 20)
            stopped.append("kubelet")
        if api_up:
            self._kubectl("delete", "node", NODE_NAME, "--ignore-not-found", "--wait=false", check=False)
            self._kubectl(
                "delete", "clusterrolebinding", "oasis:real-node", "--ignore-not-found", check=False
            )
        if self.plane._alive("containerd", pids.get("containerd")):
            self._kill_containers()
            terminate(pids["containerd"], 20)
            stopped.append("containerd")
        self._kill_leftover_shims()
        unmount_under(self.root)
        remove_nat_chain(BRIDGE, NAT_CHAIN)
        if Path(f"/sys/class/net/{BRIDGE}").exists():
            run("ip", "link", "delete", BRIDGE, check=False)
        remove_cgroups("kubepods")
        if state is not None:
            state.pids = {}
            self._write_state(state)
        return stopped

    def _drain(self, timeout: float) -> None:
        """Cordon the node and delete its pods, so that the kubelet stops them (and CNI frees their
        network) while it still runs."""
        self._kubectl("cordon", NODE_NAME, check=False)
        on_node = ("--all-namespaces", f"--field-selector=spec.nodeName={NODE_NAME}")
        self._kubectl("delete", "pods", *on_node, "--grace-period=2", "--wait=false", check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            listed = self._kubectl("get", "pods", *on_node, "-o", "name", check=False)
            tasks = self._ctr("tasks", "ls", "-q", check=False)
            if not listed.stdout.strip() and not tasks.stdout.strip():
                return
            if listed.stdout.strip():  # a controller made new ones meanwhile (a DaemonSet's, a Job's)
                self._kubectl(
                    "delete", "pods", *on_node, "--grace-period=0", "--force", "--wait=false", check=False
                )
            time.sleep(1)

    def _kill_containers(self) -> None:
        """What the kubelet left running (it was killed, or the API was down): killed through containerd."""
        for task in self._ctr("tasks", "ls", "-q", check=False).stdout.split():
            self._ctr("tasks", "kill", "--signal", "SIGKILL", task, check=False)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self._ctr("tasks", "ls", "-q", check=False).stdout.strip():
            time.sleep(0.2)
        for task in self._ctr("tasks", "ls", "-q", check=False).stdout.split():
            self._ctr("tasks", "delete", "--force", task, check=False)

    def _kill_leftover_shims(self) -> None:
        """containerd's shims outlive containerd by design; those of this node name its socket."""
        address = str(self.socket).encode()
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"containerd-shim-runc-v2") and address in argv:
                terminate(int(proc.name), 5)

    # --- helpers -----------------------------------------------------------------------------------
    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run("ctr", "--address", str(self.socket), "--namespace", CRI_NAMESPACE, *args, check=check)

    def _kubectl(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(self.plane.bin_dir / "kubectl"), f"--kubeconfig={self.plane.kubeconfig}", *args]
        return run(*argv, check=check, stdin=stdin)

    def _kubectl_apply(self, doc: dict[str, Any]) -> None:
        self._kubectl("apply", "-f", "-", stdin=json.dumps(doc))


def default_image_dir() -> Path:
    """`$OASIS_NODE_IMAGES`, else `node-images` under `$OASIS_CACHE_ROOT` or /var/cache/oasis-operator
    (where hack/build-node-images.sh puts them)."""
    env = os.environ.get("OASIS_NODE_IMAGES")
    if env:
        return Path(env)
    return Path(os.environ.get("OASIS_CACHE_ROOT", "/var/cache/oasis-operator")) / "node-images"


def pause_image(image_dir: Path) -> str:
    for ref, _ in read_image_list(image_dir):
        if ref.rsplit(":", 1)[0].endswith("/pause"):
            return ref
    raise NodeError(f"no pause image listed in {image_dir}/images.list: run hack/build-node-images.sh")


def _node_binding() -> dict[str, Any]:
    """The kubelet's rights: the API server's bootstrap role system:node, bound to this node's user (the
    plane authorises by RBAC alone, without the Node authorizer)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "oasis:real-node"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": f"system:node:{NODE_NAME}"}
        ],
    }


def _free_port(address: str) -> int:
    """A port free on `address` for the kubelet's API (the kernel's choice, released at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])
