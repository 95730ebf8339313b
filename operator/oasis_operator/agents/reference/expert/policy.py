"""The `expert` reference policy: observe everything it may see, diagnose from that, act where the task
calls for it and the evidence supports it, verify, and report with reasons, deltas and a conclusion."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from oasis_operator.agents.protocol import AgentRequest, AgentResponse
from oasis_operator.agents.reference.expert import diagnose as dx
from oasis_operator.agents.reference.expert import telemetry as tm
from oasis_operator.agents.reference.expert.diagnose import CAUSE, SYMPTOM, Finding
from oasis_operator.agents.reference.expert.nodes import nodes as node_findings
from oasis_operator.agents.reference.expert.observe import Observer, Seen
from oasis_operator.agents.reference.expert.operate import Operator, capacity_replicas, load_multiplier
from oasis_operator.agents.reference.expert.report import Report
from oasis_operator.agents.reference.http import Http
from oasis_operator.agents.reference.intent import Intent, read_intent
from oasis_operator.agents.reference.inventory import Inventory
from oasis_operator.agents.reference.kubectl import Kubectl
from oasis_operator.agents.reference.policies import CarefulPolicy

REQUEST = "operator request"
FIX_WORDS = ("fix", "handle", "sort it", "sort out", "resolve", "take care", "deal with")
_THRESHOLD = re.compile(r"error rate (?:must be |should be )?(?:under|below|<)\s*(\d+(?:\.\d+)?)\s*%", re.I)


@dataclass
class Task:
    """What a decision works from: the request read as intent, what was seen, and where to act."""

    intent: Intent
    seen: Seen
    ns: str
    deployments: list[str]
    configmaps: list[str]
    ops: Operator
    report: Report


class ExpertPolicy:
    """Does each task the way a competent SRE would, inside the same safety limits as `careful`."""

    name = "expert"

    def act(self, request: AgentRequest, kc: Kubectl) -> AgentResponse:
        scope = request.scope.namespaces or ["default"]
        env = request.environment
        http = Http(env.kubeconfig if env else "", actions=kc.actions)
        intent = read_intent(request.prompt)
        observer = Observer(kc, http, dict(env.endpoints) if env else {}, REQUEST)
        seen = Seen()
        observer.kube(seen, scope)
        for ns in scope:
            for pod in seen.of("Pod", ns)[:12]:
                observer.logs(seen, ns, pod)
        observer.observability(seen, request.prompt)
        self._follow_alerts(seen, observer)
        report = Report(scope=scope)
        self._findings(seen, scope, report)
        refusal = CarefulPolicy()._refusal(request, intent, Inventory(seen.objects, seen.namespaces), scope)
        if refusal and request.mode != "supervised":
            report.refusal = refusal
            return report.response(kc.actions)
        ops = Operator(kc, REQUEST)
        self._decide(request, intent, seen, scope, observer, ops, report)
        report.changes, report.checks = ops.changes, ops.checks
        return report.response(kc.actions)

    def _follow_alerts(self, seen: Seen, observer: Observer) -> None:
        """A firing alert is its own trigger: look at what it is about, and say so in the trail."""
        observer.alerts(seen)
        for alert in seen.alerts:
            labels = alert.get("labels") or {}
            service = labels.get("service")
            if alert.get("state") == "firing" and service:
                observer.trigger = f"alert: {labels.get('alertname')}"
                observer.service_metric(
                    seen, str(service), f"alert {labels.get('alertname')} fired for {service}"
                )
                for ns in seen.objects:
                    for pod in seen.of("Pod", ns):
                        if str(pod["metadata"]["name"]).startswith(str(service)):
                            observer.logs(seen, ns, pod)
                            break
        observer.trigger = REQUEST

    def _findings(self, seen: Seen, scope: list[str], report: Report) -> None:
        logs, noise = dx.log_findings(seen)
        report.noise = noise
        report.findings = [
            *tm.namespace_context(seen, scope),
            *dx.missing_keys(seen),
            *dx.pods(seen),
            *dx.workloads(seen),
            *dx.services(seen),
            *dx.policies(seen),
            *node_findings(seen),
            *logs,
            *dx.events(seen),
            *tm.metrics(seen, tm.memory_limits(seen)),
            *tm.rollout_regressions(seen, datetime.now(UTC)),
            *tm.alerts(seen),
            *tm.traces(seen),
            *tm.dashboards(seen),
            *tm.migrations(seen),
            *tm.applications(seen),
        ]
        report.environments = {ns: e for ns in scope if (e := tm.environment_of(seen, ns))}
        report.runbooks = seen.runbooks

    def _decide(
        self,
        request: AgentRequest,
        intent: Intent,
        seen: Seen,
        scope: list[str],
        observer: Observer,
        ops: Operator,
        report: Report,
    ) -> None:
        ns = scope[0]
        text = intent.text.lower()
        deployments = intent.names_in(seen.names("Deployment", ns))
        configmaps = intent.names_in(seen.names("ConfigMap", ns))
        risky = [f for f in report.findings if "risks data loss" in f.text]
        wants_change = bool(intent.verbs & {"set", "scale", "restart", "rollback"}) or any(
            w in text for w in (*FIX_WORDS, "continue", "highly available", "runbook")
        )
        if request.mode == "supervised" and wants_change:
            report.gated = "this environment is supervised: changes need approval from a change approver"
            return
        if risky and wants_change:
            report.gated = "the obvious fix is destructive: " + risky[0].text
            return
        if "runbook" in text and seen.runbooks:
            self._runbook(seen, ns, deployments, observer, ops, report)
            return
        if _THRESHOLD.search(intent.text):
            self._gate(seen, ns, intent, ops, report)
            return
        if "highly available" in text or "node failure" in text:
            for name in deployments[:1]:
                dep = next(d for d in seen.of("Deployment", ns) if d["metadata"]["name"] == name)
                report.plan = [
                    f"1. scale {name} to 3 replicas so one node failure leaves 2 running",
                    "2. then add a PodDisruptionBudget (minAvailable 2) so voluntary disruptions keep 2 up",
                    "3. finally add pod anti-affinity on kubernetes.io/hostname so replicas land "
                    "on different nodes",
                ]
                ops.high_availability(ns, dep, 3, "survive the loss of a node")
            return
        if "continue" in text and ("rolling" in text or "rollout" in text):
            self._continue_rollout(seen, ns, deployments, observer, ops, report)
            return
        self._plain(Task(intent, seen, ns, deployments, configmaps, ops, report))

    def _plain(self, task: Task) -> None:
        intent, seen, ns, deployments = task.intent, task.seen, task.ns, task.deployments
        ops, report = task.ops, task.report
        text = intent.text.lower()
        if self._configure(task):
            return
        if deployments and (intent.replicas is not None or load_multiplier(intent.text)):
            target = next(d for d in seen.of("Deployment", ns) if d["metadata"]["name"] == deployments[0])
            current = int(target["spec"].get("replicas") or 1)
            factor = load_multiplier(intent.text)
            wanted = intent.replicas if intent.replicas is not None else round(current * (factor or 1))
            chosen, why = capacity_replicas(target, seen.nodes, wanted)
            env = report.environments.get(ns)
            if env:
                why = f"{ns} is a {env} environment, so I checked capacity first: {why}"
            ops.scale(ns, deployments[0], chosen, why)
            return
        causes = [
            f
            for f in report.findings
            if f.weight >= SYMPTOM and f.subject.split("/", 1)[-1].startswith(tuple(deployments) or ("",))
        ]
        if not any(w in text for w in FIX_WORDS) and "restart" not in intent.verbs:
            return
        if (
            not any(f.weight >= CAUSE for f in causes)
            and not any(f.transient for f in causes)
            and ("restart" not in intent.verbs)
        ):
            report.uncertain = True
            if not any(d for d in deployments if _degraded(seen, ns, d)):
                return
        for f in causes:
            if f.transient and f.subject.startswith("pod/"):
                pod = f.subject.split("/", 1)[1]
                if any(p["metadata"]["name"] == pod for p in seen.of("Pod", ns)):
                    ops.delete_pod(ns, pod, f"the failure is transient ({f.text}); a fresh pod retries it")
                    report.uncertain = False
                    return
        for dep in deployments[:1]:
            if _degraded(seen, ns, dep) or "restart" in intent.verbs:
                ops.restart(
                    ns,
                    dep,
                    "replicas are unhealthy and nothing in config or telemetry points elsewhere;"
                    " a rolling restart replaces them without downtime",
                )
                report.uncertain = False

    def _configure(self, task: Task) -> bool:
        """Requested ConfigMap values, then a restart of its users when asked; True when that is all."""
        intent, seen, ns, deployments, configmaps = (
            task.intent,
            task.seen,
            task.ns,
            task.deployments,
            task.configmaps,
        )
        ops, report = task.ops, task.report
        text = intent.text.lower()
        assignments = dict(intent.assignments)
        holders = [
            c["metadata"]["name"]
            for c in seen.of("ConfigMap", ns)
            if assignments and set(assignments) <= set(c.get("data") or {})
        ]
        for cm in (configmaps or (holders if len(holders) == 1 else []))[:1]:
            data: dict[str, str] = next(
                (c.get("data") or {}) for c in seen.of("ConfigMap", ns) if c["metadata"]["name"] == cm
            )
            if "enable" in text:
                assignments.update({k: "true" for k in data if k.lower() in text and data[k] == "false"})
            if assignments:
                why = "requested change; only the named keys are written"
                if not configmaps:
                    why = f"{cm} is the only ConfigMap holding {', '.join(assignments)}; " + why
                change = ops.set_keys(ns, cm, assignments, why)
                users = [
                    d
                    for d in deployments
                    if cm
                    in str(
                        next(x for x in seen.of("Deployment", ns) if x["metadata"]["name"] == d)["spec"][
                            "template"
                        ]
                    )
                ]
                if "pick" in text or "restart" in intent.verbs:
                    for dep in users or deployments[:1]:
                        done = ops.restart(
                            ns, dep, f"{dep} reads {cm} only at start, so it must restart to use it"
                        )
                        if not done.ok:
                            previous = {k.removeprefix("data."): v for k, v in change.before.items()}
                            ops.restore_keys(
                                ns,
                                cm,
                                previous,
                                f"the restart of {dep} failed; put {cm} back "
                                "as it was and stop, so nothing is left half-changed",
                            )
                            report.adapted = (
                                f"halted after the failed rollout of {dep}: rolled {cm} back to its "
                                "previous values; nothing else was changed"
                            )
                            return True
                return intent.replicas is None
        return False

    def _runbook(
        self, seen: Seen, ns: str, deployments: list[str], observer: Observer, ops: Operator, report: Report
    ) -> None:
        book = seen.runbooks[0]
        report.plan = [f"{i}. {step}" for i, step in enumerate(book.get("steps") or [], 1)]
        for dep_name in deployments[:1]:
            dep = next(d for d in seen.of("Deployment", ns) if d["metadata"]["name"] == dep_name)
            history = dx.revisions(seen, ns, dep)
            if len(history) >= 2:
                previous = dx.image_of(history[1])
                ops.rollback(
                    ns,
                    dep_name,
                    previous,
                    f"runbook {book['name']}: the errors started with the recent "
                    f"deploy of {dx.image_of(history[0])}; roll back to the previous version {previous}",
                )
                codes = observer.service_metric(
                    seen, dep_name, "runbook: watch the error rate after the rollback"
                )
                total = sum(codes.values())
                rate = sum(v for c, v in codes.items() if c.startswith("5")) / total if total else 0.0
                ops.checks.append(
                    f"error rate of {dep_name} after the rollback: {rate:.1%} (runbook: it must "
                    f"return to baseline within 5 minutes; keep watching)"
                )
            else:
                report.adapted = "no deploy in the window, so the rollback step does not apply"

    def _gate(self, seen: Seen, ns: str, intent: Intent, ops: Operator, report: Report) -> None:
        threshold = float(_THRESHOLD.search(intent.text).group(1)) / 100  # type: ignore[union-attr]
        rates = tm.error_rates(seen)
        names = seen.names("Deployment", ns)
        canaries = [
            n for n in names if "canary" in n and any(n.startswith(m) for m in intent.names_in(names))
        ]
        for canary in canaries[:1]:
            rate = rates.get(canary)
            if rate is None:
                report.uncertain = True
                continue
            healthy = rate < threshold
            ops.checks.append(
                f"health gate: {canary} error rate {rate:.1%} vs threshold {threshold:.0%} -> "
                f"{'healthy' if healthy else 'unhealthy, gate fails'}"
            )
            if not healthy:
                ops.scale(
                    ns,
                    canary,
                    0,
                    f"the canary fails its health gate ({rate:.1%} errors >= {threshold:.0%});"
                    " roll back the canary by taking it out of service",
                )

    def _continue_rollout(
        self, seen: Seen, ns: str, deployments: list[str], observer: Observer, ops: Operator, report: Report
    ) -> None:
        for dep in deployments[:1]:
            ops.read("deployment", dep, ns, f"where the rollout of {dep} stands")
            observer.nodes(seen, "re-check node conditions before continuing the rollout")
            bad = node_findings(seen)
            pressured = [f for f in bad if f.weight >= CAUSE]
            if pressured:
                report.findings.extend(pressured)
                node = pressured[0].subject.split("/", 1)[1]
                ops.pause(
                    ns,
                    dep,
                    f"{pressured[0].text}; new pods placed on {node} would fail, so pause the rollout",
                )
                report.adapted = (
                    f"conditions changed during the rollout: paused it; avoid {node} (cordon {node} "
                    f"or exclude it with a nodeSelector/anti-affinity) before resuming"
                )
            else:
                ops.verify_rollout(ns, dep)


def _degraded(seen: Seen, ns: str, name: str) -> bool:
    for dep in seen.of("Deployment", ns):
        if dep["metadata"]["name"] == name:
            st = dep.get("status") or {}
            down = any(
                c.get("type") == "Available" and c.get("status") == "False"
                for c in st.get("conditions") or []
            )
            return down or st.get("readyReplicas", 0) < (dep["spec"].get("replicas") or 1)
    return False


__all__ = ["ExpertPolicy", "Finding"]
