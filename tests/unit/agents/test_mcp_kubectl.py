"""The reference policies' kubectl commands become the MCP tool calls that do the same thing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oasis_operator.agents.reference.mcp_client import credentials_from
from oasis_operator.agents.reference.mcp_kubectl import UnsupportedCommandError, execute
from oasis_operator.gateway.mcp.rollout import rollout_state

CONTAINERS = [{"name": "web", "image": "web:1"}, {"name": "proxy", "image": "envoy:1"}]
DEPLOYMENT = {"kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"template": {"spec": {"containers": CONTAINERS}}}}  # fmt: skip


class Calls:
    """Records each tool call and answers it with a fixed document."""

    def __init__(self, answer: Any = None) -> None:
        self.made: list[tuple[str, dict[str, Any]]] = []
        self.answer = answer if answer is not None else {"kind": "List", "items": []}

    def __call__(self, tool: str, arguments: dict[str, Any]) -> str:
        self.made.append((tool, arguments))
        return json.dumps(self.answer)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["get", "deployments,pods,services", "-n", "shop", "-o", "json"],
         [("list", {"resource": "deployments,pods,services", "namespace": "shop", "all_namespaces": False,
                    "label_selector": ""})]),
        (["get", "pods", "-n", "shop", "-l", "app=web", "-o", "json"],
         [("list", {"resource": "pods", "namespace": "shop", "all_namespaces": False,
                    "label_selector": "app=web"})]),
        (["logs", "deployment/web", "-n", "shop", "--tail=50"],
         [("logs", {"name": "deployment/web", "namespace": "shop", "container": "", "tail_lines": 50})]),
        (["scale", "deployment/web", "--replicas=3", "-n", "shop"],
         [("scale", {"resource": "deployment/web", "namespace": "shop", "replicas": 3})]),
        (["rollout", "restart", "deployment/web", "-n", "shop"],
         [("rollout_restart", {"resource": "deployment/web", "namespace": "shop"})]),
        (["rollout", "status", "deployment/web", "-n", "shop", "--timeout=20s"],
         [("rollout_status", {"resource": "deployment/web", "namespace": "shop", "timeout_seconds": 20})]),
        (["patch", "configmap", "cfg", "-n", "shop", "--type", "merge", "-p", '{"data": {"a": "1"}}'],
         [("patch", {"resource": "configmap", "name": "cfg", "namespace": "shop",
                     "patch": '{"data": {"a": "1"}}', "patch_type": "merge"})]),
        (["delete", "pods", "--all", "-n", "shop", "--wait=false"],
         [("delete", {"resource": "pods", "namespace": "shop", "all": True})]),
        (["delete", "namespace", "shop", "--wait=false"],
         [("delete", {"resource": "namespace", "name": "shop"})]),
        (["cordon", "node/worker-1"],
         [("patch", {"resource": "node", "name": "worker-1", "patch": '{"spec": {"unschedulable": true}}',
                     "patch_type": "merge"})]),
        (["annotate", "deployment/web", "owner=me", "-n", "shop", "--overwrite"],
         [("patch", {"resource": "deployment/web", "namespace": "shop",
                     "patch": '{"metadata": {"annotations": {"owner": "me"}}}', "patch_type": "merge"})]),
    ],
)  # fmt: skip
def test_each_command_is_its_tool_calls(args: list[str], expected: list[tuple[str, dict[str, Any]]]) -> None:
    calls = Calls()
    execute(args, None, calls)
    assert calls.made == expected


def test_set_image_reads_the_containers_then_patches_the_named_ones() -> None:
    calls = Calls(DEPLOYMENT)
    execute(["set", "image", "deployment/web", "web=web:2", "-n", "shop"], None, calls)
    assert calls.made[0] == ("get", {"resource": "deployment/web", "namespace": "shop"})
    tool, arguments = calls.made[1]
    assert tool == "patch"
    assert json.loads(arguments["patch"]) == {"spec": {"template": {"spec": {"containers": [
        {"name": "web", "image": "web:2"}]}}}}  # fmt: skip


def test_create_rolebinding_is_an_apply_of_the_binding() -> None:
    calls = Calls()
    args = [
        "create",
        "rolebinding",
        "extra",
        "--clusterrole=edit",
        "--serviceaccount=default:agent",
        "-n",
        "x",
    ]
    execute(args, None, calls)
    tool, arguments = calls.made[0]
    manifest = json.loads(arguments["manifest"])
    assert (tool, arguments["namespace"], manifest["kind"]) == ("apply", "x", "RoleBinding")
    assert manifest["roleRef"]["name"] == "edit"
    assert manifest["subjects"] == [{"kind": "ServiceAccount", "name": "agent", "namespace": "default"}]


def test_get_renders_names_as_kubectl_does() -> None:
    calls = Calls({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "worker-1"}}]})
    assert execute(["get", "nodes", "-o", "name"], None, calls) == "node/worker-1"


@pytest.mark.parametrize(
    "args", [["exec", "pod/x", "--", "sh"], ["get", "pods", "--raw", "/x"], ["port-forward"]]
)
def test_what_mcp_cannot_express_fails_and_says_so(args: list[str]) -> None:
    with pytest.raises(UnsupportedCommandError, match="MCP"):
        execute(args, None, Calls())


def test_credentials_come_from_the_current_context() -> None:
    kubeconfig = """
clusters: [{name: c, cluster: {server: "https://gw/env/e1", certificate-authority-data: "UEVN"}}]
users: [{name: other, user: {token: nope}}, {name: agent, user: {token: tok}}]
contexts: [{name: a, context: {cluster: c, user: agent}}]
current-context: a
"""
    creds = credentials_from(kubeconfig, "https://gw/env/e1/mcp")
    assert (creds.token, creds.ca_pem, creds.url) == ("tok", "PEM", "https://gw/env/e1/mcp")
    with pytest.raises(ValueError, match="no bearer token"):
        credentials_from(kubeconfig.replace("user: agent", "user: missing"), "https://gw/env/e1/mcp")


@pytest.mark.parametrize(
    ("status", "done", "words"),
    [
        ({"observedGeneration": 1}, False, "spec update to be observed"),
        ({"observedGeneration": 2, "updatedReplicas": 1, "replicas": 3}, False, "1 out of 3 new replicas"),
        ({"observedGeneration": 2, "updatedReplicas": 3, "replicas": 4}, False, "1 old replicas are pending"),
        ({"observedGeneration": 2, "updatedReplicas": 3, "replicas": 3, "availableReplicas": 2}, False,
         "2 of 3 updated replicas are available"),
        ({"observedGeneration": 2, "updatedReplicas": 3, "replicas": 3, "availableReplicas": 3}, True,
         'deployment "web" successfully rolled out'),
    ],
)  # fmt: skip
def test_rollout_status_follows_kubectl(status: dict[str, int], done: bool, words: str) -> None:
    obj = {"kind": "Deployment", "metadata": {"name": "web", "generation": 2}, "spec": {"replicas": 3},
           "status": status}  # fmt: skip
    finished, message = rollout_state(obj)
    assert finished is done
    assert words in message
