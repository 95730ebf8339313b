"""The one place that builds Kubernetes API clients and applies manifests; also the text codec of the
ConfigMaps the operator stores compressed (evaluation documents, sandbox records)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
import urllib3
from kubernetes.client import ApiClient, ApiextensionsV1Api
from kubernetes.client.exceptions import ApiException
from kubernetes.client.rest import RESTClientObject
from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

from oasis_operator import PROVIDER_FIELD_MANAGER
from oasis_operator.models.kinds import API_RESOURCES

# Answers that say "not now" rather than "never": worth retrying after a pause.
TRANSIENT_STATUSES = frozenset({0, 429, 500, 502, 503, 504})
_SOURCE = "_oasis_kubeconfig_source"  # attribute on clients built from a kubeconfig file


POOL_CONNECTIONS = 64
MERGE_PATCH = "application/merge-patch+json"  # the content type of a JSON merge patch (RFC 7386)


def _load(kubeconfig: Path | str | None, context: str | None) -> tuple[kubernetes.client.Configuration, bool]:
    """The client configuration, and whether it came from a kubeconfig file (False: in-cluster)."""
    config = kubernetes.client.Configuration()
    # Kept connections: the library's default (5 per core) is below the threads one evaluation runs at
    # once (scenarios, their twin-create waves, background removals), and each connection it then
    # discards costs a new TLS handshake and client-certificate check on both sides.
    config.connection_pool_maxsize = POOL_CONNECTIONS
    try:
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None, context=context, client_configuration=config
        )
    except kubernetes.config.ConfigException:
        if kubeconfig:
            raise
        kubernetes.config.load_incluster_config(client_configuration=config)  # type: ignore[no-untyped-call]
        return config, False
    return config, True


def api_client(kubeconfig: Path | str | None = None, context: str | None = None) -> ApiClient:
    """A client from the given kubeconfig, else $KUBECONFIG / ~/.kube/config, else in-cluster config.

    A client built from a kubeconfig file re-reads it when a connection fails (see `reconnect`), so a
    server that came back on another address is found again without a restart.
    """
    config, from_file = _load(kubeconfig, context)
    client = ApiClient(configuration=config)
    client.user_agent = f"{PROVIDER_FIELD_MANAGER}/{kubernetes.__version__}"
    if from_file:
        path = Path(kubeconfig or os.path.expanduser(KUBE_CONFIG_DEFAULT_LOCATION).split(os.pathsep)[0])
        setattr(client, _SOURCE, (path, context, _digest(path)))
    return client


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def reconnect(api: ApiClient) -> bool:
    """Re-read the client's kubeconfig if the file changed since; True if the client now uses the new one."""
    source = getattr(api, _SOURCE, None)
    if source is None:
        return False
    path, context, digest = source
    now = _digest(path)
    if now is None or now == digest:
        return False
    try:
        fresh, _ = _load(path, context)
    except (kubernetes.config.ConfigException, OSError, ValueError):
        return False
    api.configuration = fresh
    api.rest_client = RESTClientObject(fresh)
    setattr(api, _SOURCE, (path, context, now))
    return True


def is_transient(exc: BaseException) -> bool:
    """A failure that may go away on its own: no connection, a timeout, an overloaded or restarting server."""
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUSES
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError)


def apply_crds(api: ApiClient, crds: Iterable[Mapping[str, Any]], timeout: float = 60.0) -> None:
    """Create or replace each CRD, then wait until the API server serves all of them."""
    # The typed client accepts plain dicts as bodies at run time; its annotations only name the models.
    ext: Any = ApiextensionsV1Api(api)
    names = []
    for crd in crds:
        name = crd["metadata"]["name"]
        names.append(name)
        try:
            current = ext.read_custom_resource_definition(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
            ext.create_custom_resource_definition(dict(crd))
            continue
        body = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current.metadata.resource_version}}
        ext.replace_custom_resource_definition(name, body)
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        for name in sorted(pending):
            conditions = ext.read_custom_resource_definition(name).status.conditions or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                pending.discard(name)
        if pending and time.monotonic() > deadline:
            raise TimeoutError(f"CRDs not established after {timeout:.0f}s: {sorted(pending)}")
        if pending:
            time.sleep(0.2)


# --- generic requests ---------------------------------------------------------------------------------
# (group/version, plural, namespaced) for every kind the sandbox creates or reads (`models/kinds.py`).
RESOURCES: dict[str, tuple[str, str, bool]] = API_RESOURCES


def resource_path(
    kind: str, namespace: str | None = None, name: str | None = None, api_version: str | None = None
) -> str:
    """The REST path of a collection or object of `kind` (api_version overrides the table's)."""
    version, plural, namespaced = RESOURCES[kind]
    version = api_version or version
    root = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    path = root
    if namespaced:
        if namespace is None:
            return f"{root}/{plural}"
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    return f"{path}/{name}" if name else path


def request(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    query: Mapping[str, Any] | None = None,
    content_type: str = "application/json",
    timeout: float = 30.0,
) -> Any:
    """One API request with the client's credentials; JSON in and out; ApiException on failure."""
    headers = {"Accept": "application/json"}
    if body is not None:
        headers["Content-Type"] = content_type
    method_, url, header_params, serialized, post = api.param_serialize(
        method=method,
        resource_path=path,
        query_params=list((query or {}).items()),
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    try:
        response = api.call_api(method_, url, header_params=header_params, body=serialized,
                                post_params=post, _request_timeout=timeout)  # fmt: skip
    except urllib3.exceptions.HTTPError:
        # The server may have moved (a restarted local plane, a rotated kubeconfig): look again, once.
        if not reconnect(api):
            raise
        return request(api, method, path, body, query, content_type, timeout)
    data = response.read()  # type: ignore[no-untyped-call]
    if response.status >= 400:
        raise ApiException(
            status=response.status, reason=response.reason, body=data.decode("utf-8", "replace")
        )
    return json.loads(data) if data else None


def served_versions(api: ApiClient, group: str) -> list[str]:
    """Versions of an API group the server serves (empty if the group is absent)."""
    try:
        doc = request(api, "GET", f"/apis/{group}")
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise
    return [v["version"] for v in doc.get("versions", [])]


def compress_text(text: str) -> bytes:
    """Text as gzip bytes for a ConfigMap's `binaryData`; no timestamp inside, so equal text gives equal
    bytes (a rewrite of an unchanged object is seen as unchanged)."""
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def decompress_text(blob: bytes) -> str:
    """The text `compress_text` made; ValueError saying why when the bytes are not that."""
    try:
        return gzip.decompress(blob).decode("utf-8")
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"not gzip data or cut short ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"its text is not UTF-8 ({exc.reason} at byte {exc.start})") from exc
