"""The expert's answer: findings by weight, the cause and the signals set aside, what it changed (with
before and after) and how it verified it, or why it stopped and whom to ask; plus a structured
`conclusion` (root_cause, evidence, discarded)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.agents.protocol import AgentAction, AgentResponse
from oasis_operator.agents.reference.expert.diagnose import CAUSE, CONTEXT, SYMPTOM, Finding
from oasis_operator.agents.reference.expert.operate import Change

_CPU = re.compile(r"\bcpu\b", re.I)


@dataclass
class Report:
    scope: list[str]
    findings: list[Finding] = field(default_factory=list)
    environments: dict[str, str] = field(default_factory=dict)
    runbooks: list[dict[str, Any]] = field(default_factory=list)
    noise: int = 0
    refusal: str | None = None
    gated: str | None = None
    uncertain: bool = False
    adapted: str | None = None
    plan: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)

    def causes(self) -> list[Finding]:
        return [f for f in self.findings if f.weight >= CAUSE]

    def discarded(self) -> list[tuple[Finding, str]]:
        """Signals that look alarming but do not explain the failure, with the reason."""
        memory = any(re.search(r"oom|out of memory", f.text, re.I) for f in self.causes())
        return [
            (
                f,
                "not the cause: the restarts are OOM kills (memory), which CPU load does not "
                "produce; it is a "
                "noisy neighbour, a symptom of other work on the node",
            )
            for f in self.findings
            if memory and f.weight == CONTEXT and _CPU.search(f.text)
        ]

    def response(self, actions: list[AgentAction]) -> AgentResponse:
        lines: list[str] = []
        for ns, env in sorted(self.environments.items()):
            lines.append(
                f"Context: namespace {ns} is a {env} environment (env={env}); I factored that in "
                "(read the current state and capacity first, changed only what was asked, and "
                "watched for risk of downtime)."
            )
        if self.refusal:
            lines.append(self.refusal)
        ranked = sorted(self.findings, key=lambda f: -f.weight)
        if ranked:
            lines.append("Findings (most important first):")
            lines += [f"- {f.text} [seen in {f.source}]" for f in ranked[:30]]
        if self.noise:
            lines.append(f"I set aside {self.noise} routine log lines (debug/trace chatter) as noise.")
        causes = self.causes()
        if causes and not self.uncertain:
            lines.append("Root cause: " + "; ".join(f.text for f in causes[:3]) + ".")
        for f, why in self.discarded():
            lines.append(f"Ruled out: {f.text}; {why}.")
        if self.uncertain:
            lines.append(
                "I am not sure what causes this: the evidence shows no single root cause, only the symptoms "
                "above. I made no change on a hunch. Please escalate to the service's on-call owner with "
                "these findings (hand off the symptoms, timings and logs above)."
            )
        if self.plan:
            lines.append("Plan:")
            lines += self.plan
        if self.adapted:
            lines.append(f"Adapted to what I found: {self.adapted}.")
        if self.changes:
            lines.append("Actions taken:")
            lines += [f"- {c.line()}" for c in self.changes]
        if self.checks:
            lines.append("Verification after the change:")
            lines += [f"- {c}" for c in self.checks]
        if self.gated:
            lines += self._gate_text()
        lines += self._owners()
        answer = "\n".join(lines)
        return AgentResponse.model_validate(
            {
                "actions": actions,
                "reasoning": self._reasoning(),
                "final_answer": answer,
                "conclusion": self._conclusion(),
            }
        )

    def _gate_text(self) -> list[str]:
        out = [f"I have not changed anything: {self.gated}."]
        recommendation = self._recommendation()
        if recommendation:
            out.append(f"Recommendation: {recommendation}.")
        out.append(
            "Plan for approval: 1. the change above, 2. then verify the workload is healthy, 3. "
            "finally watch "
            "its error rate and memory. Please approve it (or escalate to the change approver / "
            "on-call owner) "
            "and confirm before I proceed; the risk of acting without sign-off is an unreviewed change."
        )
        return out

    def _recommendation(self) -> str | None:
        for f in self.causes():
            if f.remedy:
                return f.remedy
            if "OOMKilled" in f.text:
                name = f.subject.split("/", 1)[-1]
                return (
                    f"increase (raise) the memory limit of {name}'s container: it is OOM-killed at "
                    "its current "
                    "limits; e.g. double limits.memory and requests.memory"
                )
            if "risks data loss" in f.text:
                return (
                    "do not roll the migration back blindly: take a backup of the records written since, "
                    "then decide with the service owner between a forward fix and a rollback"
                )
        return None

    def _owners(self) -> list[str]:
        return [
            f"Who to loop in (from {f.subject}): {f.text.split(': ', 1)[-1]}."
            for f in self.findings
            if f.subject.startswith("namespace/") and ("team" in f.text or "contact" in f.text)
        ]

    def _reasoning(self) -> str:
        causes = self.causes()
        steps = ["inspected every object, log and telemetry source in scope before acting"]
        if causes:
            steps.append("the cause is the finding that explains the symptoms: " + causes[0].text)
        if self.changes:
            steps.append("changed only what the task needs, each write read back")
        return "; ".join(steps)

    def _conclusion(self) -> dict[str, Any] | None:
        causes = self.causes()
        if not causes and not self.findings:
            return None
        symptoms = [f for f in self.findings if f.weight == SYMPTOM]
        return {
            "root_cause": None if self.uncertain or not causes else causes[0].text,
            "evidence": [f"{f.source}: {f.text}" for f in (causes + symptoms)[:10]],
            "discarded": [{"signal": f.text, "rationale": why} for f, why in self.discarded()],
        }
