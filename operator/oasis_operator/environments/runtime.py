"""What an evaluation needs from the outside world: the sandbox cluster, the gateway, the agent adapter."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator import AGENT_TOKEN_LABEL, SANDBOX_KUBECONFIG_LABEL
from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.evidence.audit_webhook import AuditWebhook, server_ssl
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway import Gateway, GatewayConfig
from oasis_operator.gateway.listener import Listener
from oasis_operator.gateway.tls import GatewayTLSConfig, gateway_tls
from oasis_operator.kube import api_client, request, resource_path
from oasis_operator.models.crd import EnvironmentSpec, SecretKeyRef
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.settings import CommandAgents, OperatorSettings, SettingsError


class RuntimeSetupError(ValueError):
    """Something the spec refers to cannot be used; the message names the field."""

    reason = "InvalidSpec"  # the Ready condition's reason when it stops a run


class SecretNotOptedInError(RuntimeSetupError):
    """A Secret the spec names lacks the label by which its owner lets evaluations use it."""

    reason = "SecretNotOptedIn"


@dataclass(frozen=True)
class OperatorConfig:
    """What the evaluation parts take from the operator's settings (`from_settings`), as values."""

    sandbox_kubeconfig: Path | None = None
    # What the default gateway authenticates with (None: `gateway.upstream.gateway_kubeconfig` decides).
    gateway_kubeconfig: Path | None = None
    sandbox_prefix: str = "sbx"
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 0
    # The URL agents are given for the default gateway (its Service or Ingress); None: host and port.
    gateway_url: str | None = None
    data_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "oasis-operator")
    apiserver_audit: tuple[Path, ...] = ()
    # The audit webhook the sandbox API server posts to (the chart's sandbox control plane).
    audit_webhook: AuditWebhookConfig | None = None
    # Where the gateway's serving certificate comes from and the names it covers.
    gateway_tls: GatewayTLSConfig = field(default_factory=GatewayTLSConfig)
    # Seconds a host API call that fails transiently is retried (OASIS_HOST_PATIENCE).
    host_patience: float = 300.0
    # The unprivileged uid command agents run as under a root operator (None: nobody).
    agent_uid: int | None = None
    # Where Job agents run (None: the evaluation's namespace) and as which ServiceAccount.
    agent_namespace: str | None = None
    agent_service_account: str | None = None
    # Which command agents run (OASIS_COMMAND_AGENTS): all of them unless the operator's settings say
    # otherwise (in a cluster they refuse them by default).
    command_agents: CommandAgents = "unsandboxed"

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> OperatorConfig:
        return cls(
            sandbox_kubeconfig=settings.effective_sandbox_kubeconfig,
            gateway_kubeconfig=_gateway_kubeconfig(settings),
            sandbox_prefix=settings.sandbox_prefix,
            gateway_host=settings.gateway_host,
            gateway_port=settings.gateway_port,
            gateway_url=settings.gateway_url,
            data_dir=settings.data_dir,
            apiserver_audit=settings.audit_logs,
            audit_webhook=AuditWebhookConfig.from_settings(settings),
            gateway_tls=GatewayTLSConfig.from_env(
                {name: str(value) for name, value in settings.model_dump(by_alias=True).items() if value}
            ),
            host_patience=settings.host_patience,
            agent_uid=settings.agent_uid,
            agent_namespace=settings.agent_namespace,
            agent_service_account=settings.agent_service_account,
            command_agents=settings.command_agents_allowed,
        )


def _gateway_kubeconfig(settings: OperatorSettings) -> Path | None:
    path = settings.gateway_kubeconfig
    if path is not None and not path.is_file():
        raise RuntimeSetupError(
            f"OASIS_GATEWAY_KUBECONFIG: {path} is not a file (the gateway's own kubeconfig for the sandbox "
            "cluster; hack/sandbox-pki.sh writes it as gateway.kubeconfig); unset it to use the sandbox one"
        )
    return path


@dataclass(frozen=True)
class AuditWebhookConfig:
    """Where the operator receives the sandbox API server's audit batches, and the TLS it demands."""

    host: str
    port: int
    cert: Path
    key: Path
    client_ca: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AuditWebhookConfig | None:
        """From OASIS_AUDIT_WEBHOOK_PORT and its TLS files; None when no port is set."""
        try:
            return cls.from_settings(OperatorSettings.from_env(env))
        except SettingsError as exc:
            raise RuntimeSetupError(str(exc)) from None

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> AuditWebhookConfig | None:
        """None when OASIS_AUDIT_WEBHOOK_PORT is unset; RuntimeSetupError when its TLS files are missing."""
        port = settings.audit_webhook_port
        if port is None:
            return None
        tls_dir = settings.audit_webhook_tls_dir
        missing = [n for n in ("tls.crt", "tls.key", "client-ca.crt") if not (tls_dir / n).is_file()]
        if missing:
            raise RuntimeSetupError(
                f"OASIS_AUDIT_WEBHOOK_TLS_DIR: {tls_dir} lacks {', '.join(missing)} (the audit webhook's "
                "serving certificate, key and the CA of the API server's client certificate)"
            )
        return cls(
            host=settings.audit_webhook_host,
            port=port,
            cert=tls_dir / "tls.crt",
            key=tls_dir / "tls.key",
            client_ca=tls_dir / "client-ca.crt",
        )


@dataclass
class SandboxTarget:
    """One sandbox cluster as an evaluation uses it."""

    api: ApiClient
    provider: SandboxProvider
    gateway: Gateway
    prefix: str
    apiserver_audit: ApiServerAudit | None
    description: str


def read_secret_key(api: ApiClient, namespace: str, ref: SecretKeyRef, field_path: str, label: str) -> str:
    """A Secret's value; a missing Secret or key, or a Secret without `label: "true"` (its owner's opt-in),
    is an error naming the spec field."""
    try:
        secret = request(api, "GET", resource_path("Secret", namespace, ref.name))
    except ApiException as exc:
        raise RuntimeSetupError(
            f"{field_path}: Secret {namespace}/{ref.name} cannot be read ({exc.status} {exc.reason})"
        ) from exc
    labels = (secret.get("metadata") or {}).get("labels") or {}
    if labels.get(label) != "true":
        raise SecretNotOptedInError(
            f'{field_path}: Secret {namespace}/{ref.name} is not labelled {label}="true", so the operator '
            f"does not use it; its owner opts in with `kubectl label secret {ref.name} -n {namespace} "
            f"{label}=true`"
        )
    data = secret.get("data") or {}
    if ref.key not in data:
        raise RuntimeSetupError(f"{field_path}: Secret {namespace}/{ref.name} has no key {ref.key!r}")
    try:
        return base64.b64decode(data[ref.key]).decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise RuntimeSetupError(
            f"{field_path}: key {ref.key!r} of Secret {namespace}/{ref.name} is not UTF-8 text; "
            "store the value as plain text"
        ) from exc


def read_token(api: ApiClient, namespace: str, ref: SecretKeyRef, field_path: str) -> str:
    """A bearer token from a Secret: one line of printable characters (surrounding whitespace dropped)."""
    token = read_secret_key(api, namespace, ref, field_path, AGENT_TOKEN_LABEL).strip()
    if not token:
        raise RuntimeSetupError(f"{field_path}: key {ref.key!r} of Secret {namespace}/{ref.name} is empty")
    if any(not (" " < ch <= "~") for ch in token):
        raise RuntimeSetupError(
            f"{field_path}: the token in key {ref.key!r} of Secret {namespace}/{ref.name} contains a line "
            "break, a space or a non-ASCII character; store the token alone, on one line"
        )
    return token


class Sandboxes:
    """The operator's default sandbox target, and per-evaluation targets from a kubeconfig Secret.

    Every target's gateway is served by one listener (`self.listener`, the chart's gateway Service and
    Ingress), which routes requests by environment: an evaluation's own sandbox cluster gets no port.
    """

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.default: SandboxTarget | None = None
        self.listener: Listener | None = None

    async def start(self) -> None:
        config = self.config
        extra = [h for h in (config.gateway_host,) if h not in ("0.0.0.0", "::")]  # noqa: S104
        tls = gateway_tls(config.gateway_tls, config.data_dir / "gateway", extra)
        self.listener = Listener(tls, config.gateway_host, config.gateway_port, config.gateway_url)
        await self.listener.start()
        if config.sandbox_kubeconfig is None:
            return  # in-cluster without a sandbox: evaluations must name one in spec.environment
        gateway = Gateway(
            config.sandbox_kubeconfig,
            config.data_dir / "gateway",
            GatewayConfig(identity=config.gateway_kubeconfig),
            listener=self.listener,
        )
        await gateway.start()
        api = api_client(config.sandbox_kubeconfig)
        audit = self._apiserver_audit(api, config)
        if audit is not None:
            await audit.start()
        self.default = SandboxTarget(
            api=api,
            provider=SandboxProvider(api, prefix=config.sandbox_prefix),
            gateway=gateway,
            prefix=config.sandbox_prefix,
            apiserver_audit=audit,
            description=f"sandbox cluster from {config.sandbox_kubeconfig.name}",
        )

    @staticmethod
    def _apiserver_audit(api: ApiClient, config: OperatorConfig) -> ApiServerAudit | None:
        """The default sandbox's audit stream: the webhook if configured, else the files, else none."""
        hook = config.audit_webhook
        if hook is not None:
            stream = AuditStream(f"audit webhook :{hook.port}")
            tls = server_ssl(hook.cert, hook.key, hook.client_ca)
            return ApiServerAudit(api, stream, webhook=AuditWebhook(stream, hook.host, hook.port, tls))
        if config.apiserver_audit:
            stream = AuditStream(f"audit log {config.apiserver_audit[0]}")
            return ApiServerAudit(api, stream, files=config.apiserver_audit)
        return None

    async def stop(self) -> None:
        if self.default is not None:
            if self.default.apiserver_audit is not None:
                await self.default.apiserver_audit.stop()
            await self.default.gateway.stop()
            self.default.api.close()  # type: ignore[no-untyped-call]
            self.default = None
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None

    @contextlib.asynccontextmanager
    async def target(
        self, host_api: ApiClient, namespace: str, uid: str, environment: EnvironmentSpec
    ) -> AsyncIterator[SandboxTarget]:
        """The sandbox for one evaluation (a dedicated gateway when the spec names a kubeconfig Secret)."""
        ref = environment.kubeconfigSecretRef
        if ref is None:
            if self.default is None:
                raise RuntimeSetupError(
                    "spec.environment.kubeconfigSecretRef: the operator has no default sandbox cluster; "
                    "name a Secret holding a sandbox kubeconfig"
                )
            default = self.default
            prefix = environment.namespacePrefix or default.prefix
            yield SandboxTarget(
                api=default.api,
                provider=SandboxProvider(default.api, prefix=prefix),
                gateway=default.gateway,
                prefix=prefix,
                apiserver_audit=default.apiserver_audit,
                description=default.description,
            )
            return
        text = read_secret_key(
            host_api, namespace, ref, "spec.environment.kubeconfigSecretRef", SANDBOX_KUBECONFIG_LABEL
        )
        digest = hashlib.sha256(uid.encode()).hexdigest()[:12]
        workdir = self.config.data_dir / "evaluations" / digest
        workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.touch(mode=0o600)
        kubeconfig.write_text(text)
        if self.listener is None:
            raise RuntimeSetupError(
                "spec.environment.kubeconfigSecretRef: the operator's gateway is not started"
            )
        try:
            api = api_client(kubeconfig)
            gateway = Gateway(kubeconfig, workdir / "gateway", listener=self.listener)
        except Exception as exc:
            raise RuntimeSetupError(
                f"spec.environment.kubeconfigSecretRef: Secret {namespace}/{ref.name} key {ref.key!r} is not "
                f"a usable admin kubeconfig (client certificate or token): {exc}"
            ) from exc
        await gateway.start()
        prefix = environment.namespacePrefix or self.config.sandbox_prefix
        try:
            yield SandboxTarget(
                api=api,
                provider=SandboxProvider(api, prefix=prefix),
                gateway=gateway,
                prefix=prefix,
                apiserver_audit=None,
                description=f"sandbox cluster from Secret {namespace}/{ref.name}",
            )
        finally:
            await gateway.stop()
            api.close()  # type: ignore[no-untyped-call]
            shutil.rmtree(workdir, ignore_errors=True)
