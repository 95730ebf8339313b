"""One door for every sandbox cluster: an evaluation's own cluster (spec.environment.kubeconfigSecretRef)
is served on the operator's one gateway port, routed by environment, not on a port of its own.

The operator's sandbox targets (`Sandboxes`) run as the operator runs them: a default sandbox cluster and
one named by a Secret (both the local control plane here; each target has its own gateway and record).
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from kubernetes.client import ApiClient, CoreV1Api

from oasis_operator import SANDBOX_KUBECONFIG_LABEL
from oasis_operator.environments.runtime import OperatorConfig, Sandboxes
from oasis_operator.models.crd import EnvironmentSpec
from tests.cluster_fixtures import Cluster
from tests.integration.gateway.twin import built_environment

T = TypeVar("T")


class Loop:
    """An event loop in a thread, driven by blocking calls from the test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


def _get(url: str, ca: Path, token: str) -> int:
    context = ssl.create_default_context(cafile=str(ca))
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_an_evaluations_own_sandbox_cluster_is_served_through_the_one_door(
    cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    secret = "sandbox-kubeconfig"
    CoreV1Api(api).create_namespaced_secret(
        namespace,
        {
            "metadata": {"name": secret, "labels": {SANDBOX_KUBECONFIG_LABEL: "true"}},
            "data": {"kubeconfig": base64.b64encode(cluster.kubeconfig.read_bytes()).decode()},
        },
    )
    config = OperatorConfig(sandbox_kubeconfig=cluster.kubeconfig, data_dir=tmp_path / "data")
    sandboxes = Sandboxes(config)
    loop = Loop()
    loop.run(sandboxes.start())
    target = None
    try:
        assert sandboxes.default is not None
        assert sandboxes.listener is not None
        default = sandboxes.default.gateway
        own = sandboxes.target(
            api,
            namespace,
            str(uuid.uuid4()),
            EnvironmentSpec.model_validate({"kubeconfigSecretRef": {"name": secret, "key": "kubeconfig"}}),
        )
        target = loop.run(own.__aenter__())
        assert target.gateway is not default
        # Same URL, same port: the evaluation's gateway opened no listener of its own.
        assert target.gateway.url == default.url == sandboxes.listener.url
        port = urlsplit(default.url).port
        with built_environment(api) as env_a, built_environment(api) as env_b:
            a = default.register(env_a)
            b = target.gateway.register(env_b)
            assert urlsplit(a.server).port == urlsplit(b.server).port == port
            ca = default.ca_cert
            assert target.gateway.ca_cert == ca
            pods = "/api/v1/namespaces/default/pods"
            assert _get(a.server + pods, ca, a.token) == 200
            assert _get(b.server + pods, ca, b.token) == 200
            # Each request is in its own environment's record, in its own gateway.
            assert [e.path for e in default.audit_entries(env_a.id)] == [pods]
            assert [e.path for e in target.gateway.audit_entries(env_b.id)] == [pods]
            # A's token at B's door: A's request (refused, noted), B's record untouched.
            assert _get(f"{default.url}/env/{env_b.id}{pods}", ca, a.token) == 401
            refused = default.audit_entries(env_a.id)[-1]
            assert (refused.response_code, refused.actor) == (401, "agent")
            assert env_b.id in (refused.note or "")
            assert len(target.gateway.audit_entries(env_b.id)) == 1
            # Once the evaluation's target is gone, its door is closed; the request is still recorded.
            loop.run(own.__aexit__(None, None, None))
            target = None
            unmatched = len(default.unmatched_entries())
            assert _get(b.server + pods, ca, b.token) == 401
            assert len(default.unmatched_entries()) == unmatched + 1
            assert _get(a.server + pods, ca, a.token) == 200
    finally:
        if target is not None:
            loop.run(own.__aexit__(None, None, None))
        loop.run(sandboxes.stop())
        loop.close()
