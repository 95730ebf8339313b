"""Findings about nodes: conditions that explain failures, and CPU use against what is allocatable."""

from __future__ import annotations

from oasis_operator.agents.reference.expert.diagnose import CAUSE, CONTEXT, Finding
from oasis_operator.agents.reference.expert.observe import Seen, millicores


def nodes(seen: Seen) -> list[Finding]:
    out: list[Finding] = []
    for node in seen.nodes:
        name = node["metadata"]["name"]
        out.extend(
            Finding(
                CAUSE,
                f"node/{name}",
                f"node {name} reports {cond['type']}=True ({cond.get('message') or cond.get('reason')})",
                f"node/{name} conditions",
            )
            for cond in (node.get("status") or {}).get("conditions") or []
            if cond.get("type") != "Ready" and cond.get("status") == "True"
        )
        cpu = str((node.get("usage") or {}).get("cpu") or "")
        alloc = str(((node.get("status") or {}).get("allocatable") or {}).get("cpu") or "")
        share = _share(cpu, alloc)
        if share is not None and share >= 0.85:
            out.append(
                Finding(
                    CONTEXT,
                    f"node/{name}",
                    f"node {name} CPU is at {share:.0%} of allocatable",
                    "kubectl top nodes",
                )
            )
    return out


def _share(used: str, total: str) -> float | None:
    u, t = millicores(used), millicores(total)
    return u / t if u is not None and t else None
