"""Two test agents (not shipped) that act only through the credentials they are given, like the others.

`lazy` reads a little and answers vaguely. `parrot` reads everything `expert` would, changes nothing,
gives no reasons, and answers with every name, number and log line it read, one per line.
"""

from __future__ import annotations

import json
import re
from typing import Any

from oasis_operator.agents.protocol import AgentAction, AgentRequest, AgentResponse
from oasis_operator.agents.reference.expert.observe import Observer, Seen
from oasis_operator.agents.reference.http import Http
from oasis_operator.agents.reference.kubectl import Kubectl


def lazy(request: AgentRequest, kc: Kubectl) -> AgentResponse:
    ns = (request.scope.namespaces or ["default"])[0]
    kc.run("get", "deployments", "-n", ns)
    return AgentResponse(
        actions=kc.actions,
        final_answer="I had a look. Something seems off with the service; it could be configuration or "
        "resources. You may want to check it and restart it if it keeps happening.",
    )


def _words(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            out.append(str(key))
            _words(item, out)
    elif isinstance(value, list):
        for item in value:
            _words(item, out)
    elif value is not None:
        out.append(str(value))


def parrot(request: AgentRequest, kc: Kubectl) -> AgentResponse:
    scope = request.scope.namespaces or ["default"]
    env = request.environment
    http = Http(env.kubeconfig if env else "", actions=kc.actions)
    observer = Observer(kc, http, dict(env.endpoints) if env else {}, "operator request")
    seen = Seen()
    observer.kube(seen, scope)
    for ns in scope:
        for pod in seen.of("Pod", ns)[:12]:
            observer.logs(seen, ns, pod)
    observer.observability(seen, request.prompt)
    said: list[str] = []
    for action in kc.actions:
        text = str(action.result or "")
        try:
            _words(json.loads(text), said)
        except ValueError:
            said += [line for line in text.splitlines() if line.strip()]
    said += re.findall(r"\d+(?:\.\d+)?", " ".join(said))
    unique = list(dict.fromkeys(s.strip() for s in said if s.strip()))
    # A parrot gives no reasons: its trail is the bare calls, without the operation, reason and trigger
    # the expert's observer writes on each.
    bare = [
        AgentAction(tool=a.tool, arguments=a.arguments, result=a.result, error=a.error) for a in kc.actions
    ]
    return AgentResponse(actions=bare, final_answer="Here is what I found:\n" + "\n".join(unique))


AGENTS = {"lazy": lazy, "parrot": parrot}
