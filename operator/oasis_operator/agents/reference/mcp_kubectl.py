"""The reference policies' kubectl, spoken over MCP: each command becomes calls of the gateway's MCP tools.

A reference agent "via MCP" runs the very same policy as over kubectl; only its hands change. `McpKubectl`
has the `Kubectl` interface (`run(*args)` → exit code and output, `patch_data`, `actions`) and turns the
kubectl commands the policies use into tool calls (`get`, `list`, `logs`, `patch`, `scale`,
`rollout_*`, `delete`, `apply`, ...), so the same decisions reach the sandbox through MCP alone. A
command with no MCP equivalent fails with exit 1 and says so, as kubectl fails on an unknown command.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from oasis_operator.agents.protocol import AgentAction
from oasis_operator.agents.reference.kubectl import Kubectl
from oasis_operator.agents.reference.mcp_client import McpConnectError, McpConnection, credentials_from

MAX_RESULT = 20_000
VALUE_FLAGS = {
    "-n": "namespace", "--namespace": "namespace", "-o": "output", "--output": "output", "-l": "selector",
    "--selector": "selector", "-p": "patch", "--patch": "patch", "--type": "type", "--replicas": "replicas",
    "--tail": "tail", "--timeout": "timeout", "-c": "container", "--container": "container",
    "--to-revision": "to_revision", "-f": "filename", "--filename": "filename",
    "--clusterrole": "clusterrole", "--serviceaccount": "serviceaccount", "--for": "for", "--wait": "wait",
    "--grace-period": "grace",
}  # fmt: skip
BOOL_FLAGS = {"-A": "all_namespaces", "--all-namespaces": "all_namespaces", "--all": "all",
              "--previous": "previous", "--overwrite": "overwrite", "--timestamps": "timestamps"}  # fmt: skip


class UnsupportedCommandError(Exception):
    """A kubectl command the MCP tools cannot express."""


@dataclass
class Command:
    """A parsed kubectl command line."""

    words: list[str]
    flags: dict[str, str] = field(default_factory=dict)

    def flag(self, name: str, default: str = "") -> str:
        return self.flags.get(name, default)

    def ns(self) -> dict[str, str]:
        return {"namespace": self.flags["namespace"]} if "namespace" in self.flags else {}


def parse(args: list[str]) -> Command:
    """Words and flags of a kubectl command (`--flag=value`, `--flag value`, `-n value`)."""
    cmd = Command(words=[])
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        key, eq, value = arg.partition("=")
        if key in VALUE_FLAGS:
            cmd.flags[VALUE_FLAGS[key]] = value if eq else (rest.pop(0) if rest else "")
        elif key in BOOL_FLAGS:
            cmd.flags[BOOL_FLAGS[key]] = value if eq else "true"
        elif arg.startswith("-"):
            raise UnsupportedCommandError(f"error: unknown flag {key} (not available over MCP)")
        else:
            cmd.words.append(arg)
    return cmd


Call = Callable[[str, dict[str, Any]], str]


def _seconds(text: str) -> int:
    text = text.strip()
    units = {"s": 1, "m": 60, "h": 3600}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text or 0)


def _get(cmd: Command, call: Call, stdin: str | None) -> str:
    kinds, names = cmd.words[0], cmd.words[1:]
    output = cmd.flag("output")
    if names and "," not in kinds:
        docs = [json.loads(call("get", {"resource": kinds, "name": n, **cmd.ns()})) for n in names]
        if output == "json":
            return json.dumps(docs[0] if len(docs) == 1 else {"kind": "List", "items": docs}, indent=2)
        items = docs
    else:
        listed = json.loads(call("list", {
            "resource": kinds, **cmd.ns(), "all_namespaces": cmd.flag("all_namespaces") == "true",
            "label_selector": cmd.flag("selector"),
        }))  # fmt: skip
        if output == "json":
            return json.dumps(listed, indent=2)
        items = listed["items"]
    if output == "yaml":
        return yaml.safe_dump(items[0] if names and len(items) == 1 else {"kind": "List", "items": items})
    named = [f"{i['kind'].lower()}/{i['metadata']['name']}" for i in items]
    if output == "name":
        return "\n".join(named)
    return "NAME\n" + "\n".join(n.split("/", 1)[1] for n in named)


def _target(cmd: Command, index: int = 0) -> dict[str, str]:
    words = cmd.words[index:]
    if not words:
        raise UnsupportedCommandError("error: you must specify the type of resource and its name")
    if "/" in words[0]:
        return {"resource": words[0], **cmd.ns()}
    if len(words) < 2:
        return {"resource": words[0], **cmd.ns()}
    return {"resource": words[0], "name": words[1], **cmd.ns()}


def _logs(cmd: Command, call: Call, stdin: str | None) -> str:
    args: dict[str, Any] = {"name": cmd.words[0], **cmd.ns(), "container": cmd.flag("container")}
    if cmd.flag("tail"):
        args["tail_lines"] = int(cmd.flag("tail"))
    if cmd.flag("previous") == "true":
        args["previous"] = True
    return call("logs", args)


def _patch(cmd: Command, call: Call, stdin: str | None) -> str:
    return call(
        "patch", {**_target(cmd), "patch": cmd.flag("patch"), "patch_type": cmd.flag("type", "strategic")}
    )


def _metadata(field_name: str) -> Callable[[Command, Call, str | None], str]:
    """`kubectl annotate|label TARGET k=v ...` as a merge patch of the metadata."""

    def run(cmd: Command, call: Call, stdin: str | None) -> str:
        target = _target(cmd)
        pairs = cmd.words[1:] if "/" in cmd.words[0] else cmd.words[2:]
        values: dict[str, str | None] = {}
        for pair in pairs:
            key, eq, value = pair.partition("=")
            values[key.rstrip("-")] = value if eq else None
        patch = json.dumps({"metadata": {field_name: values}})
        return call("patch", {**target, "patch": patch, "patch_type": "merge"})

    return run


def _set_image(cmd: Command, call: Call, stdin: str | None) -> str:
    if not cmd.words or cmd.words[0] != "image":
        raise UnsupportedCommandError("error: only `kubectl set image` is available over MCP")
    sub = Command(cmd.words[1:], cmd.flags)
    target = _target(sub)
    current = json.loads(call("get", target))
    wanted = dict(pair.partition("=")[::2] for pair in sub.words[1:] if "=" in pair)
    containers = current["spec"]["template"]["spec"]["containers"]
    changed = [
        {"name": c["name"], "image": wanted.get(c["name"], wanted.get("*"))}
        for c in containers
        if c["name"] in wanted or "*" in wanted
    ]
    patch = json.dumps({"spec": {"template": {"spec": {"containers": changed}}}})
    return call("patch", {**target, "patch": patch, "patch_type": "strategic"})


def _rollout(cmd: Command, call: Call, stdin: str | None) -> str:
    action, target = cmd.words[0], _target(cmd, 1)
    if action == "status":
        return call("rollout_status", {**target, "timeout_seconds": _seconds(cmd.flag("timeout", "30s"))})
    if action == "undo":
        return call("rollout_undo", {**target, "to_revision": int(cmd.flag("to_revision", "0"))})
    if action == "restart":
        return call("rollout_restart", target)
    raise UnsupportedCommandError(f"error: rollout {action} is not available over MCP")


def _create(cmd: Command, call: Call, stdin: str | None) -> str:
    if cmd.flag("filename") == "-":
        return call("apply", {"manifest": stdin or "", **cmd.ns()})
    if cmd.words[:1] == ["rolebinding"] and len(cmd.words) > 1:
        subjects = []
        if cmd.flag("serviceaccount"):
            sa_ns, _, sa = cmd.flag("serviceaccount").partition(":")
            subjects.append({"kind": "ServiceAccount", "name": sa, "namespace": sa_ns})
        manifest = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": cmd.words[1]}, "subjects": subjects,
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": cmd.flag("clusterrole")}}  # fmt: skip
        return call("apply", {"manifest": json.dumps(manifest), **cmd.ns()})
    raise UnsupportedCommandError(f"error: create {' '.join(cmd.words[:1])} is not available over MCP")


def _delete(cmd: Command, call: Call, stdin: str | None) -> str:
    args: dict[str, Any] = _target(cmd) if len(cmd.words) > 1 or "/" in cmd.words[0] else {
        "resource": cmd.words[0], **cmd.ns()}  # fmt: skip
    if cmd.flag("all") == "true":
        args["all"] = True
    if cmd.flag("selector"):
        args["label_selector"] = cmd.flag("selector")
    return call("delete", args)


def _cordon(cmd: Command, call: Call, stdin: str | None) -> str:
    node = cmd.words[0].split("/", 1)[-1]
    return call("patch", {"resource": "node", "name": node, "patch": '{"spec": {"unschedulable": true}}',
                          "patch_type": "merge"})  # fmt: skip


COMMANDS: dict[str, Callable[[Command, Call, str | None], str]] = {
    "get": _get,
    "describe": lambda cmd, call, _: call("describe", _target(cmd)),
    "logs": _logs,
    "events": lambda cmd, call, _: call("events", {**cmd.ns(), "for_object": cmd.flag("for")}),
    "apply": lambda cmd, call, stdin: call("apply", {"manifest": stdin or "", **cmd.ns()}),
    "create": _create,
    "patch": _patch,
    "annotate": _metadata("annotations"),
    "label": _metadata("labels"),
    "set": _set_image,
    "scale": lambda cmd, call, _: call("scale", {**_target(cmd), "replicas": int(cmd.flag("replicas", "0"))}),
    "rollout": _rollout,
    "delete": _delete,
    "cordon": _cordon,
}


class ToolAnswerError(Exception):
    """A tool answered with an error; its text is kubectl's stderr."""


class McpKubectl(Kubectl):
    """The `Kubectl` of a reference agent whose only hands are the environment's MCP tools."""

    def __init__(self, kubeconfig: str, url: str) -> None:  # no kubectl binary, no files: only MCP
        self.url = url
        self.actions = []
        self._connection: McpConnection | None = None
        self._failure = "the MCP server could not be reached"
        self._kubeconfig = kubeconfig

    def __enter__(self) -> McpKubectl:
        self._connect()
        return self

    def __exit__(self, *_: object) -> None:
        if self._connection is not None:
            self._connection.__exit__()
            self._connection = None

    def _connect(self) -> None:
        self.__exit__()
        try:
            self._connection = McpConnection(credentials_from(self._kubeconfig, self.url)).__enter__()
        except (McpConnectError, ValueError) as exc:
            self._failure = str(exc)

    @property
    def kubeconfig(self) -> str:
        return self._kubeconfig

    @kubeconfig.setter
    def kubeconfig(self, value: str) -> None:
        """Other credentials (a policy switching kubeconfig): the same MCP server with their token."""
        self._kubeconfig = value
        self._connect()

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        if self._connection is None:
            raise ToolAnswerError(self._failure)
        answer = self._connection.call(tool, arguments)
        self.actions.append(AgentAction(
            tool=f"mcp:{tool}", arguments=arguments, result=answer.text[:MAX_RESULT],
            error="tool error" if answer.is_error else None,
        ))  # fmt: skip
        if answer.is_error:
            raise ToolAnswerError(answer.text)
        return answer.text

    def run(
        self, *args: str, stdin: str | None = None, note: dict[str, Any] | None = None
    ) -> tuple[int, str]:
        """Run a kubectl command through MCP tools; (exit code, output or error). `note` adds trail
        fields (operation, reasoning, trigger, state_delta) to the tool calls the command made."""
        first = len(self.actions)
        try:
            return 0, execute(list(args), stdin, self._call)
        except ToolAnswerError as exc:  # already in the actions, as the tool call it was
            return 1, str(exc)
        except (UnsupportedCommandError, ValueError, KeyError, IndexError) as exc:
            self.actions.append(AgentAction(tool="mcp", arguments=list(args), error=str(exc)))
            return 1, str(exc)
        finally:
            if note:
                for i in range(first, len(self.actions)):
                    self.actions[i] = AgentAction.model_validate({**self.actions[i].model_dump(), **note})


def execute(args: list[str], stdin: str | None, call: Call) -> str:
    """One kubectl command as MCP tool calls; its output (raises when it fails)."""
    cmd = parse(args)
    handler = COMMANDS.get(cmd.words[0]) if cmd.words else None
    if handler is None:
        raise UnsupportedCommandError(f'error: unknown command "{args[0] if args else ""}" (not over MCP)')
    return handler(Command(cmd.words[1:], cmd.flags), call, stdin)
