"""The operator's settings: every flag and environment variable it reads, in one model, validated at start.

`oasis operator` reads them once (`from_env`, its flags given as `flags` under their variable's name:
a flag and its variable are one setting, the flag wins) and hands the model to the operator's start-up
handlers (kopf's memo); the chart sets the variables directly. From there the parts receive values (an
`OperatorConfig`, a uid, a profile directory), never the environment. A bad value stops the operator at
start with a message that names the variable and says what it takes, instead of surfacing later inside
a run. An empty variable counts as unset.

Not the operator's settings, and so not here: the local control plane's variables (`OASIS_RUN_DIR`,
`OASIS_KUBE_*`, `localcluster/release.py`), read by `oasis cluster` and the test harness, and the
process environment of the reference agents (`agents/reference/*`) and of a command agent inside its
sandbox (`OASIS_MODE`, `OASIS_REQUEST`, `OASIS_KUBECTL`, `OASIS_ENDPOINT_*`): those are separate
programs with environments of their own.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

# Where the chart mounts the audit webhook's serving certificate, key and client CA.
DEFAULT_AUDIT_WEBHOOK_TLS_DIR = Path("/etc/oasis/audit-webhook")

# Which command agents (`spec.agent.command`) the operator runs: none, only those in the bubblewrap
# sandbox, or also those that opt out of it (`isolation: none`, which runs as the operator's own user).
CommandAgents = Literal["disabled", "sandboxed", "unsandboxed"]
# The setting and the chart value that turn command agents on; every refusal names both.
COMMAND_AGENTS_VARIABLE = "OASIS_COMMAND_AGENTS"
COMMAND_AGENTS_CHART_VALUE = "tenancy.commandAgents"
# A Kubernetes resource quantity (`500m`, `2`, `1Gi`, `1.5G`): what the API server accepts in requests.
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"


class SettingsError(ValueError):
    """A variable has a value the operator cannot use; the message names it and what it takes."""


class OperatorSettings(BaseModel):
    """Every variable of the operator process; field aliases are the variable names."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    kubeconfig: str = Field("", alias="KUBECONFIG", description="the cluster the operator watches")
    sandbox_kubeconfig: Path | None = Field(None, alias="OASIS_SANDBOX_KUBECONFIG")
    sandbox_prefix: str = Field(
        "sbx", alias="OASIS_SANDBOX_PREFIX", pattern=r"^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$"
    )
    sandbox_audit_log: str = Field("", alias="OASIS_SANDBOX_AUDIT_LOG")
    # The gateway's own credentials for the sandbox cluster (the chart's sandbox control plane); unset:
    # `gateway.kubeconfig` beside the sandbox kubeconfig (the local plane's), else the sandbox kubeconfig.
    gateway_kubeconfig: Path | None = Field(None, alias="OASIS_GATEWAY_KUBECONFIG")
    gateway_host: str = Field("127.0.0.1", alias="OASIS_GATEWAY_HOST")
    gateway_port: int = Field(0, alias="OASIS_GATEWAY_PORT", ge=0, le=65535)
    gateway_url: str | None = Field(None, alias="OASIS_GATEWAY_URL", pattern=r"^https?://")
    # Gateway TLS (gateway/tls.py): a mounted kubernetes.io/tls Secret, else the operator's own CA naming
    # the Service (name, namespace) and the further hosts (comma-separated: Ingress host, advertised URL).
    gateway_tls_dir: Path | None = Field(None, alias="OASIS_GATEWAY_TLS_DIR")
    gateway_service: str | None = Field(None, alias="OASIS_GATEWAY_SERVICE")
    gateway_namespace: str | None = Field(None, alias="OASIS_GATEWAY_NAMESPACE")
    gateway_hosts: str = Field("", alias="OASIS_GATEWAY_HOSTS")
    data_dir: Path = Field(
        default_factory=lambda: Path(tempfile.gettempdir()) / "oasis-operator", alias="OASIS_DATA_DIR"
    )
    max_evaluations: int = Field(4, alias="OASIS_MAX_EVALUATIONS", ge=1)
    # What one scenario slot (`spec.parallelism` of them) asks of a Kueue quota, for evaluations labelled
    # `kueue.x-k8s.io/queue-name` (evaluation/kueue_workload.py): Kubernetes quantities.
    kueue_slot_cpu: str = Field("1", alias="OASIS_KUEUE_SLOT_CPU", pattern=QUANTITY_PATTERN)
    kueue_slot_memory: str = Field("1Gi", alias="OASIS_KUEUE_SLOT_MEMORY", pattern=QUANTITY_PATTERN)
    # How often a queued or running evaluation reads its Workload (admission, eviction), in seconds.
    kueue_poll_seconds: float = Field(2.0, alias="OASIS_KUEUE_POLL_SECONDS", gt=0)
    # Seconds after a run finished when its evaluation and documents are deleted, for evaluations
    # without spec.ttlSecondsAfterFinished (evaluation/expiry.py); unset keeps them.
    ttl_seconds_after_finished: int | None = Field(None, alias="OASIS_TTL_SECONDS_AFTER_FINISHED", ge=0)
    host_patience: float = Field(300.0, alias="OASIS_HOST_PATIENCE", ge=0)
    agent_namespace: str | None = Field(None, alias="OASIS_AGENT_NAMESPACE")
    agent_service_account: str | None = Field(None, alias="OASIS_AGENT_SERVICE_ACCOUNT")
    agent_uid: int | None = Field(None, alias="OASIS_AGENT_UID", ge=1)
    profile_dir: Path | None = Field(None, alias="OASIS_PROFILE_DIR")
    audit_webhook_port: int | None = Field(None, alias="OASIS_AUDIT_WEBHOOK_PORT", ge=1, le=65535)
    audit_webhook_host: str = Field("127.0.0.1", alias="OASIS_AUDIT_WEBHOOK_HOST")
    audit_webhook_tls_dir: Path = Field(DEFAULT_AUDIT_WEBHOOK_TLS_DIR, alias="OASIS_AUDIT_WEBHOOK_TLS_DIR")
    # The OASIS provider API (evaluation/provider_api): unset port, no API.
    provider_api_port: int | None = Field(None, alias="OASIS_PROVIDER_API_PORT", ge=1, le=65535)
    provider_api_host: str = Field("127.0.0.1", alias="OASIS_PROVIDER_API_HOST")
    provider_api_token_file: Path | None = Field(None, alias="OASIS_PROVIDER_API_TOKEN_FILE")
    provider_api_doors: str | None = Field(None, alias="OASIS_PROVIDER_API_DOORS")
    provider_api_tls_dir: Path | None = Field(None, alias="OASIS_PROVIDER_API_TLS_DIR")
    # How the process writes its log (`logs.py`): kopf's text formats, or one JSON object per line.
    log_format: Literal["plain", "full", "json"] = Field("full", alias="OASIS_LOG_FORMAT")
    # Tenant guardrail (`command_agents_allowed`): unset, command agents run outside a cluster (`oasis
    # evaluate`, `make demo`, the tests) and are refused inside one, where any tenant allowed to create an
    # evaluation could otherwise run a program in the operator's pod.
    command_agents: CommandAgents | None = Field(None, alias=COMMAND_AGENTS_VARIABLE)
    # Set by the kubelet in every pod: with no KUBECONFIG, the operator runs in a cluster.
    kubernetes_service_host: str = Field("", alias="KUBERNETES_SERVICE_HOST")

    @model_validator(mode="after")
    def _provider_api_has_a_token(self) -> OperatorSettings:
        if self.provider_api_port is not None and self.provider_api_token_file is None:
            raise ValueError(
                "OASIS_PROVIDER_API_TOKEN_FILE: name the file holding the provider API's bearer token "
                "(OASIS_PROVIDER_API_PORT is set, and the API is never served without authentication)"
            )
        return self

    @classmethod
    def variables(cls) -> tuple[str, ...]:
        """The names of every variable the operator reads."""
        return tuple(str(field.alias) for field in cls.model_fields.values())

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, flags: Mapping[str, str | None] | None = None
    ) -> OperatorSettings:
        """The settings from `env` (default: the process environment) with `flags` (by variable name)
        over them; SettingsError names what is wrong."""
        return cls._read(cls.variables(), env, flags)

    @classmethod
    def only(cls, *names: str, env: Mapping[str, str] | None = None) -> OperatorSettings:
        """The settings with only `names` read (the rest at their defaults), for the commands besides
        `oasis operator` that share one variable with it (the profile directory, the agent uid)."""
        return cls._read(names, env, None)

    @classmethod
    def _read(
        cls, names: tuple[str, ...], env: Mapping[str, str] | None, flags: Mapping[str, str | None] | None
    ) -> OperatorSettings:
        source = os.environ if env is None else env
        given = {name: source[name] for name in names if source.get(name)}
        given.update({name: value for name, value in (flags or {}).items() if value})
        unknown = sorted(set(given) - set(cls.variables()))
        if unknown:
            raise SettingsError(f"{', '.join(unknown)}: not a setting of the operator")
        try:
            return cls.model_validate(given)
        except ValidationError as exc:
            raise SettingsError("; ".join(_describe(item, given) for item in exc.errors())) from None

    @property
    def effective_sandbox_kubeconfig(self) -> Path | None:
        """OASIS_SANDBOX_KUBECONFIG, else the first file of KUBECONFIG: the sandbox is the watched cluster."""
        first = self.kubeconfig.split(os.pathsep)[0]
        return self.sandbox_kubeconfig or (Path(first) if first else None)

    @property
    def audit_logs(self) -> tuple[Path, ...]:
        """OASIS_SANDBOX_AUDIT_LOG as paths (it may list several, separated like PATH)."""
        return tuple(Path(p) for p in self.sandbox_audit_log.split(os.pathsep) if p)

    @property
    def in_cluster(self) -> bool:
        """The operator runs in a pod on the cluster's own credentials (no KUBECONFIG given)."""
        return bool(self.kubernetes_service_host) and not self.kubeconfig

    @property
    def command_agents_allowed(self) -> CommandAgents:
        """OASIS_COMMAND_AGENTS; unset: `disabled` in a cluster, `unsandboxed` outside (local use)."""
        if self.command_agents is not None:
            return self.command_agents
        return "disabled" if self.in_cluster else "unsandboxed"

    @property
    def provider_api_door_names(self) -> tuple[str, ...] | None:
        """OASIS_PROVIDER_API_DOORS as names (comma-separated); None: the default door."""
        names = tuple(d.strip() for d in (self.provider_api_doors or "").split(",") if d.strip())
        return names or None


_TAKES = {
    "int_parsing": "a whole number",
    "float_parsing": "a number of seconds",
    "greater_than_equal": "a number of at least {ge}",
    "greater_than": "a number greater than {gt}",
    "less_than_equal": "a number of at most {le}",
    "string_pattern_mismatch": "a value matching {pattern}",
    "literal_error": "one of {expected}",
}


def _describe(item: object, given: Mapping[str, str]) -> str:
    error = dict(item)  # type: ignore[call-overload]
    if not error.get("loc"):  # a rule across variables: its message names them
        return str(error.get("msg")).removeprefix("Value error, ")
    name = str(error["loc"][0])
    template = _TAKES.get(str(error.get("type")))
    takes = template.format(**error.get("ctx", {})) if template else str(error.get("msg"))
    return f"{name}: {given.get(name)!r} is not usable; set it to {takes}"
