"""The OASIS provider API (Provider Conformance §3.8, SI provider guide §4), so the public runner can use
this operator as its environment provider: same self-check, same twin, same gateway, same evidence.

`ProviderApiSettings.from_settings()` takes the operator's settings (None when the API is not enabled);
`start_provider_api` opens the agent doors (kubeconfigs written to the data directory) and serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubernetes.client import ApiClient

from oasis_operator.environments.runtime import RuntimeSetupError, Sandboxes
from oasis_operator.gateway import Gateway
from oasis_operator.models.profile import Profile
from oasis_operator.pki import ensure_pki
from oasis_operator.provider_api.server import ProviderApiServer
from oasis_operator.provider_api.service import ProviderService
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.settings import OperatorSettings

__all__ = [
    "ProviderApiServer",
    "ProviderApiSettings",
    "ProviderService",
    "start_operator_provider_api",
    "start_provider_api",
]
DEFAULT_DOOR = "oasis-agent"


class ProviderApiSettingsError(ValueError):
    """A provider API setting cannot be used; the message names the variable."""


@dataclass(frozen=True)
class ProviderApiSettings:
    """Where the API listens, its token, its TLS files (None: a local CA's) and the agents' doors."""

    port: int
    token: str
    data_dir: Path
    host: str = "127.0.0.1"
    doors: tuple[str, ...] = (DEFAULT_DOOR,)
    cert: Path | None = None
    key: Path | None = None

    @classmethod
    def from_settings(cls, settings: OperatorSettings, data_dir: Path) -> ProviderApiSettings | None:
        """From OASIS_PROVIDER_API_PORT (unset: no API), _TOKEN_FILE (read now), _HOST, _DOORS, _TLS_DIR."""
        port, token_file = settings.provider_api_port, settings.provider_api_token_file
        if port is None:
            return None
        if token_file is None:  # the settings refuse this already; kept for a model built by hand
            raise ProviderApiSettingsError("OASIS_PROVIDER_API_TOKEN_FILE: name the file holding the token")
        tls = settings.provider_api_tls_dir
        return cls(
            port=port,
            token=read_token_file(token_file, "OASIS_PROVIDER_API_TOKEN_FILE"),
            data_dir=data_dir,
            host=settings.provider_api_host,
            doors=settings.provider_api_door_names or (DEFAULT_DOOR,),
            cert=tls / "tls.crt" if tls else None,
            key=tls / "tls.key" if tls else None,
        )


def read_token_file(path: Path, what: str) -> str:
    """A token on one line; an unreadable, empty or multi-word file is an error naming `what`."""
    try:
        token = path.read_text().strip()
    except OSError as exc:
        raise ProviderApiSettingsError(f"{what}: {path} cannot be read ({exc.strerror})") from None
    if not token or any(not (" " < c <= "~") for c in token):
        raise ProviderApiSettingsError(f"{what}: {path} must hold the token alone, one line, no spaces")
    return token


def door_kubeconfig(data_dir: Path, principal: str) -> Path:
    """Where a door's kubeconfig is written."""
    return data_dir / "doors" / f"{principal}.kubeconfig"


async def start_provider_api(
    settings: ProviderApiSettings,
    provider: SandboxProvider,
    gateway: Gateway,
    profile: Profile,
    api: ApiClient,
) -> ProviderApiServer:
    """Open the doors, write their kubeconfigs (0600), and serve the API; the caller stops it."""
    service = ProviderService(provider, gateway, profile, api)
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    (settings.data_dir / "doors").mkdir(mode=0o700, exist_ok=True)
    for principal in settings.doors:
        path = door_kubeconfig(settings.data_dir, principal)
        path.touch(mode=0o600)
        path.write_text(service.open_door(principal))
    cert, key, ca = settings.cert, settings.key, None
    if cert is None or key is None:
        pki = ensure_pki(settings.data_dir / "pki")
        cert, key, ca = pki.serving_cert, pki.serving_key, pki.ca_cert
    server = ProviderApiServer(service, settings.token, cert, key, settings.host, settings.port, ca)
    await server.start()
    return server


async def start_operator_provider_api(
    sandboxes: Sandboxes, profile: Profile, operator: OperatorSettings
) -> ProviderApiServer | None:
    """The operator's provider API on its default sandbox, when OASIS_PROVIDER_API_PORT asks for one."""
    try:
        settings = ProviderApiSettings.from_settings(operator, sandboxes.config.data_dir / "provider-api")
    except ProviderApiSettingsError as exc:
        raise RuntimeSetupError(str(exc)) from exc
    if settings is None:
        return None
    target = sandboxes.default
    if target is None:
        raise RuntimeSetupError(
            "OASIS_PROVIDER_API_PORT: the provider API needs the operator's default sandbox cluster "
            "(OASIS_SANDBOX_KUBECONFIG)"
        )
    return await start_provider_api(settings, target.provider, target.gateway, profile, target.api)
