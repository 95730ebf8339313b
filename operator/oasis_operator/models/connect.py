"""A scenario's grant of `kubectl exec`, `attach` and `port-forward` (`x-oasis-operator.connect`).

Without it the agent's Role never holds `pods/exec`, `pods/attach` or `pods/portforward`, and the gateway
refuses them as a least-privilege cluster does. With it, the agent's Role in each namespace of its scope
grants the listed ones, and the gateway serves them itself (no container runs in the sandbox, and no
command ever runs on the operator's machine): an `exec` answer declared here for the pod and command,
else a plausible answer drawn only from the twin's objects (`gateway.apis.exec_shell`); `attach` reads
the pod's log; `port-forward` answers a declared HTTP response for the pod and port, else 200 or 503
(the pod's readiness) for a port a running container declares, else the container runtime's "connection
refused" (`gateway.apis.pod_ports`).
"""

from __future__ import annotations

import shlex
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

# The grant names a scenario writes, and the pod subresource each one opens.
CONNECT_GRANTS: dict[str, str] = {"exec": "exec", "attach": "attach", "port-forward": "portforward"}
Grant = Literal["exec", "attach", "port-forward"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _needs_grant(grant: str, answers: tuple[object, ...], info: ValidationInfo, key: str) -> None:
    grants = info.data.get("grants")
    if answers and grants is not None and grant not in grants:
        raise ValueError(f"{key} answers are declared but connect.grants does not list {grant!r}")


class ExecAnswer(_Model):
    """What `kubectl exec <pod> [-c <container>] -- <command>` prints, for pods whose name matches."""

    pod: str = Field(min_length=1, description="Declared pod name, or a glob (`web-*`).")
    namespace: str | None = Field(default=None, description="Declared namespace; any when absent.")
    container: str | None = Field(default=None, description="Container name; any when absent.")
    command: tuple[str, ...] = Field(
        description="The command as argv (`[cat, /etc/app.yaml]`) or a shell line (`cat /etc/app.yaml`)."
    )
    stdout: str = ""
    stderr: str = ""
    exit_code: int = Field(default=0, ge=0, le=255)

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"the command line does not parse as a shell line: {exc}") from None
        if isinstance(value, list | tuple) and not value:
            raise ValueError("the command is empty; write argv words or a shell line")
        return value

    def matches(self, pod: str, namespace: str, container: str, argv: tuple[str, ...]) -> bool:
        """This answer is the one for `argv` run in `container` of `pod` (declared names)."""
        return (
            fnmatchcase(pod, self.pod)
            and self.namespace in (None, namespace)
            and self.container in (None, container)
            and self.command == argv
        )


class PortAnswer(_Model):
    """The HTTP response a port of the matching pods gives through `kubectl port-forward`."""

    pod: str = Field(min_length=1, description="Declared pod name, or a glob (`web-*`).")
    namespace: str | None = Field(default=None, description="Declared namespace; any when absent.")
    port: int = Field(ge=1, le=65535, description="The pod's port.")
    status: int = Field(default=200, ge=100, le=599)
    headers: dict[str, str] = Field(default_factory=dict)
    body: str = ""

    def matches(self, pod: str, namespace: str, port: int) -> bool:
        return fnmatchcase(pod, self.pod) and self.namespace in (None, namespace) and self.port == port


class ConnectGrants(_Model):
    """Which of exec, attach and port-forward the scenario grants the agent, and declared answers."""

    grants: tuple[Grant, ...] = Field(
        default=(), description="Any of exec, attach, port-forward; the agent's Role grants these."
    )
    exec: tuple[ExecAnswer, ...] = Field(default=(), description="Declared exec answers, first match wins.")
    port_forward: tuple[PortAnswer, ...] = Field(
        default=(), description="Declared HTTP answers per pod port, first match wins."
    )

    @field_validator("grants")
    @classmethod
    def _once_each(cls, grants: tuple[str, ...]) -> tuple[str, ...]:
        repeated = sorted({g for g in grants if grants.count(g) > 1})
        if repeated:
            raise ValueError(f"{', '.join(repeated)} listed more than once")
        return grants

    @field_validator("exec")
    @classmethod
    def _exec_granted(cls, answers: tuple[ExecAnswer, ...], info: ValidationInfo) -> tuple[ExecAnswer, ...]:
        _needs_grant("exec", answers, info, "exec")
        return answers

    @field_validator("port_forward")
    @classmethod
    def _port_forward_granted(
        cls, answers: tuple[PortAnswer, ...], info: ValidationInfo
    ) -> tuple[PortAnswer, ...]:
        _needs_grant("port-forward", answers, info, "port_forward")
        return answers

    def subresources(self) -> frozenset[str]:
        """The pod subresources granted (`exec`, `attach`, `portforward`)."""
        return frozenset(CONNECT_GRANTS[g] for g in self.grants)

    def exec_answer(
        self, pod: str, namespace: str, container: str, argv: tuple[str, ...]
    ) -> ExecAnswer | None:
        return next((a for a in self.exec if a.matches(pod, namespace, container, argv)), None)

    def port_answer(self, pod: str, namespace: str, port: int) -> PortAnswer | None:
        return next((a for a in self.port_forward if a.matches(pod, namespace, port)), None)
