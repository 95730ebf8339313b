"""The one place that builds Kubernetes API clients and applies manifests."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import kubernetes
from kubernetes.client import ApiClient, ApiextensionsV1Api
from kubernetes.client.exceptions import ApiException


def api_client(kubeconfig: Path | str | None = None, context: str | None = None) -> ApiClient:
    """A client from the given kubeconfig, else $KUBECONFIG / ~/.kube/config, else in-cluster config."""
    config = kubernetes.client.Configuration()
    try:
        kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None, context=context, client_configuration=config
        )
    except kubernetes.config.ConfigException:
        if kubeconfig:
            raise
        kubernetes.config.load_incluster_config(client_configuration=config)  # type: ignore[no-untyped-call]
    return ApiClient(configuration=config)


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
