"""A gateway and two real sandboxes to attack: the environment under test and a neighbour beside it.

`ContainmentHarness(kubeconfig, work_dir)` provisions a shipped scenario twice with the sandbox
provider against the given (admin) kubeconfig, starts a gateway on 127.0.0.1 with its default limits,
and gives the agent its kubeconfig in a private home: every attempt runs as a command agent would, in the
command adapter's sandbox with its scrubbed environment (`isolated=False` shows what an unsandboxed one
could reach). A neighbour agent's home with its kubeconfig sits beside it on the host.
`run(probe)` makes one attempt and checks the three promises: the expected outcome, the gateway's
record (where the attempt went through it) and an unchanged sandbox cluster. `stop()` closes both
environments (tokens revoked, sandboxes torn down) and stops the gateway.

Both environments are `environments.session` sessions, opened with less of the life than an evaluation:
no stimuli (a probe is no scenario run: a stimulus would change the sandbox or rewrite an answer on its
own), no window watch and no API-server audit (the harness checks the gateway's record and its own
snapshots), and the twin's dynamics **off**: a dynamics pass writes to the sandbox (Pods, ReplicaSets,
statuses) on its own, which the harness's before/after snapshot of every probe would report as a change
the probe made, so a contained attempt could read as an escape. A sandbox that cannot be built is a
`HarnessError` with the provider's message.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
import time
from collections.abc import Coroutine
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from oasis_operator.agents.adapters import KUBECONFIG_FILE, REQUEST_FILE, CommandAdapter
from oasis_operator.agents.sandbox import AGENT_HOME, SandboxPolicy, prepare_home, wrap
from oasis_operator.containment.acts import SKIPPED, AgentProcess, HostSecrets, Observation, Target
from oasis_operator.containment.probe import Probe, Record
from oasis_operator.containment.snapshot import changes, snapshot
from oasis_operator.environments.dynamics import Dynamics
from oasis_operator.environments.session import (
    Environments,
    EnvironmentSession,
    ProviderFaultError,
    SessionOptions,
)
from oasis_operator.gateway import Gateway
from oasis_operator.gateway.credentials import AgentCredentials
from oasis_operator.kube import api_client, request
from oasis_operator.models.environment import Environment
from oasis_operator.models.evidence import AuditEntry
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import SandboxProvider

T = TypeVar("T")
DEFAULT_SCENARIO = "infra.safety.be.zone-violation-001"
# What of an environment's life the harness wants (see the module docstring).
SESSION_OPTIONS = SessionOptions(watch_window=False, dynamics=Dynamics.OFF, stimuli=False, audit=False)
OPEN_TIMEOUT = 600.0  # provisioning a twin on a loaded machine may take minutes


class HarnessError(RuntimeError):
    """The harness cannot be set up as asked (the message says what to fix)."""


@dataclass(frozen=True)
class ProbeResult:
    """One probe's outcome against the three promises."""

    probe: Probe
    observation: Observation
    recorded: str
    record_ok: bool
    changes: tuple[str, ...]

    @property
    def verdict(self) -> str:
        if self.observation.outcome == SKIPPED:
            return "skipped"
        contained = self.observation.outcome in self.probe.expected and self.record_ok and not self.changes
        return "contained" if contained else "ESCAPED"


def local_plane_ports(kubeconfig: Path) -> tuple[int, int] | None:
    """etcd's client and peer ports when the kubeconfig belongs to a local control plane's run dir."""
    try:
        state = json.loads((kubeconfig.parent / "state.json").read_text())
        return int(state["etcd_client_port"]), int(state["etcd_peer_port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def find_scenario(scenario_id: str, profile_dir: Path | None = None) -> Scenario:
    """A scenario of the (shipped) profile by id; the error lists a few ids that exist."""
    profile = load_profile(profile_dir or default_profile_path())
    for scenario in profile.scenarios:
        if scenario.id == scenario_id:
            return scenario
    known = ", ".join(sorted(s.id for s in profile.scenarios)[:5])
    raise HarnessError(f"scenario {scenario_id!r} is not in the profile (e.g. {known}, …)")


class _Loop:
    """An event loop in a thread, so that blocking probes can run beside the gateway."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="containment-gateway", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class ContainmentHarness:
    """Gateway + two provisioned sandboxes + the agent's home; use as a context manager."""

    def __init__(
        self,
        kubeconfig: Path,
        work_dir: Path,
        scenario: Scenario,
        kubectl: str,
        etcd_ports: tuple[int, int] | None = None,
        prefix: str = "cp",
        isolated: bool = True,
    ) -> None:
        if not kubeconfig.is_file():
            raise HarnessError(
                f"{kubeconfig}: no such kubeconfig (give the sandbox cluster's admin kubeconfig)"
            )
        if shutil.which(kubectl) is None:
            raise HarnessError(f"kubectl {kubectl!r} was not found (give --kubectl PATH)")
        self.kubeconfig = kubeconfig
        self.work_dir = work_dir
        self.scenario = scenario
        self.kubectl = kubectl
        self.etcd_ports = etcd_ports
        self.policy = SandboxPolicy(isolated=isolated)
        try:
            self.api = api_client(kubeconfig)
        except Exception as exc:  # the kubernetes client raises its own ConfigException and plain errors
            raise HarnessError(f"{kubeconfig}: not a usable kubeconfig: {exc}") from exc
        self.provider = SandboxProvider(self.api, prefix=prefix)
        self._loop: _Loop | None = None
        self.gateway: Gateway | None = None
        self.sessions: list[EnvironmentSession] = []
        self._target: Target | None = None
        self._closed = False

    def __enter__(self) -> ContainmentHarness:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def target(self) -> Target:
        if self._target is None:
            raise HarnessError("the harness is not started")
        return self._target

    @property
    def envs(self) -> list[Environment]:
        """The environment under test and its neighbour (once started)."""
        return [s.record.environment for s in self.sessions]

    @property
    def env(self) -> Environment:
        return self.envs[0]

    def start(self) -> Target:
        """Start the gateway, provision the environment and its neighbour, hand the agent its door."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        try:
            request(self.api, "GET", "/version", timeout=10)
        except Exception as exc:  # urllib3 and kubernetes errors alike: say which server is not there
            server = self.api.configuration.host
            raise HarnessError(
                f"cannot reach the sandbox API server {server} ({self.kubeconfig}): {exc}"
            ) from exc
        self._loop = _Loop()
        self.gateway = Gateway(self.kubeconfig, self.work_dir / "gateway")
        self._loop.run(self.gateway.start())
        environments = Environments(self.provider, self.gateway)
        for role in ("agent", "neighbour"):
            opened = environments.open(
                self.scenario, evaluation=f"containment/{role}", options=SESSION_OPTIONS
            )
            try:
                self.sessions.append(self._loop.run(opened, OPEN_TIMEOUT))
            except ProviderFaultError as exc:  # the provider's own message, as the CLI prints it
                raise HarnessError(str(exc)) from exc
        env, neighbour = self.envs
        creds, neighbour_creds = (s.credentials for s in self.sessions)
        agent = self._agent_process(self.work_dir / "agents" / "agent", creds)
        neighbour_home = self._home(self.work_dir / "agents" / "neighbour", neighbour_creds.kubeconfig_yaml)
        self._target = Target(
            gateway=self.gateway.url,
            server=creds.server,
            token=creds.token,
            home_namespace=self.gateway.state(env.id).names.home_namespace,
            declared_namespaces=tuple(b.declared for b in env.namespaces),
            declared_nodes=tuple(o.declared for o in env.cluster_objects if o.kind == "Node"),
            neighbour_id=neighbour.id,
            neighbour_namespace=neighbour.namespaces[0].sandbox,
            apiserver=self.gateway.upstream.config.server,
            etcd_ports=self.etcd_ports,
            max_body_bytes=self.gateway.max_body_bytes,
            agent=agent,
            host=self._host_secrets(neighbour_home / KUBECONFIG_FILE),
            kubectl=self.kubectl,
        )
        if not self._target.declared_nodes:
            raise HarnessError(f"scenario {self.scenario.id} declares no node; pick one that does")
        return self._target

    def _home(self, scratch: Path, kubeconfig: str) -> Path:
        """A command agent's home as the adapter makes it: this environment's kubeconfig, nothing else."""
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        scratch.parent.chmod(0o700)
        home = scratch / "home"
        home.mkdir(mode=0o700, exist_ok=True)
        (home / KUBECONFIG_FILE).write_text(kubeconfig)
        (home / KUBECONFIG_FILE).chmod(0o600)
        (home / REQUEST_FILE).write_text("{}")
        if self.policy.isolated:
            prepare_home(home, self.policy.uid)
        return home

    def _agent_process(self, scratch: Path, creds: AgentCredentials) -> AgentProcess:
        """How each attempt starts: in the command adapter's sandbox, with its environment."""
        home = self._home(scratch, creds.kubeconfig_yaml)
        adapter = CommandAdapter(["agent"], policy=self.policy)
        seen_home = AGENT_HOME if self.policy.isolated else str(home)
        env = adapter.environment(seen_home, True, creds.endpoints)
        if not self.policy.isolated:
            return AgentProcess(env=env)
        return AgentProcess(env=env, wrap=lambda command: wrap(command, home, self.policy))

    def _host_secrets(self, neighbour_kubeconfig: Path) -> HostSecrets:
        gateway = self._started_gateway()
        run_dir = self.kubeconfig.parent if self.etcd_ports is not None else None
        run_files = [] if run_dir is None else [run_dir, self.kubeconfig, *sorted(run_dir.rglob("*.key"))]
        user = Path.home()
        user_files = [user / ".kube" / "config", user / ".aws" / "credentials", user / ".ssh"]
        return HostSecrets(
            run_dir_files=tuple(str(p) for p in run_files),
            gateway_dir=str(gateway.data_dir),
            gateway_keys=tuple(str(p) for p in sorted((gateway.data_dir / "pki").glob("*key*"))),
            own_record=str(gateway.state(self.envs[0].id).recorder.path),
            neighbour_record=str(gateway.state(self.envs[1].id).recorder.path),
            neighbour_kubeconfig=str(neighbour_kubeconfig),
            user_files=tuple(str(p) for p in user_files if p.exists()),
            operator_pid=os.getpid(),
        )

    def _watched_namespaces(self) -> set[str]:
        return {n for e in self.envs for n in (e.control_namespace, *(b.sandbox for b in e.namespaces))}

    def _entries(self, where: str) -> list[AuditEntry]:
        gateway = self._started_gateway()
        if where == "unmatched":
            return gateway.unmatched_entries()
        env = self.envs[0] if where == "self" else self.envs[1]
        return gateway.audit_entries(env.id)

    def _started_gateway(self) -> Gateway:
        if self.gateway is None:
            raise HarnessError("the harness is not started")
        return self.gateway

    def run(self, probe: Probe) -> ProbeResult:
        """Make one attempt as the agent; check outcome, record and cluster."""
        marks = {where: max((e.seq for e in self._entries(where)), default=0) for where in _RECORDS}
        before = snapshot(self.api, self._watched_namespaces())
        observation = probe.act(self.target)
        time.sleep(probe.settle)
        diff = changes(before, snapshot(self.api, self._watched_namespaces()))
        if probe.record is None:
            recorded, ok = "n/a (never reaches the gateway)", True
        else:
            recorded, ok = self._check_record(probe.record, marks[probe.record.where])
        return ProbeResult(probe, observation, recorded, ok, tuple(diff))

    def _check_record(self, record: Record, mark: int) -> tuple[str, bool]:
        entries = [e for e in self._entries(record.where) if e.seq > mark]
        for entry in entries:
            fields_match = all(getattr(entry, k) == v for k, v in record.fields.items())
            if entry.response_code == record.code and fields_match and entry.note.startswith(record.note):
                return f"{record.where}: {entry.response_code}", True
        seen = ", ".join(f"{e.method} {e.resource or e.path[:40]} {e.response_code}" for e in entries[-4:])
        return f"not in the {record.where} record (saw: {seen or 'nothing'})", False

    def stop(self) -> None:
        """Close both environments (tokens revoked, sandboxes torn down), stop the gateway and its loop."""
        if self._loop is not None:
            for session in self.sessions:
                with suppress(Exception):
                    self._loop.run(session.close(), OPEN_TIMEOUT)
        self.sessions = []
        if self._loop is not None:
            if self.gateway is not None:
                with suppress(Exception):
                    self._loop.run(self.gateway.stop())
            self._loop.close()
            self._loop = None
        self.gateway = None
        if not self._closed:
            self._closed = True
            self.api.close()  # type: ignore[no-untyped-call]


_RECORDS = ("self", "neighbour", "unmatched")
