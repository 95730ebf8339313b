"""What the gateway keeps for one registered environment."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from oasis_operator.gateway.ratelimit import TokenBucket
from oasis_operator.gateway.recorder import Recorder
from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.gateway.virtual import NameMap
from oasis_operator.models.environment import Environment, FixtureEntry

# Rewrites a response body (text) the agent is about to receive: (api, route, text) -> text.
ResponseHook = Callable[[str, str, str], str]


class Stimuli(Protocol):
    """What the request path needs from an environment's stimuli (`stimulus_runner.StimulusRunner`).

    A protocol, so this module does not import the runner, which itself reads and changes an EnvState.
    """

    def disarm(self) -> None: ...

    async def before(self, api: str, info: RequestInfo) -> None: ...

    async def after(self, api: str, info: RequestInfo, code: int) -> None: ...


def _identity(_api: str, _route: str, text: str) -> str:
    return text


@dataclass
class EnvState:
    """A registered environment: its token, name translation, record and response hook."""

    env: Environment
    token: str
    names: NameMap
    recorder: Recorder
    revoked: bool = False
    response_hook: ResponseHook = field(default=_identity)
    # Declared non-Kubernetes state as it is now: stimuli may add or replace entries during the run.
    fixtures: list[FixtureEntry] = field(default_factory=list)
    stimuli: Stimuli | None = None
    # The environment's request rate limit (None: unlimited).
    limiter: TokenBucket | None = None

    def __post_init__(self) -> None:
        if not self.fixtures:
            self.fixtures = list(self.env.fixtures)
