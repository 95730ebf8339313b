"""The chart's sandbox control plane, run from its rendered commands with the pinned release's binaries.

No kubelet runs here, so the chart's etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
pods cannot start; their containers' commands (and kwok's init containers, which apply its Stage CRD) are
taken from the rendered chart and run as local processes instead, with the certificates and kubeconfigs of
hack/sandbox-pki.sh and the chart's ConfigMaps mounted where the pods would have them. Host names of the
in-cluster Services become 127.0.0.1 (the certificates carry it too) and ports become free local ones;
every other flag is the chart's. The operator's kubeconfig from the Secret then drives the sandbox
provider, and a Deployment made in a sandbox gets Running pods on the environment's kwok Nodes.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from oasis_operator.environments.apiserver_audit import ApiServerAudit
from oasis_operator.evidence.audit_webhook import AuditWebhook, server_ssl
from oasis_operator.evidence.stream import AuditStream
from oasis_operator.gateway.upstream import Upstream, load_upstream
from oasis_operator.kube import api_client, request, resource_path
from oasis_operator.localcluster.release import pinned
from oasis_operator.models.evidence import Actor, AuditLog, SourceStatus
from oasis_operator.sandbox.provider import SandboxProvider
from oasis_operator.sandbox.twin.resources import POOL_KEY
from tests.cluster_fixtures import REPO, wait_for
from tests.unit.chart.chart_render import find, render
from tests.unit.sandbox.test_twin import scenario

pytestmark = pytest.mark.cluster

# The chart's images are the pinned release, so its commands run on that release's binaries
# (hack/install-deps.sh always builds them), whichever release the session's own plane runs.
CHART_BIN = pinned().cache_dir / "bin"
FULL = "oasis-oasis-operator"
NS = "oasis-system"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SandboxPlane:
    pki: Path
    kubeconfig: Path
    etcd_port: int
    api_port: int
    audit_port: int
    audit_log: Path


def _command(kind: str, suffix: str) -> list[str]:
    workload = find(render(namespace=NS), kind, suffix)
    return list(workload["spec"]["template"]["spec"]["containers"][0]["command"])


def _kwok_argvs(replacements: dict[str, str]) -> tuple[list[list[str]], list[str]]:
    """kwok's init containers (kubectl) and kwok itself: images whose entrypoint is the binary, so the
    chart gives only their arguments."""
    pod = find(render(namespace=NS), "Deployment", "-sandbox-kwok")["spec"]["template"]["spec"]
    inits = [
        _localise(["kubectl", *c["args"]], replacements, str(CHART_BIN / "kubectl"))
        for c in pod["initContainers"]
    ]
    [kwok] = pod["containers"]
    return inits, _localise(["kwok", *kwok["args"]], replacements, str(CHART_BIN / "kwok"))


def _localise(argv: list[str], replacements: dict[str, str], binary: str) -> list[str]:
    out = [binary]
    for arg in argv[1:]:
        local = arg
        for old, new in replacements.items():
            local = local.replace(old, new)
        out.append(local)
    return out


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def sandbox_plane(tmp_path: Path) -> Iterator[SandboxPlane]:
    pki = tmp_path / "pki"
    secret = subprocess.run(
        ["bash", str(REPO / "hack" / "sandbox-pki.sh"), FULL, NS, str(pki)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    data = yaml.safe_load(secret)
    assert data["metadata"]["name"] == f"{FULL}-sandbox-pki"
    # Every key the chart's pods mount is in the Secret.
    objects = render(namespace=NS)
    mounted = {
        item["key"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet")
        for v in o["spec"]["template"]["spec"].get("volumes", [])
        if v.get("secret", {}).get("secretName") == f"{FULL}-sandbox-pki"
        for item in v["secret"].get("items", [])
    }
    assert mounted <= set(data["data"]), mounted - set(data["data"])
    assert "kubeconfig" in mounted

    etcd_port, api_port, peer, metrics, cm_port, scheduler_port = (_free_port() for _ in range(6))
    audit = tmp_path / "audit-policy.yaml"
    audit.write_text(find(objects, "ConfigMap", "-sandbox-audit")["data"]["policy.yaml"])
    kwok_files = tmp_path / "kwok"
    kwok_files.mkdir()
    for key, text in find(objects, "ConfigMap", "-sandbox-kwok")["data"].items():
        (kwok_files / key).write_text(text)
    server = f"https://{FULL}-sandbox-apiserver.{NS}.svc:6443"
    local_server = f"https://127.0.0.1:{api_port}"
    kubeconfigs = (
        "kubeconfig",
        "controller-manager.kubeconfig",
        "scheduler.kubeconfig",
        "node-simulator.kubeconfig",
        "gateway.kubeconfig",
    )
    for name in kubeconfigs:
        assert server in (pki / name).read_text(), name
        (pki / name).write_text((pki / name).read_text().replace(server, local_server))
    audit_port = _free_port()
    hook = pki / "audit-webhook.kubeconfig"
    hook.write_text(hook.read_text().replace(f"{FULL}-audit.{NS}.svc:8444", f"127.0.0.1:{audit_port}"))
    common = {"/etc/etcd/pki/": f"{pki}/", "/etc/kubernetes/pki/": f"{pki}/"}
    etcd = _localise(
        _command("StatefulSet", "-sandbox-etcd"),
        {**common, "https://0.0.0.0:2379": f"https://127.0.0.1:{etcd_port}",
         f"https://{FULL}-sandbox-etcd.{NS}.svc:2379": f"https://127.0.0.1:{etcd_port}",
         "127.0.0.1:2380": f"127.0.0.1:{peer}", "http://0.0.0.0:2381": f"http://127.0.0.1:{metrics}",
         "/var/lib/etcd/data": str(tmp_path / "etcd")},
        str(CHART_BIN / "etcd"),
    )  # fmt: skip
    apiserver = [
        *_localise(
            _command("Deployment", "-sandbox-apiserver"),
            {**common, f"https://{FULL}-sandbox-etcd.{NS}.svc:2379": f"https://127.0.0.1:{etcd_port}",
             "--secure-port=6443": f"--secure-port={api_port}",
             "/etc/kubernetes/audit/policy.yaml": str(audit),
             "--audit-log-path=-": f"--audit-log-path={tmp_path}/audit.log"},
            str(CHART_BIN / "kube-apiserver"),
        ),
        "--bind-address=127.0.0.1",
    ]  # fmt: skip
    manager = [
        *_localise(
            _command("Deployment", "-sandbox-controller-manager"),
            {**common, "--cert-dir=/tmp": f"--cert-dir={tmp_path}/cm-certs"},
            str(CHART_BIN / "kube-controller-manager"),
        ),
        "--bind-address=127.0.0.1",
        f"--secure-port={cm_port}",
    ]
    scheduler = [
        *_localise(
            _command("Deployment", "-sandbox-scheduler"),
            {**common, "--cert-dir=/tmp": f"--cert-dir={tmp_path}/scheduler-certs"},
            str(CHART_BIN / "kube-scheduler"),
        ),
        "--bind-address=127.0.0.1",
        f"--secure-port={scheduler_port}",
    ]
    stage_crd, kwok = _kwok_argvs(
        {**common, "/etc/kwok/": f"{kwok_files}/", "/tmp/kube-cache": f"{tmp_path}/kube-cache"}
    )
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(_spawn(etcd, tmp_path / "etcd.log"))
        procs.append(_spawn(apiserver, tmp_path / "apiserver.log"))
        wait_for(lambda: _ready(pki, api_port), timeout=90, what="sandbox kube-apiserver /readyz")
        procs.append(_spawn(manager, tmp_path / "controller-manager.log"))
        procs.append(_spawn(scheduler, tmp_path / "scheduler.log"))
        for init in stage_crd:  # the kwok pod's init containers, in order, each to completion
            subprocess.run(init, capture_output=True, text=True, check=True, timeout=90)
        procs.append(_spawn(kwok, tmp_path / "kwok.log"))
        yield SandboxPlane(pki, pki / "kubeconfig", etcd_port, api_port, audit_port, tmp_path / "audit.log")
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _pod_writers(audit_log: Path, namespace: str, names: set[str]) -> dict[str, set[str]]:
    """Who bound the pods to a node and who wrote their status, by the API server's audit."""
    writers: dict[str, set[str]] = {"binding": set(), "status": set()}
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if (
            ref.get("resource") == "pods"
            and ref.get("namespace") == namespace
            and ref.get("name") in names
            and ref.get("subresource") in writers
            and event["verb"] in ("create", "update", "patch")
        ):
            writers[ref["subresource"]].add(event["user"]["username"])
    return writers


def _ready(pki: Path, port: int) -> bool:
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=context, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def _read(url: str, context: ssl.SSLContext) -> bytes:
    with urllib.request.urlopen(url, context=context, timeout=5) as response:
        return bytes(response.read())


def test_etcd_answers_only_client_certificates_of_its_ca(sandbox_plane: SandboxPlane) -> None:
    context = ssl.create_default_context(cafile=str(sandbox_plane.pki / "etcd-ca.crt"))
    url = f"https://127.0.0.1:{sandbox_plane.etcd_port}/health"
    # etcd refuses the handshake (TLS alert) when no client certificate is presented.
    with pytest.raises(OSError, match=r"(?i)bad certificate|certificate required"):
        _read(url, context)
    context.load_cert_chain(
        str(sandbox_plane.pki / "etcd-client.crt"), str(sandbox_plane.pki / "etcd-client.key")
    )
    assert b'"health":"true"' in _read(url, context)


def test_operator_kubeconfig_builds_and_removes_a_twin(sandbox_plane: SandboxPlane) -> None:
    api = api_client(sandbox_plane.kubeconfig)
    try:
        # The serviceaccount and serviceaccount-token controllers run: the provider waits for them.
        provider = SandboxProvider(api, prefix="sbx")
        record = provider.provision(scenario("infra.safety.do.cascading-deletion-001"), evaluation="ns/eval")
        env = record.environment
        deployments = [
            d
            for ns in env.namespaces
            for d in request(api, "GET", resource_path("Deployment", ns.sandbox))["items"]
        ]
        assert deployments
        # The workload controllers, the scheduler and kwok run: a fresh Deployment in a sandbox namespace
        # gets its ReplicaSet, and its pods are placed on the environment's own kwok Nodes and Running.
        probe_ns = env.namespaces[0].sandbox
        body = {
            "metadata": {"name": "probe"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "probe"}},
                "template": {"metadata": {"labels": {"app": "probe"}},
                             "spec": {"containers": [{"name": "c", "image": "busybox",
                                                      "resources": {"requests": {"cpu": "10m"}}}]}},
            },
        }  # fmt: skip
        request(api, "POST", resource_path("Deployment", probe_ns), body)

        def ready() -> dict[str, Any] | None:
            found: dict[str, Any] = request(api, "GET", resource_path("Deployment", probe_ns, "probe"))
            return found if (found.get("status") or {}).get("readyReplicas") == 2 else None

        wait_for(ready, timeout=120, what="the probe Deployment's two replicas ready")
        query = {"labelSelector": "app=probe"}
        pods = request(api, "GET", resource_path("Pod", probe_ns), query=query)["items"]
        assert sorted(p["status"]["phase"] for p in pods) == ["Running", "Running"]
        owners = {o["kind"] for p in pods for o in p["metadata"]["ownerReferences"]}
        assert owners == {"ReplicaSet"}
        nodes = {n["metadata"]["name"]: n for n in request(api, "GET", resource_path("Node"))["items"]}
        for pod in pods:
            node = nodes[pod["spec"]["nodeName"]]
            assert node["metadata"]["labels"][POOL_KEY] == env.id, pod["spec"]["nodeName"]
        # The scheduler says so in each pod's events, as on a cluster.
        events = request(api, "GET", resource_path("Event", probe_ns))["items"]
        names = {p["metadata"]["name"] for p in pods}
        scheduled = {
            e["involvedObject"]["name"]
            for e in events
            if e["reason"] == "Scheduled" and e["involvedObject"]["name"] in names
        }
        assert scheduled == names, [(e["reason"], e["message"]) for e in events]
        # Each component acts with its own identity of the Secret: the scheduler binds the pods, kwok
        # writes their status.
        writers = _pod_writers(sandbox_plane.audit_log, probe_ns, names)
        assert writers == {"binding": {"system:kube-scheduler"}, "status": {"system:node-simulator"}}
        # The namespace and garbage-collector controllers run: teardown completes.
        report = provider.teardown(env.id, wait=True, timeout=90)
        assert report.complete, report.remaining
        for binding in env.namespaces:
            with pytest.raises(ApiException) as gone:
                request(api, "GET", resource_path("Namespace", None, binding.sandbox))
            assert gone.value.status == 404
    finally:
        api.close()  # type: ignore[no-untyped-call]


def test_audit_reaches_the_operator_through_the_webhook(sandbox_plane: SandboxPlane) -> None:
    """The chart's API server posts its audit batches; the operator routes them to the scenario."""
    pki = sandbox_plane.pki
    api = api_client(sandbox_plane.kubeconfig)
    stream = AuditStream("audit webhook")
    tls = server_ssl(pki / "audit-webhook.crt", pki / "audit-webhook.key", pki / "audit-ca.crt")
    audit = ApiServerAudit(
        api, stream, webhook=AuditWebhook(stream, "127.0.0.1", sandbox_plane.audit_port, tls)
    )
    provider = SandboxProvider(api, prefix="sbx")
    agent_user: list[str] = []

    async def main() -> tuple[AuditLog, str]:
        await audit.start()
        try:
            record = await asyncio.to_thread(
                provider.provision, scenario("infra.safety.do.cascading-deletion-001")
            )
            env = record.environment
            agent_user.append(env.agent.username)
            await asyncio.to_thread(
                audit.subscribe, env, time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            )
            target = env.namespaces[0].sandbox
            body = {"metadata": {"name": "made-by-provider"}, "data": {"k": "v"}}
            path = resource_path("ConfigMap", target, "made-by-provider")
            await asyncio.to_thread(request, api, "POST", resource_path("ConfigMap", target), body)
            await asyncio.to_thread(request, api, "GET", path)  # the operator's read: dropped
            # The gateway's own identity of the Secret: its fence names it, its reads for the agent stay.
            upstream = Upstream(load_upstream(pki / "gateway.kubeconfig"))
            await upstream.start()
            try:
                await audit.gateway_fence(env.id, upstream)
                await upstream.get_json(path, env.agent)
            finally:
                await upstream.stop()
            # Nothing but the API server's audit client may post evidence.
            plain = ssl.create_default_context(cafile=str(pki / "ca.crt"))
            with pytest.raises(OSError, match=r"(?i)certificate|reset|EOF|handshake|closed"):
                await asyncio.to_thread(
                    _read, f"https://127.0.0.1:{sandbox_plane.audit_port}/audit/events", plain
                )
            log = await asyncio.to_thread(audit.close, env.id)
            await asyncio.to_thread(provider.teardown, env.id, False)
            return log, target
        finally:
            await audit.stop()

    try:
        log, target = asyncio.run(main())
    finally:
        api.close()  # type: ignore[no-untyped-call]
    assert log.evidence_source.status == SourceStatus.AVAILABLE, log.evidence_source.detail
    assert stream.provider_users == {"oasis-operator"}
    assert stream.gateway_users == {"oasis:gateway"}
    reads = [(e.actor, e.user) for e in log.entries if e.name == "made-by-provider" and e.verb == "get"]
    assert reads == [(Actor.AGENT, agent_user[0])], reads
    made = [e for e in log.entries if e.verb == "create" and e.name == "made-by-provider"]
    assert [(e.actor, e.user, e.sandbox_namespace) for e in made] == [
        (Actor.PROVIDER, "oasis-operator", target)
    ]
    assert made[0].request_body["data"] == {"k": "v"}
    assert made[0].response_uid
