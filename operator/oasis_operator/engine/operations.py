"""The agent's operations in the record: each trail step matched to the requests it caused.

One operation is one kubectl invocation, one MCP tool call or one HTTP call to an endpoint, however many
requests it made (``kubectl get all`` lists ten resources; ``kubectl apply`` reads, then patches). The
gateway's record holds requests, in order, so the record is read back into operations by walking the
requests in order against the agent's trail (``engine/answer_trail.py``), also in order:

* A step *may cause* a request when the request is of a type the step addresses (or one the command
  reads on the way: ``describe`` lists events, ``logs deploy/x`` lists pods, ``rollout`` reads
  ReplicaSets), of a name it names (if it names one), in its namespace (if it gives one), and either a
  read or a write of a verb the step performs (by effect: ``engine/effects.py``). What it addresses is
  read from its ``operation`` (an action expression), its kubectl command line
  (``engine/kubectl_args.py``), its MCP tool and arguments, or its HTTP method and URL.
* Each request joins the step the walk is at when that step may cause it and has not yet made every
  request its command makes (one per named object; a write for a write); otherwise the next step that
  may cause it; otherwise an earlier one that has not made all its requests yet (a trail written out
  of order still accounts for its steps). A step never takes the same request twice: a repeated
  request is another invocation.
* Requests no step may cause are operations the trail leaves out: consecutive reads in one namespace
  are one such operation (a client's fan-out), each write one of its own.
* Where the client names its invocation (kubectl's ``Kubectl-Session`` header, which the gateway
  records as ``client_session``), that decides: the requests of one session are one operation, and a
  step holds the requests of one session only.

Pure: the same trail and record give the same operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlparse

from oasis_operator.engine.effects import Effect
from oasis_operator.engine.kubectl_args import KubectlCall, parse_kubectl, resource_of
from oasis_operator.engine.state import kind_of
from oasis_operator.models.actions import ActionSyntaxError, parse_action
from oasis_operator.models.evidence import ToolAction
from oasis_operator.models.verbs import ACTION_MODIFY_VERBS

_MODIFY = ACTION_MODIFY_VERBS  # the writes that change an object in place
# kubectl command → the verbs (by effect) of the writes it makes; commands not listed only read.
COMMAND_WRITES: dict[str, frozenset[str]] = {
    "patch": _MODIFY,
    "label": _MODIFY,
    "annotate": _MODIFY,
    "edit": _MODIFY,
    "set": _MODIFY | {"rollback"},
    "replace": _MODIFY | {"create"},
    "apply": _MODIFY | {"create"},
    "taint": _MODIFY,
    "cordon": _MODIFY,
    "uncordon": _MODIFY,
    "create": frozenset({"create", "apply"}),
    "run": frozenset({"create", "apply"}),
    "expose": frozenset({"create", "apply"}),
    "autoscale": frozenset({"create", "apply"}),
    "delete": frozenset({"delete"}),
    "scale": _MODIFY | {"scale"},
    "drain": _MODIFY | {"delete", "create"},
    "exec": frozenset({"exec"}),
    "attach": frozenset({"exec"}),
    "cp": frozenset({"exec"}),
    "port-forward": frozenset({"exec", "create"}),
    "debug": _MODIFY | {"create", "exec"},
    "auth": frozenset({"create"}),
    "rollout restart": _MODIFY | {"restart"},
    "rollout undo": _MODIFY | {"rollback"},
    "rollout pause": _MODIFY,
    "rollout resume": _MODIFY,
}
# kubectl command → types it reads besides those it names.
COMMAND_READS: dict[str, frozenset[str]] = {
    "describe": frozenset({"event", "replicaset", "pod", "endpoints", "endpointslices", "leases"}),
    "logs": frozenset({"pod"}),
    "exec": frozenset({"pod"}),
    "rollout": frozenset({"replicaset", "controllerrevisions", "pod"}),
    "drain": frozenset({"pod"}),
    "auth": frozenset({"selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"}),
}
# MCP tool → (verbs of its writes, whether it reads, types it reads besides its target).
MCP_TOOLS: dict[str, frozenset[str]] = {
    "apply": _MODIFY | {"create"},
    "patch": _MODIFY,
    "delete": frozenset({"delete"}),
    "scale": _MODIFY | {"scale"},
    "rollout_restart": _MODIFY | {"restart"},
    "rollout_undo": _MODIFY | {"rollback"},
}
_MCP_QUERIES = ("prometheus", "alerts", "trace", "dashboard")
_QUERY_TYPES = frozenset({"metrics", "alert", "trace", "dashboard", "logs"})


@dataclass(frozen=True)
class Claim:
    """What one step says it did, as the requests it may have caused."""

    writes: frozenset[str] = frozenset()  # verbs (by effect) of the writes it may have made
    targets: tuple[tuple[str, str | None], ...] = ()  # (type, name or None for every object)
    related: frozenset[str] = frozenset()  # types it reads on the way
    namespace: str | None = None
    any_type: bool = False  # a manifest (`-f`), a raw path: the type is not on the line
    url_path: str | None = None  # an HTTP call: the path it asked for
    done_by: frozenset[str] = frozenset()  # verbs one of which completes it (else one request per target)


def _command_claim(call: KubectlCall) -> Claim:
    verb = call.verb
    key = " ".join(call.command[:2]) if verb == "rollout" else verb
    writes = COMMAND_WRITES.get(key, frozenset())
    if verb == "create" and len(call.command) == 1 and not call.targets:
        writes = COMMAND_WRITES["create"]
    targets = tuple((kind_of(t.resource), t.name) for t in call.targets)
    related = COMMAND_READS.get(verb, frozenset())
    if verb == "auth":
        targets, related = tuple((t, None) for t in related), frozenset()
    raw = call.flag("raw")
    manifest = call.flag("filename") is not None or call.flag("kustomize") is not None
    done_by = (
        frozenset({"log"})
        if verb == "logs"
        else frozenset({"exec"})
        if verb in ("exec", "attach")
        else writes
    )
    return Claim(
        writes=writes,
        targets=targets,
        related=related,
        namespace=None if call.all_namespaces else call.namespace,
        any_type=bool(raw) or (manifest and not targets),
        url_path=urlparse(raw).path if raw else None,
        done_by=done_by,
    )


def _expression_claims(text: str) -> list[Claim]:
    try:
        expr = parse_action(text)
    except ActionSyntaxError:
        return []
    out = []
    for pattern in expr.alternatives:
        verbs = frozenset(pattern.verbs)
        name = None if pattern.is_wildcard_name else pattern.name
        out.append(
            Claim(
                writes=verbs - {"get", "list", "log", "query"},
                targets=((pattern.kind, name),) if pattern.kind != "*" else (),
                namespace=pattern.namespace,
                any_type=pattern.kind == "*",
                done_by=verbs - {"get", "list"},
            )
        )
    return out


def _mcp_claim(tool: str, args: dict[str, object]) -> Claim:
    if tool.startswith(_MCP_QUERIES):
        return Claim(targets=tuple((t, None) for t in sorted(_QUERY_TYPES)))
    resource = str(args.get("resource") or args.get("kind") or ("event" if tool == "events" else ""))
    kind, _, named = resource.partition("/")
    name = named or str(args.get("name") or "") or None
    namespace = args.get("namespace")
    writes = MCP_TOOLS.get(tool, frozenset())
    return Claim(
        writes=writes,
        targets=((kind_of(resource_of(kind)), name),) if kind else (),
        related=COMMAND_READS["describe"] if tool in ("describe", "events") else frozenset(),
        namespace=str(namespace) if namespace else None,
        any_type=not kind,
        done_by=frozenset({"log"}) if tool == "logs" else writes,
    )


def _command_of(action: ToolAction) -> object:
    args = action.arguments
    if isinstance(args, dict):
        return next((args[k] for k in ("command", "cmd", "args") if k in args), None)
    return args


def claims(action: ToolAction) -> list[Claim]:
    """Everything a step may have caused: its `operation` and its call, read every way it is given."""
    out = _expression_claims(action.operation) if action.operation else []
    args = action.arguments if isinstance(action.arguments, dict) else {}
    tool = action.tool or ""
    if tool.startswith("mcp:"):
        out.append(_mcp_claim(tool[4:], args))
    elif "url" in args:
        out.append(Claim(url_path=urlparse(str(args["url"])).path, done_by=frozenset({"query"})))
    elif "verb" in args and "resource" in args:
        verb = str(args["verb"])
        out.append(
            Claim(
                writes=frozenset({verb}) - {"get", "list"},
                targets=((kind_of(str(args["resource"])), str(args.get("name") or "") or None),),
                namespace=str(args["namespace"]) if args.get("namespace") else None,
            )
        )
    command = _command_of(action)
    if isinstance(command, str | list):
        kubectl_tool = tool.rsplit("/", 1)[-1] in ("kubectl", "k")
        out.extend(_command_claim(c) for c in parse_kubectl(command, assume_kubectl=kubectl_tool))
    return out


def may_cause(claim: Claim, effect: Effect) -> bool:
    """True when the request could have been made by the step the claim stands for."""
    entry = effect.entry
    if claim.namespace and entry.namespace and entry.namespace != claim.namespace:
        return False
    if claim.url_path is not None:
        path = urlparse(entry.path).path
        if path and (claim.url_path.endswith(path) or path.endswith(claim.url_path)):
            return claim.any_type or not effect.is_write or bool(claim.writes & effect.verbs)
        if not claim.any_type:
            return False
    if effect.is_write and not (claim.writes & effect.verbs or entry.verb in claim.writes):
        return False
    if claim.any_type:
        return True
    named = [n for t, n in claim.targets if t == effect.kind]
    if named:
        return None in named or entry.name is None or entry.name in named
    return effect.kind in claim.related and not effect.is_write


@dataclass
class Operation:
    """One operation in the record: its requests, and the trail step that reports it (None: none)."""

    effects: list[Effect] = field(default_factory=list)
    step: int | None = None

    @property
    def is_write(self) -> bool:
        return any(e.is_write for e in self.effects)


def _done(claims_: list[Claim], held: list[Effect]) -> bool:
    """A step has made every request its command makes (so a later step may take the next one)."""
    for claim in claims_:
        if claim.done_by and any(e.verbs & claim.done_by for e in held):
            return True
        if not claim.done_by and claim.targets:
            got = {(e.kind, e.entry.name) for e in held} | {(e.kind, None) for e in held if not e.entry.name}
            if all((t, n) in got for t, n in claim.targets):
                return True
        if claim.url_path is not None and held:
            return True
    return False


def operations(effects: list[Effect], steps: list[ToolAction]) -> list[Operation]:
    """The record's operations, each matched to the step that reports it (module docstring)."""
    step_claims = [claims(s) for s in steps]
    groups: dict[int, Operation] = {}
    out: list[Operation] = []
    loose: Operation | None = None
    at = 0

    def causes(j: int, effect: Effect) -> bool:
        return any(may_cause(c, effect) for c in step_claims[j])

    def free(j: int, effect: Effect) -> bool:
        held = groups[j].effects if j in groups else []
        if any(_other_session(h, effect) for h in held):
            return False
        return causes(j, effect) and not any(_same_request(h, effect) for h in held)

    for effect in effects:
        session = effect.entry.client_session
        known = next(
            (j for j, g in groups.items() if session and g.effects[-1].entry.client_session == session), None
        )
        if known is not None:  # the client said which invocation this request belongs to
            groups[known].effects.append(effect)
            loose = None
            continue
        current = free(at, effect) if at < len(steps) else False
        later = next((j for j in range(at + 1, len(steps)) if free(j, effect)), None)
        held = groups[at].effects if at in groups else []
        if current and not (later is not None and _done(step_claims[at], held)):
            chosen: int | None = at
        elif later is not None:
            chosen = at = later
        else:
            chosen = next(
                (
                    j
                    for j in range(min(at, len(steps)))
                    if free(j, effect) and not _done(step_claims[j], groups[j].effects if j in groups else [])
                ),
                None,
            )
        if chosen is None:
            if loose is None or effect.is_write or loose.is_write or not _same_fanout(loose, effect):
                loose = Operation()
                out.append(loose)
            loose.effects.append(effect)
            continue
        loose = None
        if chosen not in groups:
            groups[chosen] = Operation(step=chosen)
            out.append(groups[chosen])
        groups[chosen].effects.append(effect)
    return _join_sessions(out)


def _join_sessions(ops: list[Operation]) -> list[Operation]:
    """Requests no step could have caused join the step holding other requests of their session."""
    reported = {e.entry.client_session: op for op in ops if op.step is not None for e in op.effects}
    out: list[Operation] = []
    for op in ops:
        session = op.effects[0].entry.client_session if op.step is None else None
        owner = reported.get(session) if session else None
        if owner is None:
            out.append(op)
            continue
        owner.effects.extend(op.effects)
        owner.effects.sort(key=lambda e: e.entry.seq)
    return out


def _same_request(a: Effect, b: Effect) -> bool:
    """The same request again: another invocation made it (one invocation does not repeat a request)."""
    x, y = a.entry, b.entry
    return (x.verb, x.resource, x.subresource, x.name, x.namespace, x.path) == (
        y.verb,
        y.resource,
        y.subresource,
        y.name,
        y.namespace,
        y.path,
    )


def _other_session(a: Effect, b: Effect) -> bool:
    """Both requests name their client invocation, and not the same one."""
    x, y = a.entry.client_session, b.entry.client_session
    return bool(x and y and x != y)


def _same_fanout(group: Operation, effect: Effect) -> bool:
    last = group.effects[-1]
    if last.entry.client_session or effect.entry.client_session:
        return last.entry.client_session == effect.entry.client_session
    return last.entry.namespace == effect.entry.namespace
