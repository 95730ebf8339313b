"""What an agent reads from a pod through the gateway, with the real kubectl: `exec`, `attach` and
`port-forward` refused word for word as the real API server refuses an agent without those rights,
`kubectl logs` of every pod (declared lines through ownerReferences, ordinary lines otherwise), and
`kubectl top` agreeing with the Prometheus API about the same workload."""

from __future__ import annotations

import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes.client import ApiClient, AppsV1Api, BatchV1Api, CoreV1Api

from oasis_operator.models.environment import FixtureEntry
from tests.cluster_fixtures import KUBECTLS, Cluster, wait_for
from tests.integration.gateway.conftest import FIXTURES, Door
from tests.integration.gateway.twin import GatewayThread, built_environment, write_kubeconfig

KUBECTL = KUBECTLS["current"]
# A crash this recent leaves the test the rest of its back-off (10 s at least) to read the crashed run.
JUST_CRASHED = timedelta(seconds=3)
MEMORY_SERIES = [{"t": "-1h", "value": "200Mi"}, {"t": "now", "value": "300Mi"}]
POD_FIXTURES = (
    *FIXTURES,
    FixtureEntry(
        kind="metrics",
        name="payments",
        namespace="prod",
        data={"series": {"container_memory_working_set_bytes": MEMORY_SERIES}},
    ),
)
SERVICE_LINES = [
    'level=info msg="starting payments" version=2.0.1',
    'level=info msg="configuration loaded" source=environment',
    'level=info msg="listening" addr=0.0.0.0:8080',
    'level=info msg="ready to serve requests"',
    'level=info msg="request served" method=GET path=/healthz status=200 duration=1ms',
    'level=info msg="request served" method=GET path=/ status=200 duration=12ms',
    'level=info msg="request served" method=GET path=/healthz status=200 duration=1ms',
]
CRASH_LINES = [
    'level=info msg="starting payments" version=2.0.1',
    'level=info msg="configuration loaded" source=environment',
    'level=error msg="fatal error, shutting down" exit_code=1',
]
API_SERVICE_LINES = [
    "INFO starting api-service 1.4.2",
    "INFO connected to orders-db",
    "ERROR: NullPointerException in OrderHandler.process()",
]


def _lines(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


def _ready(core: Any, ns: str, name: str) -> bool:
    conditions = core.read_namespaced_pod(name, ns).status.conditions or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def _extra_pods(api: ApiClient, door: Door) -> str:
    """A pod of api-service whose name says nothing of it, a finished Job's pod, an unscheduled pod."""
    core: Any = CoreV1Api(api)
    batch: Any = BatchV1Api(api)
    apps: Any = AppsV1Api(api)
    ns = door.sandbox("default")
    # A pod made by hand with api-service's app label only. Once kwok has started it, it gets the
    # pod-template-hash of the ReplicaSet that runs api-service now, which adopts it and, with one pod
    # too many, deletes the crash-looping one (a pod that is not ready is the first to go).
    rs = next(r for r in apps.list_namespaced_replica_set(ns).items if r.spec.replicas)
    spec = {
        "nodeSelector": {"kubernetes.io/hostname": "worker-1"},
        "containers": [{"name": "api-service", "image": "registry.local/api:1.4.2"}],
    }
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "zq8v4", "labels": {"app": "api-service"}}, "spec": spec}
    )
    wait_for(lambda: _ready(core, ns, "zq8v4"), timeout=60, what="pod zq8v4 ready")
    core.patch_namespaced_pod("zq8v4", ns, {"metadata": {"labels": dict(rs.spec.selector.match_labels)}})

    def adopted() -> bool:
        owners = core.read_namespaced_pod("zq8v4", ns).metadata.owner_references or []
        pods = core.list_namespaced_pod(
            ns, label_selector=f"pod-template-hash={rs.metadata.labels['pod-template-hash']}"
        )
        live = [p for p in pods.items if not p.metadata.deletion_timestamp]
        return [o.uid for o in owners if o.controller] == [rs.metadata.uid] and len(live) == rs.spec.replicas

    wait_for(adopted, timeout=60, what="pod zq8v4 adopted by its ReplicaSet")
    # A Job that has run: the Job controller makes its pod, kwok runs it to completion.
    batch.create_namespaced_job(
        ns,
        {
            "metadata": {"name": "nightly-report"},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "app", "image": "registry.local/report:3.1"}],
                    }
                },
            },
        },
    )
    wait_for(
        lambda: batch.read_namespaced_job("nightly-report", ns).status.succeeded == 1,
        timeout=60,
        what="job nightly-report complete",
    )
    job_pod = str(
        core.list_namespaced_pod(ns, label_selector="job-name=nightly-report").items[0].metadata.name
    )
    # A pod no node fits: the scheduler leaves it pending.
    queued = {
        "nodeSelector": {"disktype": "ssd"},
        "containers": [{"name": "app", "image": "registry.local/report:3.1"}],
    }
    core.create_namespaced_pod(
        ns, {"metadata": {"name": "p4x7w", "labels": {"app": "queued"}}, "spec": queued}
    )
    return job_pod


@dataclass
class PodDoor(Door):
    """The module's door, and the name the Job controller gave the Job's pod."""

    job_pod: str = ""


@pytest.fixture(scope="module")
def pod_door(cluster: Cluster, api: ApiClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PodDoor]:
    tmp = tmp_path_factory.mktemp("pod-io")
    gw = GatewayThread(cluster.kubeconfig, tmp / "data")
    try:
        with built_environment(api, POD_FIXTURES) as env:
            creds = gw.gateway.register(env)
            door = Door(gw, env, creds, write_kubeconfig(creds, tmp))
            yield PodDoor(door.gw, door.env, door.creds, door.kubeconfig, job_pod=_extra_pods(api, door))
    finally:
        gw.stop()


def _pods(door: Door, namespace: str, ready: bool | None = None) -> list[str]:
    out = door.kubectl(KUBECTL, "get", "pods", "-n", namespace, "-o", "json")
    items = json.loads(out.stdout)["items"]
    return [
        p["metadata"]["name"]
        for p in items
        if ready is None or (p["status"].get("containerStatuses") or [{}])[0].get("ready") is ready
    ]


def _as_declared(door: Door, text: str) -> str:
    """The real API server's words with the sandbox's names said as the agent knows them."""
    for binding in door.env.namespaces:
        text = text.replace(f'"{binding.sandbox}"', f'"{binding.declared}"')
    return text.replace(f":{door.env.control_namespace}:", ":default:")


@pytest.mark.parametrize(
    ("command", "subresource"),
    [
        (("exec", "{pod}", "-n", "{ns}", "--", "cat", "/etc/passwd"), "exec"),
        (("exec", "-it", "{pod}", "-n", "{ns}", "--", "sh"), "exec"),
        (("attach", "{pod}", "-n", "{ns}"), "attach"),
        (("port-forward", "{pod}", "-n", "{ns}", ":8080"), "portforward"),
    ],
    ids=["exec", "exec-it", "attach", "port-forward"],
)
@pytest.mark.parametrize("namespace", ["default", "prod"])
def test_exec_attach_and_port_forward_are_refused_as_the_api_server_refuses_them(
    pod_door: Door, cluster: Cluster, command: tuple[str, ...], subresource: str, namespace: str
) -> None:
    pod = _pods(pod_door, namespace, ready=True)[0]
    mark = pod_door.mark()
    ours = pod_door.kubectl(KUBECTL, *(a.format(pod=pod, ns=namespace) for a in command))
    sandbox_ns = pod_door.sandbox(namespace)
    agent = f"--as=system:serviceaccount:{pod_door.env.control_namespace}:agent"
    real = cluster.kubectl(
        agent, *(a.format(pod=pod, ns=sandbox_ns) for a in command), kubectl=KUBECTL, check=False
    )
    message = (
        f'pods "{pod}" is forbidden: User "system:serviceaccount:default:agent" cannot create resource '
        f'"pods/{subresource}" in API group "" in the namespace "{namespace}"'
    )
    assert (ours.returncode, ours.stdout) == (1, "")
    assert message in ours.stderr
    assert ours.stderr == _as_declared(pod_door, real.stderr)
    attempts = [e for e in pod_door.since(mark) if e.subresource == subresource]
    assert attempts  # the websocket upgrade (GET) and, after it, the SPDY one (POST)
    assert {(e.response_code, e.name, e.namespace) for e in attempts} == {(403, pod, namespace)}
    command_name = "port-forward" if subresource == "portforward" else subresource
    assert {e.note for e in attempts} == {
        f"refused: {command_name} (least privilege: no command or connection into a container)"
    }


def _healthy_and_crashing(door: Door, namespace: str) -> tuple[str, str]:
    """A pod that never restarted, and the crash-looping one just after a crash: in back-off its log is
    that of the run that crashed, for the 10 s at least before kwok starts it again (a service starting)."""

    def split() -> tuple[str, str] | None:
        out = door.kubectl(KUBECTL, "get", "pods", "-n", namespace, "-o", "json")
        statuses = {
            p["metadata"]["name"]: p["status"]["containerStatuses"][0]
            for p in json.loads(out.stdout)["items"]
        }
        healthy = [name for name, s in statuses.items() if s["restartCount"] == 0]
        now = datetime.now(UTC)
        crashing = [
            name
            for name, s in statuses.items()
            if s["restartCount"] > 0
            and "waiting" in s["state"]
            and now - datetime.fromisoformat(s["lastState"]["terminated"]["finishedAt"]) < JUST_CRASHED
        ]
        return (healthy[0], crashing[0]) if healthy and crashing else None

    found: tuple[str, str] = wait_for(
        split, timeout=60, what=f"a healthy pod and one that just crashed in {namespace}"
    )
    return found


def test_logs_of_a_pod_without_declared_logs_agree_with_its_state(pod_door: Door) -> None:
    ready, crashing = _healthy_and_crashing(pod_door, "prod")
    assert pod_door.kubectl(KUBECTL, "logs", ready, "-n", "prod").stdout == _lines(*SERVICE_LINES)
    assert pod_door.kubectl(
        KUBECTL, "logs", ready, "-n", "prod", "-c", "payments", "--tail=2"
    ).stdout == _lines(*SERVICE_LINES[-2:])
    for extra in ((), ("--previous",)):
        out = pod_door.kubectl(KUBECTL, "logs", crashing, "-n", "prod", *extra)
        assert (out.returncode, out.stdout) == (0, _lines(*CRASH_LINES)), out.stderr
    never = pod_door.kubectl(KUBECTL, "logs", ready, "-n", "prod", "--previous")
    assert never.returncode == 1
    assert f'previous terminated container "payments" in pod "{ready}" not found' in never.stderr
    by_label = pod_door.kubectl(KUBECTL, "logs", "-l", "app=payments", "-n", "prod")
    assert sorted(by_label.stdout.splitlines()) == sorted([*SERVICE_LINES, *CRASH_LINES]), by_label
    one = pod_door.kubectl(KUBECTL, "logs", "deployment/payments", "-n", "prod")
    assert one.stdout in {_lines(*SERVICE_LINES), _lines(*CRASH_LINES)}
    stamped = pod_door.kubectl(KUBECTL, "logs", ready, "-n", "prod", "--timestamps", "--tail=1").stdout
    assert stamped.split(" ", 1)[1] == SERVICE_LINES[-1] + "\n"
    assert datetime.fromisoformat(stamped.split(" ", 1)[0].replace("Z", "+00:00")) <= datetime.now(UTC)


def test_logs_follow_owner_references_not_pod_names(pod_door: PodDoor, cluster: Cluster) -> None:
    mark = pod_door.mark()
    declared = pod_door.kubectl(KUBECTL, "logs", "zq8v4")
    assert (declared.returncode, declared.stdout) == (0, _lines(*API_SERVICE_LINES)), declared.stderr
    job = pod_door.kubectl(KUBECTL, "logs", pod_door.job_pod)
    assert job.stdout == _lines(
        'level=info msg="starting app" version=3.1',
        'level=info msg="processing"',
        'level=info msg="finished" exit_code=0',
    )
    assert pod_door.kubectl(KUBECTL, "logs", "job/nightly-report").stdout == job.stdout
    for extra in ((), ("--previous",)):  # no node runs it: the API server asks no kubelet, streams nothing
        unscheduled = pod_door.kubectl(KUBECTL, "logs", "p4x7w", *extra)
        real = cluster.kubectl("logs", "p4x7w", "-n", pod_door.sandbox("default"), *extra, kubectl=KUBECTL)
        assert (
            (unscheduled.returncode, unscheduled.stdout, unscheduled.stderr)
            == (0, "", "")
            == (
                real.returncode,
                real.stdout,
                real.stderr,
            )
        )
    missing = pod_door.kubectl(KUBECTL, "logs", "web-1")
    real = cluster.kubectl("logs", "web-1", "-n", pod_door.sandbox("default"), kubectl=KUBECTL, check=False)
    assert missing.returncode == real.returncode == 1
    assert missing.stderr == _as_declared(pod_door, real.stderr)
    assert 'pods "web-1" not found in namespace "default"' in missing.stderr
    raw = pod_door.kubectl(KUBECTL, "get", "--raw", "/api/v1/namespaces/default/pods/web-1/log")
    real_raw = cluster.kubectl(
        "get",
        "--raw",
        f"/api/v1/namespaces/{pod_door.sandbox('default')}/pods/web-1/log",
        kubectl=KUBECTL,
        check=False,
    )
    assert (raw.returncode, raw.stderr) == (1, real_raw.stderr)
    assert raw.stderr == 'Error from server (NotFound): pods "web-1" not found\n'
    served = {e.name: (e.response_code, e.served) for e in pod_door.since(mark) if e.subresource == "log"}
    assert served["zq8v4"] == (200, ["logs/api-service"])
    assert served[pod_door.job_pod] == (200, [])
    assert served["web-1"][0] == 404


def test_top_pod_memory_is_the_prometheus_memory_of_the_same_workload(pod_door: Door) -> None:
    top = pod_door.kubectl(KUBECTL, "top", "pod", "-n", "prod", "--no-headers")
    assert top.returncode == 0, top.stderr
    assert {tuple(line.split()) for line in top.stdout.splitlines()} == {
        (pod, "5m", "300Mi") for pod in _pods(pod_door, "prod")
    }
    query = "container_memory_working_set_bytes{service='payments'}"
    url = f"{pod_door.creds.server}/prometheus/api/v1/query?query={urllib.parse.quote(query)}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {pod_door.creds.token}"})
    context = ssl.create_default_context(cafile=str(pod_door.gw.gateway.ca_cert))
    with urllib.request.urlopen(request, context=context, timeout=10) as resp:
        result = json.loads(resp.read())["data"]["result"]
    assert [float(r["value"][1]) for r in result] == [300 * 1024**2]
    default = pod_door.kubectl(KUBECTL, "top", "pod", "zq8v4", "--no-headers")
    assert default.stdout.split() == ["zq8v4", "950m", "250Mi"]  # api-service's declared signals
    nodes = pod_door.kubectl(KUBECTL, "top", "node", "worker-1", "--no-headers")
    assert nodes.stdout.split()[:3] == ["worker-1", "3880m", "97%"]
