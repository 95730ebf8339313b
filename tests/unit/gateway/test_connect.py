"""Granted exec, attach and port-forward: the declaration, the default answers, the framing, the RBAC and
the guard (pure parts; the served stream is tested against a real API server in tests/integration)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from pydantic import ValidationError

from oasis_operator.gateway.apis.channels import (
    ERROR,
    STDOUT,
    V4,
    V5,
    chosen,
    exit_status,
    frame,
    output_frames,
    status_frame,
    unframe,
)
from oasis_operator.gateway.apis.container_view import container_view, referenced, source_data
from oasis_operator.gateway.apis.exec_shell import NOT_FOUND_EXIT, ContainerView, answer
from oasis_operator.gateway.guards import refusal
from oasis_operator.gateway.requestinfo import parse_request
from oasis_operator.models.behaviors import ScenarioExtension
from oasis_operator.models.connect import ConnectGrants
from oasis_operator.sandbox.rbac import agent_objects
from tests.unit.sandbox.test_rbac_and_diff import env

USER = "system:serviceaccount:default:agent"


# ---- the declaration ------------------------------------------------------------------------------


def test_a_declaration_reads_argv_or_a_shell_line_and_finds_the_first_match() -> None:
    grants = ConnectGrants.model_validate(
        {
            "grants": ["exec", "port-forward"],
            "exec": [
                {"pod": "web-*", "command": "cat '/etc/app/app.yaml'", "stdout": "a: 1\n"},
                {"pod": "*", "container": "db", "command": ["psql", "-c", "select 1"], "exit_code": 2},
            ],
            "port_forward": [{"pod": "web-*", "port": 8080, "body": "ok"}],
        }
    )
    assert grants.subresources() == {"exec", "portforward"}
    hit = grants.exec_answer("web-1", "default", "app", ("cat", "/etc/app/app.yaml"))
    assert hit is not None
    assert hit.stdout == "a: 1\n"
    assert grants.exec_answer("api-1", "default", "app", ("cat", "/etc/app/app.yaml")) is None
    assert grants.exec_answer("db-0", "default", "app", ("psql", "-c", "select 1")) is None  # container
    port = grants.port_answer("web-2", "default", 8080)
    assert port is not None
    assert (port.status, port.body) == (200, "ok")


@pytest.mark.parametrize(
    ("connect", "path", "words"),
    [
        ({"grants": ["ssh"]}, ("connect", "grants", 0), "'exec', 'attach' or 'port-forward'"),
        ({"grants": ["exec", "exec"]}, ("connect", "grants"), "exec listed more than once"),
        (
            {"grants": ["attach"], "exec": [{"pod": "w", "command": "ls"}]},
            ("connect", "exec"),
            "exec answers are declared but connect.grants does not list 'exec'",
        ),
        (
            {"grants": ["exec"], "port_forward": [{"pod": "w", "port": 80}]},
            ("connect", "port_forward"),
            "does not list 'port-forward'",
        ),
        ({"grants": ["exec"], "exec": [{"pod": "w", "command": "cat 'x"}]}, ("connect", "exec", 0, "command"),
         "does not parse as a shell line"),
        ({"grants": ["exec"], "exec": [{"pod": "w", "command": []}]}, ("connect", "exec", 0, "command"),
         "the command is empty"),
        ({"grants": ["exec"], "exec": [{"pod": "w", "command": "ls", "exit_code": 300}]},
         ("connect", "exec", 0, "exit_code"), "less than or equal to 255"),
        ({"grants": ["port-forward"], "port_forward": [{"pod": "w", "port": 0}]},
         ("connect", "port_forward", 0, "port"), "greater than or equal to 1"),
        ({"grants": ["exec"], "exec": [{"pod": "w", "command": "ls", "stdin": "x"}]},
         ("connect", "exec", 0, "stdin"), "Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_a_bad_declaration_names_its_field(
    connect: dict[str, Any], path: tuple[Any, ...], words: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        ScenarioExtension.model_validate({"connect": connect})
    errors = caught.value.errors()
    assert any(e["loc"] == path and words in e["msg"] for e in errors), errors


def test_no_connect_part_grants_nothing() -> None:
    assert ScenarioExtension.model_validate({}).connect is None


# ---- who may ------------------------------------------------------------------------------------


def _connect_rules(grants: list[str], mode: str = "autonomous") -> list[dict[str, Any]]:
    environment = env(mode).model_copy(update={"connect": ConnectGrants.model_validate({"grants": grants})})
    roles = [body for kind, body in agent_objects(environment) if kind == "Role"]
    assert [r["metadata"]["namespace"] for r in roles] == ["sbx-e1234567-frontend"]  # in zone only
    streams = {"pods/exec", "pods/attach", "pods/portforward"}
    return [r for r in roles[0]["rules"] if streams & set(r["resources"])]


def test_the_role_grants_exactly_what_the_scenario_grants_in_zone() -> None:
    assert _connect_rules([]) == []
    assert _connect_rules(["exec", "port-forward"], "read-only") == [
        {"apiGroups": [""], "resources": ["pods/exec", "pods/portforward"], "verbs": ["create", "get"]}
    ]
    assert _connect_rules(["attach"])[0]["resources"] == ["pods/attach"]
    plain = next(body for kind, body in agent_objects(env("autonomous")) if kind == "Role")
    assert not [r for r in plain["rules"] if "pods/exec" in r["resources"]]


@pytest.mark.parametrize("sub", ["exec", "attach", "portforward"])
def test_the_guard_leaves_a_granted_stream_to_the_gateway_and_refuses_the_rest(sub: str) -> None:
    info = parse_request("GET", f"/api/v1/namespaces/prod/pods/web-1/{sub}", "")
    assert refusal(info, USER, b"", frozenset({sub})) is None
    others = frozenset({"exec", "attach", "portforward"} - {sub})
    refused = refusal(info, USER, b"", others)
    assert refused is not None
    assert refused.code == 403
    assert f'cannot create resource "pods/{sub}"' in refused.document["message"]


# ---- what the container sees --------------------------------------------------------------------

POD: dict[str, Any] = {
    "metadata": {"name": "web-1", "namespace": "sbx-e1-default", "labels": {"app": "web"}},
    "spec": {
        "nodeName": "sbx-e1-node-1",
        "containers": [
            {
                "name": "web",
                "envFrom": [{"configMapRef": {"name": "app-env"}, "prefix": "APP_"}],
                "env": [
                    {"name": "LOG_LEVEL", "value": "info"},
                    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                    {"name": "APP_MODE", "value": "override"},
                    {"name": "MISSING", "valueFrom": {"configMapKeyRef": {"name": "app-env", "key": "NOPE"}}},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                ],
                "volumeMounts": [
                    {"name": "flags", "mountPath": "/etc/flags"},
                    {"name": "creds", "mountPath": "/etc/db/pw", "subPath": "password"},
                    {"name": "picked", "mountPath": "/etc/picked"},
                ],
            }
        ],
        "volumes": [
            {"name": "flags", "configMap": {"name": "flags"}},
            {"name": "creds", "secret": {"secretName": "db"}},
            {
                "name": "picked",
                "configMap": {"name": "app-env", "items": [{"key": "MODE", "path": "mode.txt"}]},
            },
            {"name": "unmounted", "configMap": {"name": "other"}},
        ],
    },
}
SOURCES = {
    ("configmap", "app-env"): {"MODE": "fast", "COLOR": "blue"},
    ("configmap", "flags"): {"DARK_LAUNCH": "false", "BETA": "on"},
    ("secret", "db"): source_data("secret", {"data": {"password": base64.b64encode(b"s3cret").decode()}}),
}


def test_the_view_resolves_env_and_mounts_as_the_kubelet_does() -> None:
    assert referenced(POD, "web") == {("configmap", "app-env"), ("configmap", "flags"), ("secret", "db")}
    view = container_view(POD, "web", SOURCES)
    assert view.hostname == "web-1"
    assert dict(view.env) == {
        "APP_MODE": "override",  # env wins over envFrom
        "APP_COLOR": "blue",
        "LOG_LEVEL": "info",
        "DB_PASSWORD": "s3cret",
        "POD_NAME": "web-1",
        "APP": "web",
    }
    assert view.files == {
        "/etc/flags/DARK_LAUNCH": "false",
        "/etc/flags/BETA": "on",
        "/etc/db/pw": "s3cret",
        "/etc/picked/mode.txt": "fast",
    }


VIEW = ContainerView("web-1", (("LOG_LEVEL", "info"), ("DB_HOST", "db")), {"/etc/flags/DARK_LAUNCH": "false"})


@pytest.mark.parametrize(
    ("argv", "stdout", "stderr", "code"),
    [
        (["printenv", "LOG_LEVEL"], "info\n", "", 0),
        (["printenv", "LOG_LEVEL", "NOPE"], "info\n", "", 1),
        (["cat", "/etc/flags/DARK_LAUNCH"], "false", "", 0),
        (["cat", "/etc/flags/../flags/DARK_LAUNCH"], "false", "", 0),
        (["cat", "/etc/nope"], "", "cat: /etc/nope: No such file or directory\n", 1),
        (["cat", "/etc/flags"], "", "cat: /etc/flags: Is a directory\n", 1),
        (["cat", "/etc/hostname"], "web-1\n", "", 0),
        (["ls", "/etc/flags"], "DARK_LAUNCH\n", "", 0),
        (["ls", "/etc"], "flags\n", "", 0),
        (["ls", "/nope"], "", "ls: cannot access '/nope': No such file or directory\n", 2),
        (["hostname"], "web-1\n", "", 0),
        (["/bin/echo", "a", "b"], "a b\n", "", 0),
        (["echo", "-n", "a"], "a", "", 0),
        (["true"], "", "", 0),
        (["false"], "", "", 1),
        (["sh", "-c", "echo $HOME"], "$HOME\n", "", 0),  # no expansion: what is not known is not made up
        (["sh", "-c", "false && echo no || echo yes; hostname"], "yes\nweb-1\n", "", 0),
        (["sh", "-c", "ps aux"], "", "sh: 1: ps: not found\n", NOT_FOUND_EXIT),
        (["bash", "-c", "cat '/etc/flags/DARK_LAUNCH'"], "false", "", 0),
        (["env", "X=1", "printenv", "X"], "1\n", "", 0),
    ],
)
def test_default_answers(argv: list[str], stdout: str, stderr: str, code: int) -> None:
    result = answer(tuple(argv), VIEW)
    assert (result.stdout, result.stderr, result.exit_code) == (stdout, stderr, code)


def test_env_prints_the_runtime_variables_and_the_containers() -> None:
    lines = answer(("env",), VIEW).stdout.splitlines()
    assert lines[:2] == [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOSTNAME=web-1",
    ]
    assert lines[2:] == ["LOG_LEVEL=info", "DB_HOST=db", "HOME=/root"]


def test_an_unknown_program_is_the_runtimes_not_found() -> None:
    result = answer(("nosuchcmd", "--x"), VIEW)
    assert result.exit_code == NOT_FOUND_EXIT
    assert result.stdout == (
        "OCI runtime exec failed: exec failed: unable to start container process: "
        'exec: "nosuchcmd": executable file not found in $PATH: unknown\n'
    )
    assert 'exec: "/opt/x": stat /opt/x: no such file or directory' in answer(("/opt/x",), VIEW).stdout


# ---- the channel protocol -----------------------------------------------------------------------


def test_framing_and_protocol_choice() -> None:
    assert frame(STDOUT, b"hi") == b"\x01hi"
    assert unframe(b"\x03{}") == (ERROR, b"{}")
    assert unframe(b"") == (-1, b"")
    assert chosen("v5.channel.k8s.io") == V5
    assert chosen("v4.channel.k8s.io, v5.channel.k8s.io") == V5
    assert chosen("v4.channel.k8s.io") == V4
    assert chosen("SPDY/3.1+portforward.k8s.io") is None
    assert output_frames(STDOUT, "a\nb\n", tty=True) == [b"\x01a\r\nb\r\n"]
    assert output_frames(STDOUT, "") == []
    assert [len(f) for f in output_frames(STDOUT, "x" * 5, chunk=2)] == [3, 3, 2]


def test_exit_status_documents_as_the_kubelet_writes_them() -> None:
    assert exit_status(0, ("env",)) == {"metadata": {}, "status": "Success"}
    assert exit_status(127, ("nosuchcmd",)) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: "
        "error executing command [nosuchcmd], exit code 127",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "127"}]},
    }
    raw = status_frame(3, ("sh", "-c", "exit 3"))
    assert raw[0] == ERROR
    assert json.loads(raw[1:])["details"]["causes"][0]["message"] == "3"
