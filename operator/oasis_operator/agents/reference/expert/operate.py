"""Changes the expert makes, each one read first, written with the smallest write that does it, and read
back; every write's trail entry carries its reason, its trigger and the state before and after."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oasis_operator.agents.reference.expert.observe import Obj, millicores
from oasis_operator.agents.reference.inventory import failing_pods
from oasis_operator.agents.reference.kubectl import Kubectl


@dataclass
class Change:
    """One performed change: what, why, and what it was before and after (read back)."""

    what: str
    why: str
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    ok: bool = True

    def line(self) -> str:
        delta = "; ".join(f"{k}: {self.before.get(k)!r} -> {v!r}" for k, v in self.after.items())
        return f"{self.what} ({self.why})" + (f" [{delta}]" if delta else "") + ("" if self.ok else " FAILED")


class Operator:
    """Writes through the agent's kubectl; `trigger` names what caused the work (request, alert, ...)."""

    def __init__(self, kc: Kubectl, trigger: str) -> None:
        self.kc, self.trigger = kc, trigger
        self.changes: list[Change] = []
        self.checks: list[str] = []

    def _note(self, op: str, why: str, delta: dict[str, Any] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"operation": op, "reasoning": why, "trigger": self.trigger}
        if delta is not None:
            out["state_delta"] = delta
        return out

    def _write(self, change: Change, operation: str, *args: str) -> None:
        """One kubectl write for `change`; its trail entry carries the change's before and after."""
        delta = {"before": change.before, "after": change.after} if change.before or change.after else None
        code, _ = self.kc.run(*args, note=self._note(operation, change.why, delta))
        change.ok = code == 0
        self.changes.append(change)

    def read(self, kind: str, name: str, ns: str, why: str) -> Obj | None:
        code, out = self.kc.run(
            "get", kind, name, "-n", ns, "-o", "json", note=self._note(f"get {kind}/{name}", why)
        )
        return json.loads(out) if code == 0 else None

    def set_keys(self, ns: str, cm: str, values: dict[str, str], why: str) -> Change:
        current = self.read("configmap", cm, ns, f"current values of {cm} before changing it") or {}
        data = current.get("data") or {}
        wanted = {k: v for k, v in values.items() if data.get(k) != v}
        change = Change(
            f"set {', '.join(f'{k}={v}' for k, v in values.items())} in configmap {cm}",
            why,
            {f"data.{k}": data.get(k) for k in values},
            {f"data.{k}": v for k, v in values.items()},
        )
        if wanted:
            self._merge_data(ns, cm, wanted, why, change)
        else:
            change.what += " (already in place; nothing written)"
        after = self.read("configmap", cm, ns, f"verify {cm} now holds the requested values") or {}
        held = all((after.get("data") or {}).get(k) == v for k, v in values.items())
        self.checks.append(
            f"configmap {cm} {'holds' if held else 'does NOT hold'} the requested values; "
            f"other keys unchanged: {sorted(set(data) - set(values))}"
        )
        self.changes.append(change)
        return change

    def _merge_data(self, ns: str, cm: str, data: Mapping[str, str | None], why: str, change: Change) -> None:
        """Merge `data` into the ConfigMap's data (None removes a key), noting `change` as the delta."""
        code, _ = self.kc.run(
            "patch", "configmap", cm, "-n", ns, "--type", "merge", "-p", json.dumps({"data": data}),
            note=self._note(f"patch configmap/{cm}", why, {"before": change.before, "after": change.after}),
        )  # fmt: skip
        change.ok = code == 0

    def restore_keys(self, ns: str, cm: str, previous: dict[str, str | None], why: str) -> Change:
        """Put keys back as they were (None: the key did not exist, so it is removed)."""
        change = Change(
            f"restored {cm} to its previous values",
            why,
            {f"data.{k}": "(changed)" for k in previous},
            {f"data.{k}": v for k, v in previous.items()},
        )
        self._merge_data(ns, cm, previous, why, change)
        self.changes.append(change)
        self.read("configmap", cm, ns, f"verify {cm} is back to its previous values")
        return change

    def scale(self, ns: str, dep: str, replicas: int, why: str) -> Change:
        current = self.read("deployment", dep, ns, f"current replicas of {dep} before scaling") or {}
        before = (current.get("spec") or {}).get("replicas")
        change = Change(
            f"scaled deployment {dep} from {before} to {replicas} replicas",
            why,
            {"replicas": before},
            {"replicas": replicas},
        )
        self._write(
            change,
            f"scale deployment/{dep}",
            "scale",
            f"deployment/{dep}",
            f"--replicas={replicas}",
            "-n",
            ns,
        )
        after = self.read("deployment", dep, ns, f"verify the new replica count of {dep}") or {}
        self.checks.append(
            f"deployment {dep} spec.replicas is now {(after.get('spec') or {}).get('replicas')}"
        )
        return change

    def restart(self, ns: str, dep: str, why: str) -> Change:
        self.read("deployment", dep, ns, f"state of {dep} before restarting it")
        change = Change(f"rolling restart of deployment {dep}", why)
        code, _ = self.kc.run(
            "rollout",
            "restart",
            f"deployment/{dep}",
            "-n",
            ns,
            note=self._note(f"restart deployment/{dep}", why),
        )
        change.ok = code == 0 and self.verify_rollout(ns, dep)
        self.changes.append(change)
        return change

    def verify_rollout(self, ns: str, dep: str) -> bool:
        """Wait for the rollout, then read the pods: True when it completed and no pod fails."""
        code, out = self.kc.run(
            "rollout",
            "status",
            f"deployment/{dep}",
            "-n",
            ns,
            "--timeout=30s",
            note=self._note(f"get deployment/{dep}", f"wait for the rollout of {dep}"),
        )
        _, pods = self.kc.run(
            "get",
            "pods",
            "-n",
            ns,
            "-o",
            "json",
            note=self._note("list pod", f"check the pods of {dep} after the change"),
        )
        failing = failing_pods(pods)
        ok = code == 0 and not failing
        state = "complete, pods healthy and ready" if ok else "; ".join(failing) or out.strip()[:200]
        self.checks.append(f"rollout of {dep}: {state}")
        return ok

    def delete_pod(self, ns: str, pod: str, why: str) -> Change:
        self.read("pod", pod, ns, f"state of {pod} before replacing it")
        change = Change(f"deleted pod {pod} so it is recreated fresh", why)
        code, _ = self.kc.run(
            "delete", "pod", pod, "-n", ns, "--wait=false", note=self._note(f"delete pod/{pod}", why)
        )
        change.ok = code == 0
        self.changes.append(change)
        _, out = self.kc.run(
            "get", "pods", "-n", ns, "-o", "json", note=self._note("list pod", f"verify {pod} was replaced")
        )
        names = (
            [p["metadata"]["name"] for p in json.loads(out).get("items", [])] if out.startswith("{") else []
        )
        self.checks.append(
            f"pod {pod} {'is gone (replaced)' if pod not in names else 'is still terminating'}"
        )
        return change

    def rollback(self, ns: str, dep: str, to_image: str, why: str) -> Change:
        current = self.read("deployment", dep, ns, f"image of {dep} before rolling back") or {}
        before = _image(current)
        change = Change(
            f"rolled deployment {dep} back to the previous revision",
            why,
            {"image": before},
            {"image": to_image},
        )
        self._write(change, f"rollback deployment/{dep}", "rollout", "undo", f"deployment/{dep}", "-n", ns)
        after = self.read("deployment", dep, ns, f"verify {dep} runs the previous image") or {}
        self.checks.append(f"deployment {dep} image is now {_image(after)}")
        return change

    def pause(self, ns: str, dep: str, why: str) -> Change:
        change = Change(
            f"paused the rollout of deployment {dep}", why, {"spec.paused": None}, {"spec.paused": True}
        )
        self._write(change, f"patch deployment/{dep}", "rollout", "pause", f"deployment/{dep}", "-n", ns)
        after = self.read("deployment", dep, ns, f"verify the rollout of {dep} is paused") or {}
        self.checks.append(f"deployment {dep} paused={(after.get('spec') or {}).get('paused')}")
        return change

    def high_availability(self, ns: str, dep: Obj, replicas: int, why: str) -> None:
        name = dep["metadata"]["name"]
        labels = dict((dep["spec"].get("selector") or {}).get("matchLabels") or {"app": name})
        if (dep["spec"].get("replicas") or 1) < replicas:
            self.scale(ns, name, replicas, why)
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        change = Change(f"created PodDisruptionBudget {name} (minAvailable {replicas - 1})", why)
        self._write(
            change, f"create pdb/{name}", "create", "poddisruptionbudget", name, "-n", ns,
            f"--selector={selector}", f"--min-available={replicas - 1}",
        )  # fmt: skip
        affinity = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": labels},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        }
        patch = json.dumps({"spec": {"template": {"spec": {"affinity": affinity}}}})
        change = Change(f"added pod anti-affinity to {name} so replicas spread across nodes", why)
        self._write(
            change,
            f"patch deployment/{name}",
            "patch",
            "deployment",
            name,
            "-n",
            ns,
            "--type",
            "merge",
            "-p",
            patch,
        )
        self.read("poddisruptionbudget", name, ns, f"verify the PodDisruptionBudget of {name} exists")
        after = self.read("deployment", name, ns, f"verify replicas and anti-affinity of {name}") or {}
        spec = after.get("spec") or {}
        self.checks.append(
            f"{name}: replicas {spec.get('replicas')}, anti-affinity "
            f"{'set' if (spec.get('template') or {}).get('spec', {}).get('affinity') else 'missing'}"
        )


def _image(dep: Obj) -> str:
    containers = ((dep.get("spec") or {}).get("template") or {}).get("spec", {}).get("containers") or [{}]
    return str(containers[0].get("image", ""))


def capacity_replicas(dep: Obj, nodes: list[Obj], wanted: int) -> tuple[int, str]:
    """`wanted` replicas, or fewer if the nodes' allocatable CPU cannot hold them; with the reasoning."""
    containers = dep["spec"]["template"]["spec"].get("containers") or [{}]
    request = millicores(
        str(((containers[0].get("resources") or {}).get("requests") or {}).get("cpu") or "0")
    )
    total = sum(
        millicores(str((n.get("status") or {}).get("allocatable", {}).get("cpu") or "0")) or 0 for n in nodes
    )
    if not request or not total:
        return wanted, f"{wanted} replicas (no CPU request or node capacity to check against)"
    fits = int(total * 0.8 // request)
    chosen = min(wanted, fits)
    return chosen, (
        f"{wanted} replicas x {request:.0f}m CPU = {wanted * request:.0f}m requested; the {len(nodes)} "
        f"nodes allocate {total:.0f}m in all (keeping 20% headroom fits {fits}), so {chosen}"
    )


MULTIPLIER = re.compile(r"\b(\d+(?:\.\d+)?)\s*x\b|\b(double|twice|triple)\b", re.IGNORECASE)


def load_multiplier(text: str) -> float | None:
    match = MULTIPLIER.search(text)
    if not match:
        return None
    if match.group(1):
        return float(match.group(1))
    return {"double": 2.0, "twice": 2.0, "triple": 3.0}[match.group(2).lower()]
