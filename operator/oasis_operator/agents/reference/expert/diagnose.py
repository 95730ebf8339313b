"""Findings from what the expert read: each names what is wrong, where it was seen, and how much it
explains. Nothing here knows a scenario; every rule reads Kubernetes objects, logs or telemetry."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from oasis_operator.agents.reference.expert.observe import Obj, Seen, millicores

# How much a finding explains: a cause explains a failure, a symptom shows one, context informs.
CAUSE, SYMPTOM, CONTEXT = 3, 2, 1
_NOISE = re.compile(r"^\s*(\S+\s+)?(DEBUG|TRACE|INFO)\b", re.IGNORECASE)
_BAD = re.compile(
    r"\b(ERROR|FATAL|WARN|WARNING|PANIC|EXCEPTION)\b|refused|failed|expired|reset", re.IGNORECASE
)
_TRANSIENT = re.compile(r"transient|temporar|timed? ?out|connection refused", re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    weight: int
    subject: str  # the object or series it is about, e.g. "pod/x", "metric error rate of y"
    text: str
    source: str  # where it was observed
    transient: bool = False
    remedy: str | None = None  # the concrete change that would fix it, when the finding shows one


def cause(subject: str, text: str, source: str | None = None) -> Finding:
    """A finding that explains a failure, seen on `subject` itself unless `source` says where."""
    return Finding(CAUSE, subject, text, source or subject)


def _labels(obj: Obj, path: str = "metadata") -> dict[str, str]:
    return dict(((obj.get(path) or {}).get("labels")) or {})


def _pod_owner(pod: Obj) -> str:
    name = str(pod["metadata"]["name"])
    labels = _labels(pod)
    return str(labels.get("app") or re.sub(r"(-[0-9a-f]{8,10})?-[a-z0-9]{5}$", "", name))


def pods(seen: Seen) -> list[Finding]:
    found: list[Finding] = []
    for ns, items in seen.objects.items():
        for pod in (o for o in items if o.get("kind") == "Pod"):
            found += _pod(ns, pod)
    return found


def _pod(ns: str, pod: Obj) -> list[Finding]:
    name = pod["metadata"]["name"]
    status = pod.get("status") or {}
    out: list[Finding] = []
    for init, group in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for c in status.get(group) or []:
            waiting = ((c.get("state") or {}).get("waiting") or {}).get("reason")
            term = (
                (c.get("lastState") or {}).get("terminated") or (c.get("state") or {}).get("terminated") or {}
            )
            restarts = c.get("restartCount", 0)
            what = f"{'init container' if init else 'container'} {c['name']} of pod {name}"
            if term.get("reason") == "OOMKilled":
                out.append(_oom(pod, c["name"], what, restarts))
            elif init and (waiting or (term.get("exitCode") or 0) != 0):
                out.append(
                    Finding(
                        CAUSE,
                        f"pod/{name}",
                        f"{what} fails ({waiting or term.get('reason')}, exit "
                        f"{term.get('exitCode')}): the pod never starts",
                        f"pod/{name} status",
                    )
                )
            elif waiting:
                out.append(
                    Finding(
                        SYMPTOM,
                        f"pod/{name}",
                        f"{what} is {waiting} ({restarts} restarts)",
                        f"pod/{name} status",
                    )
                )
    out.extend(
        Finding(
            CAUSE,
            f"pod/{name}",
            f"pod {name} is Pending and cannot be scheduled: {cond.get('message')}",
            f"pod/{name} conditions",
        )
        for cond in status.get("conditions") or []
        if cond.get("reason") == "Unschedulable"
    )
    cpu = str((pod.get("usage") or {}).get("cpu") or "")
    if (millicores(cpu) or 0) > 1500:
        out.append(
            Finding(CONTEXT, f"pod/{name}", f"pod {name} is using a lot of CPU ({cpu})", "kubectl top")
        )
    return out


def _oom(pod: Obj, container: str, what: str, restarts: int) -> Finding:
    """An OOM kill, measured against the container's memory limit, with the limit raise that fixes it."""
    name = pod["metadata"]["name"]
    spec: Obj = next(
        (c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container), {}
    )
    resources = spec.get("resources") or {}
    limit = (resources.get("limits") or {}).get("memory")
    used = (pod.get("usage") or {}).get("memory")
    text = f"{what} was OOMKilled (out of memory; {restarts} restarts)"
    remedy = None
    if limit:
        text += f": it hits its memory limit of {limit} (limits.memory)" + (f", using {used}" if used else "")
        owner = _pod_owner(pod)
        remedy = (
            f"increase (raise) the memory limit of deployment {owner}, container {container}: "
            f"limits.memory from {limit} to {_doubled(str(limit))}"
            + (f", and requests.memory to match (now {resources['requests']['memory']})"
               if (resources.get("requests") or {}).get("memory") else "")
            + "; then watch that the OOM kills stop"
        )  # fmt: skip
    return Finding(CAUSE, f"pod/{name}", text, f"pod/{name} status", remedy=remedy)


def _doubled(quantity: str) -> str:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(\D*)", quantity)
    return f"{float(match[1]) * 2:g}{match[2]}" if match else f"twice {quantity}"


def missing_keys(seen: Seen) -> list[Finding]:
    found = []
    for ns in seen.objects:
        data = {c["metadata"]["name"]: c.get("data") or {} for c in seen.of("ConfigMap", ns)}
        for dep in seen.of("Deployment", ns):
            for container in dep["spec"]["template"]["spec"].get("containers") or []:
                for env in container.get("env") or []:
                    ref = (env.get("valueFrom") or {}).get("configMapKeyRef")
                    if ref and ref["name"] in data and ref["key"] not in data[ref["name"]]:
                        cm, user = ref["name"], dep["metadata"]["name"]
                        has = ", ".join(sorted(data[cm]))
                        text = f"{user} reads key {ref['key']} (env {env['name']}) from ConfigMap {cm}"
                        found.append(
                            cause(
                                f"configmap/{cm}",
                                f"{text}, which has no such key (it has {has})",
                                f"deployment/{user} env + configmap/{cm}",
                            )
                        )
    return found


def workloads(seen: Seen) -> list[Finding]:
    found: list[Finding] = []
    for ns in seen.objects:
        for dep in seen.of("Deployment", ns):
            name = dep["metadata"]["name"]
            st = dep.get("status") or {}
            want = (dep.get("spec") or {}).get("replicas", 1)
            found.extend(
                Finding(
                    SYMPTOM,
                    f"deployment/{name}",
                    f"deployment {name} is not available "
                    f"(Available=False: {cond.get('reason') or cond.get('message')})",
                    f"deployment/{name} conditions",
                )
                for cond in st.get("conditions") or []
                if cond.get("type") == "Available" and cond.get("status") == "False"
            )
            if want and st.get("readyReplicas", 0) < want:
                found.append(
                    Finding(
                        SYMPTOM,
                        f"deployment/{name}",
                        f"deployment {name} has {st.get('readyReplicas', 0)}/{want} ready replicas",
                        f"deployment/{name}",
                    )
                )
            found += _rollout(seen, ns, dep)
    return found


def revisions(seen: Seen, ns: str, dep: Obj) -> list[Obj]:
    """The deployment's ReplicaSets, newest revision first."""
    uid = dep["metadata"].get("uid")
    own = [
        rs
        for rs in seen.of("ReplicaSet", ns)
        if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
    ]
    return sorted(
        own,
        key=lambda rs: (
            -int(rs["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision", 0))
        ),
    )


def image_of(obj: Obj) -> str:
    spec = (obj.get("spec") or {}).get("template", {}).get("spec") or obj.get("spec") or {}
    containers = spec.get("containers") or [{}]
    return str(containers[0].get("image", ""))


def _rollout(seen: Seen, ns: str, dep: Obj) -> list[Finding]:
    history = revisions(seen, ns, dep)
    if len(history) < 2:
        return []
    name = dep["metadata"]["name"]
    new, old = image_of(history[0]), image_of(history[1])
    when = history[0]["metadata"].get("creationTimestamp", "")
    return [
        Finding(
            CONTEXT,
            f"deployment/{name}",
            f"deployment {name} was recently rolled out from {old} to "
            f"{new} (new ReplicaSet {history[0]['metadata']['name']} created {when})",
            f"replicasets of {name}",
        )
    ]


def events(seen: Seen) -> list[Finding]:
    out = []
    for ns in seen.objects:
        for ev in seen.of("Event", ns):
            obj = ev.get("involvedObject") or {}
            ref = f"{str(obj.get('kind', '')).lower()}/{obj.get('name')}"
            weight = SYMPTOM if ev.get("type") == "Warning" else CONTEXT
            out.append(
                Finding(
                    weight,
                    ref,
                    f"event {ev.get('reason')} on {ref}: {ev.get('message')}"
                    f" (last seen {ev.get('lastTimestamp') or ev.get('eventTime')})",
                    "events",
                )
            )
    return out


def log_findings(seen: Seen) -> tuple[list[Finding], int]:
    """Error and warning lines per log (repeats counted), and how many routine lines were set aside."""
    out: list[Finding] = []
    noise = 0
    for key, lines in sorted(seen.logs.items()):
        counts: dict[str, int] = {}
        for line in lines:
            text = re.sub(r"^\S*\d{4}-\d\d-\d\dT\S+\s+", "", line).strip()
            if _NOISE.match(text) and not _BAD.search(text.split(":", 1)[-1]):
                noise += 1
            elif _BAD.search(text):
                counts[text] = counts.get(text, 0) + 1
            else:
                noise += 1
        _, pod, container = key.split("/", 2)
        for text, n in counts.items():
            weight = CAUSE if re.search(r"\b(ERROR|FATAL|EXCEPTION)\b", text, re.I) else SYMPTOM
            out.append(
                Finding(
                    weight,
                    f"pod/{pod}",
                    f"log of {pod}{'/' + container if container else ''}: "
                    f"{text}" + (f" (x{n})" if n > 1 else ""),
                    f"logs of pod/{pod}",
                    transient=bool(_TRANSIENT.search(text)),
                )
            )
    return out, noise


def services(seen: Seen) -> list[Finding]:
    out: list[Finding] = []
    for ns in seen.objects:
        pods_here = seen.of("Pod", ns)
        dead: set[str] = set()
        for svc in seen.of("Service", ns):
            selector = (svc.get("spec") or {}).get("selector") or {}
            if not selector:
                continue
            ready = [p for p in pods_here if selector.items() <= _labels(p).items() and _ready(p)]
            if not ready:
                name = svc["metadata"]["name"]
                dead.add(name)
                out.append(
                    Finding(
                        SYMPTOM,
                        f"service/{name}",
                        f"service {name} has no ready endpoints (no ready pod matches {_fmt(selector)})",
                        f"service/{name} + pods",
                    )
                )
        for ing in seen.of("Ingress", ns):
            backends = _ingress_backends(ing)
            out.extend(
                Finding(
                    SYMPTOM,
                    f"ingress/{ing['metadata']['name']}",
                    f"ingress {ing['metadata']['name']} routes to service {svc_name}, which has no ready "
                    "endpoints, so it answers 503",
                    f"ingress/{ing['metadata']['name']}",
                )
                for svc_name in sorted(backends & dead)
            )
    return out


def _ingress_backends(ing: Obj) -> set[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            svc = node.get("service")
            if isinstance(svc, dict) and svc.get("name"):
                found.add(str(svc["name"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(ing.get("spec"))
    return found


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _fmt(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def policies(seen: Seen) -> list[Finding]:
    """NetworkPolicies that leave a workload of the namespace unable to reach the pods they select."""
    out = []
    for ns in seen.objects:
        for pol in seen.of("NetworkPolicy", ns):
            spec = pol.get("spec") or {}
            target = (spec.get("podSelector") or {}).get("matchLabels") or {}
            allowed = [
                (peer.get("podSelector") or {}).get("matchLabels") or {}
                for rule in spec.get("ingress") or []
                for peer in rule.get("from") or []
            ]
            for dep in seen.of("Deployment", ns):
                labels = _labels(dep["spec"]["template"])
                if target.items() <= labels.items():
                    continue
                if not any(a.items() <= labels.items() for a in allowed):
                    name = pol["metadata"]["name"]
                    admitted = " or ".join(_fmt(a) for a in allowed) or "nobody"
                    out.append(
                        cause(
                            f"networkpolicy/{name}",
                            f"NetworkPolicy {name} selects pods {_fmt(target)} and admits ingress only "
                            f"from {admitted}; {dep['metadata']['name']} ({_fmt(labels)}) is not admitted. "
                            f"Targeted fix: add a from entry podSelector {_fmt(labels)} to {name}",
                        )
                    )
    return out
