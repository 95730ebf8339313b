"""The chart's sandbox control plane runs as the local plane does: the same flags, Stage CRD and images.

The local plane's components (operator/oasis_operator/localcluster/components.py) are the one source; each
test computes their arguments with the paths where the chart's pods mount the Secret, and compares. A flag
may differ only where it says where a thing is (a Service, a file name of the Secret, a port) or how the
pod serves its health endpoint; each such flag is listed with its reason, and must exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from oasis_operator.localcluster.components import (
    apiserver_args,
    controller_manager_args,
    kwok_args,
    scheduler_args,
)
from oasis_operator.localcluster.kwok import STAGE_CRD
from oasis_operator.pki import Pki
from tests.unit.chart.chart_render import Manifest, find, render

PKI_DIR = Path("/etc/kubernetes/pki")
CHART_PKI = Pki(PKI_DIR)


def _pod(objects: list[Manifest], suffix: str) -> dict[str, Any]:
    spec: dict[str, Any] = find(objects, "Deployment", suffix)["spec"]["template"]["spec"]
    return spec


def _flags(argv: list[str]) -> dict[str, str]:
    """`--name=value` arguments by name (a bare `--name` has the value ""); every argument is a flag."""
    flags: dict[str, str] = {}
    for arg in argv:
        assert arg.startswith("--"), arg
        name, _, value = arg.removeprefix("--").partition("=")
        assert name not in flags, f"{name} given twice"
        flags[name] = value
    return flags


def _compare(
    local: dict[str, str], chart: dict[str, str], local_only: dict[str, str], chart_only: dict[str, str]
) -> None:
    assert set(local_only) <= set(local), "a listed local-only flag is gone: drop it from the list"
    assert set(chart_only) <= set(chart), "a listed chart-only flag is gone: drop it from the list"
    shared_local = {k: v for k, v in local.items() if k not in local_only}
    shared_chart = {k: v for k, v in chart.items() if k not in chart_only}
    assert shared_chart == shared_local


def test_controller_manager_runs_the_local_planes_controllers_and_flags() -> None:
    [container] = _pod(render(), "-sandbox-controller-manager")["containers"]
    assert container["command"][0] == "kube-controller-manager"
    local = _flags(controller_manager_args(CHART_PKI, PKI_DIR / "controller-manager.kubeconfig"))
    _compare(
        local,
        _flags(container["command"][1:]),
        local_only={"secure-port": "the pod serves /healthz on the default port for its liveness probe"},
        chart_only={
            "authentication-kubeconfig": "the health endpoint's delegated authentication",
            "authorization-kubeconfig": "the health endpoint's delegated authorization",
            "cert-dir": "its serving certificate, written to /tmp (the root filesystem is read-only)",
            "use-service-account-credentials": "each controller acts as its own kube-system ServiceAccount",
        },
    )


def test_scheduler_runs_with_the_local_planes_flags_and_its_own_identity() -> None:
    pod = _pod(render(), "-sandbox-scheduler")
    [container] = pod["containers"]
    assert container["command"][0] == "kube-scheduler"
    local = _flags(scheduler_args(PKI_DIR / "scheduler.kubeconfig"))
    _compare(
        local,
        _flags(container["command"][1:]),
        local_only={"secure-port": "the pod serves /healthz on the default port for its liveness probe"},
        chart_only={
            "cert-dir": "its serving certificate, written to /tmp (the root filesystem is read-only)"
        },
    )
    [pki] = [v["secret"] for v in pod["volumes"] if "secret" in v]
    assert pki["items"] == [{"key": "scheduler.kubeconfig", "path": "scheduler.kubeconfig"}]


def test_apiserver_admits_and_authorises_as_the_local_plane() -> None:
    [container] = _pod(render(), "-sandbox-apiserver")["containers"]
    command = container["command"]
    local = _flags(
        apiserver_args(CHART_PKI, 2379, 6443, Path("/etc/kubernetes/audit/policy.yaml"), Path("-"))
    )
    chart = _flags(command[1:])
    differ = {
        "etcd-servers": "the etcd Service",
        "etcd-certfile": "the Secret's file name of etcd's client certificate",
        "etcd-keyfile": "the Secret's file name of its key",
        "service-cluster-ip-range": "sandbox.controlPlane.serviceCIDR",
    }
    assert set(differ) <= set(local) & set(chart)
    _compare(
        {k: v for k, v in local.items() if k not in differ},
        {k: v for k, v in chart.items() if k not in differ},
        local_only={
            "bind-address": "the pod listens on its own address",
            "advertise-address": "the pod's address",
            "audit-log-maxsize": "the audit goes to stdout (the cluster's log pipeline keeps it), no file",
            "audit-log-maxbackup": "as above",
        },
        chart_only={
            f: "the audit batches posted to the operator" for f in chart if f.startswith("audit-webhook")
        },
    )
    assert chart["enable-admission-plugins"] == "PodNodeSelector,PodTolerationRestriction"
    assert "disable-admission-plugins" not in chart


def test_kwok_runs_with_the_local_planes_arguments_after_its_stage_crd_is_served() -> None:
    objects = render()
    pod = _pod(objects, "-sandbox-kwok")
    [container] = pod["containers"]
    assert container["image"].startswith("registry.k8s.io/kwok/kwok:")
    # The image's entrypoint is kwok: the chart gives the arguments only.
    assert "command" not in container
    assert container["args"] == kwok_args(PKI_DIR / "node-simulator.kubeconfig")
    # Before kwok: the Stage CRD applied from the ConfigMap, then waited for until it is served.
    apply, established = pod["initContainers"]
    kubeconfig = "--kubeconfig=/etc/kubernetes/pki/node-simulator.kubeconfig"
    assert apply["args"][0] == established["args"][0] == kubeconfig
    assert apply["args"][2:4] == ["apply", "--server-side"]
    assert apply["args"][-1] == "--filename=/etc/kwok/stage-crd.yaml"
    assert established["args"][2:] == [
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        f"customresourcedefinition/{STAGE_CRD['metadata']['name']}",
    ]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted = {m["name"]: m["mountPath"] for m in apply["volumeMounts"]}
    assert mounted["stage-crd"] == "/etc/kwok"
    configmap = find(objects, "ConfigMap", "-sandbox-kwok")
    assert volumes["stage-crd"]["configMap"]["name"] == configmap["metadata"]["name"]
    assert volumes["pki"]["secret"]["items"] == [
        {"key": "node-simulator.kubeconfig", "path": "node-simulator.kubeconfig"}
    ]


def test_the_charts_stage_crd_is_the_local_planes() -> None:
    configmap = find(render(), "ConfigMap", "-sandbox-kwok")
    assert yaml.safe_load(configmap["data"]["stage-crd.yaml"]) == STAGE_CRD


def test_no_sandbox_plane_outside_control_plane_mode() -> None:
    for mode in ({"mode": "host"}, {"mode": "external", "kubeconfigSecret": {"name": "sbx"}}):
        names = [o["metadata"]["name"] for o in render({"sandbox": mode})]
        assert not [n for n in names if "-sandbox-scheduler" in n or "-sandbox-kwok" in n], mode
