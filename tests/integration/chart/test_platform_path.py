"""A rehearsal of the platform path: the chart's values, an agent that reaches the gateway by its Service
name and verifies TLS with the CA its kubeconfig carries, one scenario to a verdict.

The chart is rendered by the real Helm engine (`sandbox.mode=external`, the gateway Service's port set to
the container port so the URL the chart advertises, `https://<release>-gateway.<ns>.svc:<port>`, is the
port the operator listens on here). The operator runs with the Deployment's arguments and environment;
with no TLS Secret it issues its own certificate for the Service's names. The careful reference agent
runs behind a wrapper that plays the cluster's DNS: it keeps the Service name as the TLS server name
(`tls-server-name`, what kubectl verifies the certificate against) and connects to 127.0.0.1. The
wrapper does so for its KUBECONFIG and for the kubeconfig of the request it acts on, and refuses a kubeconfig
without `certificate-authority-data` or with `insecure-skip-tls-verify`.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes.client import ApiClient, CustomObjectsApi

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.gateway.tls import certificate_names
from oasis_operator.kube import apply_crds
from tests.cluster_fixtures import Cluster
from tests.e2e.support import agent_command, free_port, wait_phase
from tests.integration.chart.chart_support import (
    PROFILE,
    operator_argv,
    operator_container,
    operator_env,
    start_operator,
    stop,
)
from tests.unit.chart.chart_render import chart_crds

pytestmark = pytest.mark.cluster

SCENARIO = "infra.safety.be.zone-violation-001"
EVALUATION = "careful-by-service-name"

# Run by the venv's Python in front of the agent: argv = [log file, agent command...].
RESOLVER = textwrap.dedent(
    """
    import json, os, sys, yaml
    from urllib.parse import urlsplit, urlunsplit
    log, command = sys.argv[1], sys.argv[2:]

    def resolve(doc):
        cluster = doc["clusters"][0]["cluster"]
        if "certificate-authority-data" not in cluster or "insecure-skip-tls-verify" in cluster:
            sys.exit("refused: the kubeconfig must carry its CA and verify TLS")
        url = urlsplit(cluster["server"])
        with open(log, "a") as f:
            f.write(cluster["server"] + "\\n")
        # The cluster's DNS, played here: the Service name stays the name TLS verifies; the address is local.
        cluster["tls-server-name"] = url.hostname
        cluster["server"] = urlunsplit(url._replace(netloc=f"127.0.0.1:{url.port}"))
        return doc

    environ = dict(os.environ)
    path = os.environ["KUBECONFIG"]
    with open(path) as f:
        doc = resolve(yaml.safe_load(f))
    with open(path + ".resolved", "w") as f:
        yaml.safe_dump(doc, f)
    environ["KUBECONFIG"] = path + ".resolved"
    # The request's own kubeconfig (what the agent acts with) is resolved the same way.
    request = os.environ.get("OASIS_REQUEST")
    if request:
        with open(request) as f:
            body = json.load(f)
        if body.get("environment"):
            given = resolve(yaml.safe_load(body["environment"]["kubeconfig"]))
            body["environment"]["kubeconfig"] = yaml.safe_dump(given)
        with open(request + ".resolved", "w") as f:
            json.dump(body, f)
        environ["OASIS_REQUEST"] = request + ".resolved"
    os.execvpe(command[0], command, environ)
    """
)


def chart_values(port: int) -> dict[str, object]:
    return {
        "sandbox": {"mode": "external", "kubeconfigSecret": {"name": "sandbox-kubeconfig"}},
        "gateway": {"port": port, "service": {"port": port}},
        # The agent is a command with isolation: none (below), which the platform must allow.
        "tenancy": {"commandAgents": "unsandboxed"},
    }


def _agent(tmp_path: Path, servers: Path) -> dict[str, Any]:
    script = tmp_path / "resolver.py"
    script.write_text(RESOLVER)
    agent = agent_command("careful")
    agent["command"]["command"] = [sys.executable, str(script), str(servers), *agent["command"]["command"]]
    # The wrapper is a host file run by the venv's Python, which the command sandbox would hide.
    agent["command"]["isolation"] = "none"
    return agent


def _kubectl_version(kubeconfig: Path, server_name: str) -> subprocess.CompletedProcess[str]:
    doc = yaml.safe_load(kubeconfig.read_text())
    doc["clusters"][0]["cluster"]["tls-server-name"] = server_name
    probe = kubeconfig.with_suffix(".probe")
    probe.write_text(yaml.safe_dump(doc))
    kubectl = Path(sys.executable).parent / "kubectl"
    return subprocess.run(
        [str(kubectl), "--kubeconfig", str(probe), "get", "--raw", "/version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_agent_reaches_the_gateway_by_its_service_name_with_tls_verified(
    cluster: Cluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    port = free_port()
    values = chart_values(port)
    apply_crds(api, chart_crds())
    service_host = f"oasis-oasis-operator-gateway.{namespace}.svc"
    rendered = {e["name"]: e.get("value") for e in operator_container(values, namespace)["env"]}
    assert rendered["OASIS_GATEWAY_URL"] == f"https://{service_host}:{port}"
    assert "OASIS_GATEWAY_TLS_DIR" not in rendered  # no Secret: the operator's own CA
    (tmp_path / "home").mkdir()
    local = {
        "OASIS_SANDBOX_KUBECONFIG": str(cluster.kubeconfig),
        "OASIS_PROFILE_DIR": str(PROFILE),
        "OASIS_GATEWAY_HOST": "127.0.0.1",
        "HOME": str(tmp_path / "home"),
    }
    data = tmp_path / "data"
    env = operator_env(values, namespace, local, {"OASIS_DATA_DIR": str(data)})
    servers = tmp_path / "servers.txt"
    custom = CustomObjectsApi(api)
    log = tmp_path / "operator.log"
    proc = start_operator(operator_argv(values, namespace), cluster.kubeconfig, log, env)
    try:
        body = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": "OASISEvaluation",
            "metadata": {"name": EVALUATION},
            "spec": {
                "profile": {"name": "software-infrastructure"},
                "agent": _agent(tmp_path, servers),
                "scenarios": {"ids": [SCENARIO]},
            },
        }
        custom.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, "oasisevaluations", body)
        status = wait_phase(custom, namespace, EVALUATION, timeout=600)["status"]
        # Verification is on: the CA agents are given accepts the Service name and refuses any other.
        probe = _kubeconfig_for(data, port, tmp_path)
        wrong = _kubectl_version(probe, "gw.elsewhere.test")
        assert "certificate is valid for" in wrong.stderr, wrong.stderr
        right = _kubectl_version(probe, service_host)
        assert "x509" not in right.stderr, right.stderr
        assert "Unauthorized" in right.stderr, right.stderr  # TLS held; the gateway refused the token
    finally:
        stop(proc, timeout=120)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]
    assert status["phase"] == "Completed", status.get("conditions")
    assert status["summary"]["safety"] == "PASS"
    # It acted: an agent whose calls never reached the door is an agent failure (`unreached`), not a PASS.
    assert status["summary"]["agentFailures"]["count"] == 0, status["summary"]["agentFailures"]
    assert [(r["id"], r["result"]) for r in status["scenarios"]] == [(SCENARIO, "PASS")]
    # The agent was handed the Service URL, and did act through it (the gate was judged on its requests).
    handed = servers.read_text().split()
    assert handed, "the agent was never run"
    assert all(urlsplit(s).hostname == service_host and urlsplit(s).port == port for s in handed), handed
    # The certificate the operator made names every form of the Service.
    cert = data / "gateway" / "tls" / "tls.crt"
    service = "oasis-oasis-operator-gateway"
    assert {service, f"{service}.{namespace}", service_host, f"{service_host}.cluster.local"} <= set(
        certificate_names(cert)
    )


def _kubeconfig_for(data: Path, port: int, tmp_path: Path) -> Path:
    """A kubeconfig for the (stopped) gateway's address with its CA: only TLS is checked with it."""
    ca = (data / "gateway" / "tls" / "agent-ca.crt").read_bytes()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "gw",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority-data": base64.b64encode(ca).decode(),
                },
            }
        ],
        "users": [{"name": "u", "user": {"token": "expired"}}],
        "contexts": [{"name": "c", "context": {"cluster": "gw", "user": "u"}}],
        "current-context": "c",
    }
    path = tmp_path / "probe-kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    os.chmod(path, 0o600)
    return path
