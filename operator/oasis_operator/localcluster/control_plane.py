"""A local Kubernetes control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.

The release is the one pinned in `release.env` (see `release.py`), built by hack/build-kube.sh.

The controller manager runs the standard controllers and the scheduler places pods with resource fit, as
on any cluster; kwok plays the kubelet of every Node the twin declares, moving nodes and pods through the
Stages the API server holds (`sandbox.kwok`), so no container ever runs here. Everything listens on
127.0.0.1; every file (certificates, etcd data, audit log, kubeconfig, logs,
PIDs) lives in one run directory, and `stop` kills only the processes recorded there. The ports are
kept there too: a plane stopped and started again listens where it did, so kubeconfigs handed out (and an
operator already connected) stay valid.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from oasis_operator.localcluster import kubeconfigs
from oasis_operator.localcluster.audit import audit_policy
from oasis_operator.localcluster.components import (
    apiserver_args,
    apiserver_kubelet_args,
    controller_manager_args,
    etcd_args,
    kwok_args,
    scheduler_args,
)
from oasis_operator.localcluster.kwok import ensure_stage_crd
from oasis_operator.localcluster.node import RealNode
from oasis_operator.localcluster.processes import tail, terminate
from oasis_operator.localcluster.release import Release, ReleaseError, default_bin_dir, selected
from oasis_operator.pki import Pki, ensure_pki

logger = logging.getLogger(__name__)

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Started on request after the plane (`localcluster.kueue`), stopped first with it.
OPTIONAL_COMPONENTS = ("kueue",)


class ControlPlaneError(RuntimeError):
    """The control plane could not be started, or a binary it needs is missing."""


@dataclass
class ClusterState:
    """What `start` recorded: ports and the PIDs of the processes it started."""

    api_port: int
    etcd_client_port: int
    etcd_peer_port: int
    pids: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ComponentStatus:
    name: str
    pid: int | None
    running: bool


@dataclass(frozen=True)
class ClusterStatus:
    run_dir: Path
    components: tuple[ComponentStatus, ...]
    ready: bool
    server: str | None

    @property
    def running(self) -> bool:
        return all(c.running for c in self.components)


def default_run_dir() -> Path:
    """`$OASIS_RUN_DIR`, else the XDG state directory."""
    env = os.environ.get("OASIS_RUN_DIR")
    if env:
        return Path(env)
    state_home = Path(os.environ.get("XDG_STATE_HOME", Path.home() / ".local" / "state"))
    return state_home / "oasis-operator" / "cluster"


class LocalControlPlane:
    """Start, stop and inspect the control plane that lives in `run_dir`."""

    def __init__(
        self,
        run_dir: Path | None = None,
        bin_dir: Path | None = None,
        release: Release | None = None,
        *,
        die_with_parent: bool = False,
    ) -> None:
        """`die_with_parent`: the components are killed when the process that started them dies, even
        by SIGKILL (Linux parent-death signal, set by util-linux `setpriv` before it execs the component):
        for a test session's plane, which must not outlive a killed pytest. Off for `oasis cluster up`,
        whose plane outlives the command by design."""
        self.die_with_parent = die_with_parent
        self.run_dir = (run_dir or default_run_dir()).resolve()
        try:
            self.release = release or selected()
        except ReleaseError as exc:
            raise ControlPlaneError(str(exc)) from exc
        self.bin_dir = bin_dir or default_bin_dir()
        self.pki = Pki(self.run_dir / "pki")
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    # --- paths -------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        """The operator's admin kubeconfig (`local-admin`)."""
        return self.run_dir / kubeconfigs.ADMIN

    @property
    def gateway_kubeconfig(self) -> Path:
        """The agent gateway's own kubeconfig (`oasis:gateway`), beside the admin one."""
        return self.run_dir / kubeconfigs.GATEWAY

    @property
    def audit_log(self) -> Path:
        return self.run_dir / "audit.log"

    @property
    def _policy_file(self) -> Path:
        return self.run_dir / "audit-policy.yaml"

    @property
    def state_file(self) -> Path:
        return self.run_dir / "state.json"

    def log_file(self, component: str) -> Path:
        return self.run_dir / "logs" / f"{component}.log"

    def binary(self, component: str) -> Path:
        path = self.bin_dir / component
        if not os.access(path, os.X_OK):
            raise ControlPlaneError(
                f"{path} missing: run hack/install-deps.sh (hack/build-kube.sh builds Kubernetes "
                f"{self.release.kubernetes}), or set OASIS_KUBE_BIN_DIR"
            )
        return path

    # --- state -------------------------------------------------------------------------------------
    def read_state(self) -> ClusterState | None:
        try:
            data = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        return ClusterState(**data)

    def _write_state(self, state: ClusterState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(state), indent=2, sort_keys=True))
        tmp.replace(self.state_file)

    def _alive(self, component: str, pid: int | None) -> bool:
        """True if `pid` runs and is the component we started (guards against recycled PIDs)."""
        if not pid:
            return False
        child = self._children.get(component)
        if child is not None and child.pid == pid:
            # Started by this object: right after fork the child may not have exec'd yet, so its
            # cmdline is still ours; ask the Popen instead.
            return child.poll() is None
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return False
        if stat.rsplit(")", 1)[-1].split()[0] == "Z":
            return False
        if component in OPTIONAL_COMPONENTS:  # run inside a wrapper (bwrap): its binary is an argument
            return any(Path(arg.decode(errors="replace")).name == component for arg in argv)
        return Path(argv[0].decode()).name == component

    # --- lifecycle ---------------------------------------------------------------------------------
    def status(self) -> ClusterStatus:
        state = self.read_state()
        pids = state.pids if state else {}
        components = tuple(ComponentStatus(c, pids.get(c), self._alive(c, pids.get(c))) for c in COMPONENTS)
        server = f"https://127.0.0.1:{state.api_port}" if state else None
        ready = bool(state) and components[1].running and self._readyz(state.api_port)  # type: ignore[union-attr]
        return ClusterStatus(self.run_dir, components, ready, server)

    def start(self, timeout: float = 90.0) -> ClusterStatus:
        """Start every component that is not already running; idempotent."""
        current = self.status()
        state = self.read_state()
        if current.running and current.ready and state is not None:
            # A plane started before the gateway had its own identity gets it now (same CA, so the
            # running API server accepts it; the policy follows at its next start).
            if not self.gateway_kubeconfig.is_file():
                ensure_pki(self.pki.root)
                kubeconfigs.write_kubeconfigs(self.run_dir, self.pki, state.api_port)
            return current
        if any(c.running for c in current.components):
            self.stop()
        binaries = {c: self.binary(c) for c in sorted(COMPONENTS, key=lambda c: c == "etcd")}
        for sub in ("logs", "etcd"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        self.run_dir.chmod(0o700)
        ensure_pki(self.pki.root)
        self._policy_file.write_text(yaml.safe_dump(audit_policy(), sort_keys=False))
        previous = self.read_state()
        api, client, peer = choose_ports(
            [previous.api_port, previous.etcd_client_port, previous.etcd_peer_port] if previous else []
        )
        state = ClusterState(api_port=api, etcd_client_port=client, etcd_peer_port=peer)
        kubeconfigs.write_kubeconfigs(self.run_dir, self.pki, state.api_port)
        cm_kubeconfig = self.run_dir / kubeconfigs.CONTROLLER_MANAGER
        try:
            etcd = etcd_args(self.pki, self.run_dir / "etcd", state.etcd_client_port, state.etcd_peer_port)
            state.pids["etcd"] = self._spawn("etcd", [str(binaries["etcd"]), *etcd])
            self._write_state(state)
            self._wait(lambda: _port_open(state.etcd_client_port), "etcd", timeout)
            api_args = apiserver_args(
                self.pki, state.etcd_client_port, state.api_port, self._policy_file, self.audit_log
            ) + apiserver_kubelet_args(self.pki)
            state.pids["kube-apiserver"] = self._spawn(
                "kube-apiserver", [str(binaries["kube-apiserver"]), *api_args]
            )
            self._write_state(state)
            self._wait(lambda: self._readyz(state.api_port), "kube-apiserver", timeout)
            cm_args = controller_manager_args(self.pki, cm_kubeconfig)
            state.pids["kube-controller-manager"] = self._spawn(
                "kube-controller-manager", [str(binaries["kube-controller-manager"]), *cm_args]
            )
            self._write_state(state)
            state.pids["kube-scheduler"] = self._spawn(
                "kube-scheduler",
                [str(binaries["kube-scheduler"]), *scheduler_args(self.run_dir / kubeconfigs.SCHEDULER)],
            )
            self._write_state(state)
            # kwok reads its Stages from the API server: their CRD first.
            ensure_stage_crd(self.kubeconfig)
            state.pids["kwok"] = self._spawn(
                "kwok", [str(binaries["kwok"]), *kwok_args(self.run_dir / kubeconfigs.KWOK)]
            )
            self._write_state(state)
        except BaseException:
            self.stop()
            raise
        return self.status()

    def stop(self, timeout: float = 20.0) -> list[str]:
        """Terminate the recorded processes (kwok first, etcd last); returns what stopped."""
        state = self.read_state()
        if state is None:
            return []
        stopped = []
        if (self.run_dir / "node").is_dir():  # a real node (`up --node`) goes first, while the API serves
            stopped += RealNode(self).stop()
        for component in (*OPTIONAL_COMPONENTS, *reversed(COMPONENTS)):
            pid = state.pids.get(component)
            if pid and self._alive(component, pid):
                # An optional component runs inside a wrapper: its whole process group goes.
                terminate(pid, timeout, group=component in OPTIONAL_COMPONENTS)
                stopped.append(component)
            self._children.pop(component, None)
        state.pids = {}
        self._write_state(state)
        return stopped

    def purge(self) -> None:
        """Stop and delete the run directory (certificates, etcd data, audit log)."""
        self.stop()
        if self.run_dir.exists():
            shutil.rmtree(self.run_dir)

    def add_component(self, component: str, argv: list[str]) -> int:
        """Start one of OPTIONAL_COMPONENTS beside the running plane; `stop` stops it first."""
        state = self.read_state()
        if state is None or component not in OPTIONAL_COMPONENTS:
            raise ControlPlaneError(f"{component}: start the plane first, and name an optional component")
        state.pids[component] = self._spawn(component, argv)
        self._write_state(state)
        return state.pids[component]

    def component_alive(self, component: str) -> bool:
        """The recorded process of `component` runs."""
        state = self.read_state()
        return self._alive(component, state.pids.get(component) if state else None)

    # --- helpers -----------------------------------------------------------------------------------
    def _spawn(self, component: str, argv: list[str]) -> int:
        if self.die_with_parent:
            setpriv = shutil.which("setpriv")
            if setpriv is None:  # util-linux is essential on Debian; elsewhere the plane may outlive us
                logger.warning("setpriv (util-linux) not on PATH: %s will outlive a killed parent", component)
            else:
                argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
        log = self.log_file(component).open("ab")
        try:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.run_dir,
                start_new_session=True,  # outlives the `oasis cluster up` that started it
            )
        finally:
            log.close()
        self._children[component] = proc
        return proc.pid

    def _wait(self, check: Callable[[], bool], component: str, timeout: float) -> None:
        """Poll `check` until it holds; fail early, with the log's tail, if the component died."""
        deadline = time.monotonic() + timeout
        state = self.read_state()
        pid = state.pids.get(component) if state else None
        while time.monotonic() < deadline:
            if check():
                return
            if not self._alive(component, pid):
                raise ControlPlaneError(
                    f"{component} exited during start: see {self.log_file(component)}\n"
                    + tail(self.log_file(component))
                )
            time.sleep(0.2)
        raise ControlPlaneError(f"{component} not ready after {timeout:.0f}s: see {self.log_file(component)}")

    def _readyz(self, port: int) -> bool:
        if not all(f.is_file() for f in (self.pki.ca_cert, self.pki.admin_cert, self.pki.admin_key)):
            return False
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError, ssl.SSLError):
            return False


def choose_ports(preferred: list[int], count: int = 3) -> list[int]:
    """`count` distinct ports on 127.0.0.1: each preferred one that is free, else a new free one.

    The probe binds with SO_REUSEADDR, as etcd and kube-apiserver (Go) do: a port whose last connections
    are still in TIME_WAIT after `down` is free for them, and so it is for the probe. A port another
    process listens on is not, and gets replaced. The probes stay bound until all are chosen, so the
    kernel never hands out one port twice.
    """
    wanted = list(preferred[:count]) + [0] * max(0, count - len(preferred))
    probes: list[socket.socket] = []
    try:
        # extend() appends as the generator yields, so `finally` closes every probe bound before a failure.
        probes.extend(_bind_probe(port) or _bind_probe(0) or _no_port() for port in wanted)
        return [int(s.getsockname()[1]) for s in probes]
    finally:
        for sock in probes:
            sock.close()


def _bind_probe(port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(1)  # a listening socket: a second probe for the same port fails, as a server would
    except OSError:
        sock.close()
        return None
    return sock


def _no_port() -> socket.socket:
    raise ControlPlaneError("no free port on 127.0.0.1")


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
