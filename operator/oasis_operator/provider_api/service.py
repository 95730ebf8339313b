"""The OASIS provider API's behaviour: the same sandbox, gateway, self-check and evidence as an evaluation.

- conformance: the live self-check (`preflight.self_check`) compared with the profile's contract.
- provision: the scenario is the profile's own (by `scenario_id`; the request's declared state must name
  the same resources); its environment is an `environments.session` like an evaluation's (twin built,
  door registered, stimuli armed, the twin's dynamics played every interval), without a window watch or
  an API-server audit: the runner observes through this API instead.
- The agent's door: the public runner hands the agent nothing from provisioning, so an agent reaches its
  environment through a *door*: a stable gateway credential (a kubeconfig with no environment in its
  path) known by its principal. Provisioning moves the door's token to the new environment; teardown
  revokes it. One door serves one environment at a time; a second provision for a busy door is refused.
- observe / state-snapshot answer from the gateway's record and live snapshots (`observations`).
- inject-state writes more declared state (`inject`) and grows the session's record and fixtures;
  teardown closes the session (everything removed, its report in the answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from oasis_operator import __version__
from oasis_operator.environments.conformance import CORE_SPEC_VERSIONS, SUPPORTED_TIER, find_gaps
from oasis_operator.environments.dynamics import Dynamics
from oasis_operator.environments.preflight import self_check
from oasis_operator.environments.session import (
    Environments,
    EnvironmentSession,
    ProviderFaultError,
    SessionOptions,
)
from oasis_operator.environments.stimuli import StimulusFactsError, stimulus_plan
from oasis_operator.gateway import Gateway
from oasis_operator.gateway.credentials import build_kubeconfig, endpoints_for, new_token
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.provider_api import observations
from oasis_operator.provider_api.inject import inject
from oasis_operator.provider_api.wire import (
    InjectBody,
    ObserveBody,
    ProvisionBody,
    SnapshotBody,
    WireError,
    oasis_state_entry,
    state_key,
)
from oasis_operator.sandbox.naming import new_environment_id
from oasis_operator.sandbox.provider import SandboxError, SandboxProvider

log = logging.getLogger(__name__)
PROVIDER_NAME = "oasis-operator"
EVALUATION_LABEL = "provider-api"
# What reading or removing a sandbox can raise when its API server fails.
SANDBOX_FAULTS = (ApiException, HTTPError, OSError, SandboxError)


@dataclass
class Door:
    """A stable credential an agent keeps across scenarios; it serves one environment at a time."""

    principal: str
    token: str
    env_id: str | None = None


@dataclass
class Provided:
    """One environment provisioned through the API, until its teardown."""

    session: EnvironmentSession
    door: Door


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ProviderService:
    """The provider API's state: its doors and the environments it provisioned."""

    def __init__(self, provider: SandboxProvider, gateway: Gateway, profile: Profile, api: ApiClient) -> None:
        self.provider = provider
        self.gateway = gateway
        self.profile = profile
        self.api = api
        # Every twin is played every interval: injected state changes it beside the gateway's record.
        self.sandboxes = Environments(provider, gateway)
        self.options = SessionOptions(watch_window=False, dynamics=Dynamics.EVERY_INTERVAL, audit=False)
        self.doors: dict[str, Door] = {}
        self.environments: dict[str, Provided] = {}
        self._lock = asyncio.Lock()

    # ---- doors ------------------------------------------------------------------------------------
    def open_door(self, principal: str, token: str | None = None) -> str:
        """A door for `principal`; returns its kubeconfig (the agent's only credential)."""
        if not principal or any(c.isspace() for c in principal):
            raise ValueError(f"door principal {principal!r}: give a name without spaces")
        door = self.doors.setdefault(principal, Door(principal=principal, token=token or new_token()))
        return build_kubeconfig(self.gateway.url, self.gateway.ca_cert, door.token, "default")

    def _door_for(self, principal: str) -> Door:
        if principal:
            door = self.doors.get(principal)
            if door is None:
                known = ", ".join(sorted(self.doors)) or "none"
                raise WireError(
                    400, "agent.principal", f"{principal!r} is no door of this provider ({known})"
                )
            return door
        if len(self.doors) == 1:
            return next(iter(self.doors.values()))
        raise WireError(
            400, "agent.principal", f"name the agent's door: this provider has {len(self.doors)} doors"
        )

    # ---- conformance ------------------------------------------------------------------------------
    async def conformance(self, profile_id: str) -> dict[str, Any]:
        """The §3.8.2 document for `profile_id`, backed by the live self-check."""
        contract = self.profile.conformance
        declared = await asyncio.to_thread(self_check, self.api, self.provider.prefix, True)
        unmet = []
        if profile_id != self.profile.identifier:
            unmet.append(
                {
                    "requirement": "profile",
                    "reason": f"this provider implements {self.profile.identifier}, not {profile_id}",
                }
            )
        if contract is not None:
            gaps = find_gaps(contract, declared, SUPPORTED_TIER)
            unmet += [{"requirement": g.key, "reason": g.describe()} for g in gaps]
        return {
            "provider": PROVIDER_NAME,
            "provider_version": __version__,
            "oasis_core_spec_versions": list(CORE_SPEC_VERSIONS),
            "profile": profile_id,
            "profile_version": self.profile.version,
            "supported": not unmet,
            "requirements": {key: d.value for key, d in declared.items()},
            "unmet_requirements": unmet,
        }

    # ---- provision --------------------------------------------------------------------------------
    def _scenario(self, body: ProvisionBody) -> Scenario:
        scenario = next((s for s in self.profile.scenarios if s.id == body.scenario_id), None)
        if scenario is None:
            raise WireError(
                404,
                "scenario_id",
                f"{body.scenario_id!r} is not a scenario of {self.profile.identifier} "
                f"{self.profile.version}; this provider builds the twins of its profile's scenarios",
            )
        if body.tier > SUPPORTED_TIER:
            raise WireError(422, "tier", f"tier {body.tier} is not supported (up to {SUPPORTED_TIER})")
        declared = [
            e.model_dump(mode="json", exclude_none=True) for e in scenario.preconditions.environment.state
        ]
        ours = {state_key(e) for e in declared}
        for index, raw in enumerate(body.environment.state):
            entry = oasis_state_entry(raw, f"environment.state[{index}]")
            if state_key(entry) not in ours:
                raise WireError(
                    422,
                    f"environment.state[{index}]",
                    f"{entry['resource']} is not declared by scenario {scenario.id} in this provider's "
                    "profile; provision the scenario as the profile declares it",
                )
        return scenario

    async def provision(self, body: ProvisionBody) -> dict[str, Any]:
        scenario = self._scenario(body)
        try:
            plan = stimulus_plan(scenario)
        except StimulusFactsError as exc:
            raise WireError(422, "scenario_id", str(exc)) from None
        async with self._lock:
            door = self._door_for(body.agent.principal)
            if door.env_id is not None:
                raise WireError(
                    409,
                    "agent.principal",
                    f"door {door.principal!r} serves environment {door.env_id}; tear it down first "
                    "(one scenario at a time per door)",
                )
            env_id = new_environment_id()
            door.env_id = env_id
        options = replace(self.options, token=door.token)
        try:
            session = await self.sandboxes.open(
                scenario, evaluation=EVALUATION_LABEL, plan=plan, options=options, env_id=env_id
            )
        except ProviderFaultError as exc:
            door.env_id = None
            raise WireError(503, "", f"the sandbox could not be built: {exc}") from None
        except BaseException:
            door.env_id = None
            raise
        env = session.record.environment
        self.environments[env.id] = Provided(session, door)
        endpoints = endpoints_for(self.gateway.url, env.tools)
        credentials = {"kubeconfig": self.open_door(door.principal), "principal": door.principal}
        credentials.update({f"endpoint.{k}": v for k, v in endpoints.items()})
        return {
            "environment_id": env.id,
            "agent_endpoint": self.gateway.url,
            "agent_credentials": credentials,
            "status": "ready",
        }

    def _provided(self, env_id: str) -> Provided:
        provided = self.environments.get(env_id)
        if provided is None:
            raise WireError(404, "environment_id", f"{env_id!r} is no environment of this provider")
        return provided

    # ---- observation ------------------------------------------------------------------------------
    async def snapshot(self, body: SnapshotBody) -> dict[str, Any]:
        provided = self._provided(body.environment_id)
        try:
            live = await provided.session.snapshot()
        except SANDBOX_FAULTS as exc:
            raise WireError(503, "", f"the sandbox could not be read: {exc}") from None
        chosen = []
        for index, wanted in enumerate(body.resources):
            params = {"kind": wanted.kind, "name": wanted.name, "namespace": wanted.namespace}
            try:
                chosen += [observations.wire_resource(s) for s in observations.select_resources(live, params)]
            except WireError as exc:
                raise WireError(exc.status, f"resources[{index}]", exc.problem) from None
        resources = chosen if body.resources else [observations.wire_resource(s) for s in live]
        return {"environment_id": body.environment_id, "timestamp": _now(), "resources": resources}

    async def observe(self, body: ObserveBody) -> dict[str, Any]:
        provided = self._provided(body.environment_id)
        env_id = body.environment_id
        out: dict[str, Any] = {
            "environment_id": env_id,
            "timestamp": _now(),
            "observation_type": body.observation_type,
        }
        if body.observation_type == "audit_log":
            record = provided.session.gateway_record()
            if not record.available:
                out["data"] = {"entries": [], "agent_principal": provided.door.principal}
                out["evidence_source"] = observations.source(
                    observations.GATEWAY_SOURCE, False, record.reason
                )
                return out
            out["data"] = observations.audit_log(record.entries, provided.door.principal, body.parameters)
            out["evidence_source"] = observations.source(observations.GATEWAY_SOURCE, True)
            return out
        try:
            live = await provided.session.snapshot()
        except SANDBOX_FAULTS as exc:
            out["data"] = {}
            out["evidence_source"] = observations.source(observations.KUBE_SOURCE, False, str(exc))
            return out
        if body.observation_type == "resource_state":
            out["data"] = observations.resource_state(live, body.parameters)
        else:
            out["data"] = observations.state_diff(provided.session.record.before, live, body.parameters)
        out["evidence_source"] = observations.source(observations.KUBE_SOURCE, True)
        return out

    # ---- state injection and teardown -------------------------------------------------------------
    async def inject_state(self, body: InjectBody) -> dict[str, Any]:
        provided = self._provided(body.environment_id)
        entries = [oasis_state_entry(e, f"state[{i}]") for i, e in enumerate(body.state)]
        session = provided.session
        parsed = session.record.parsed  # the state as last parsed: inject parses only what is new
        done = await session.apply(
            lambda provider: inject(provider, session.scenario, session.id, entries, parsed)
        )
        # What was injected is the baseline of later diffs, like what was provisioned.
        await session.grow(done.scenario, done.plan, done.fixtures, done.parsed)
        return {"status": "applied", "created": done.created, "patched": done.patched}

    async def teardown(self, env_id: str) -> dict[str, Any]:
        provided = self._provided(env_id)
        try:
            report = await provided.session.teardown()
        except SANDBOX_FAULTS as exc:
            raise WireError(503, "", f"teardown of {env_id} failed: {exc}") from None
        finally:
            if provided.door.env_id == env_id:
                provided.door.env_id = None
        del self.environments[env_id]
        if not report.complete:
            return {"status": "error", "error": f"left behind: {', '.join(report.remaining)}"}
        return {"status": "destroyed"}

    async def close(self) -> None:
        """Tear down every environment still provisioned (the server is stopping)."""
        for env_id in list(self.environments):
            with contextlib.suppress(Exception):
                await self.teardown(env_id)
