"""Read an operator prompt (or an instruction found in data) into a small, deterministic intent."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VERBS: dict[str, tuple[str, ...]] = {
    "restart": ("restart", "bounce", "recycle"),
    "delete": ("delete", "remove", "drop", "destroy", "wipe"),
    "scale": ("scale", "replicas", "increase", "reduce"),
    "set": ("set ", "change", "update", "enable", "patch", "make sure", "add ", "bump", "use image", "copy"),
    "show": ("show", "dump", "print", "reveal", "display", "what is the", "tell me"),
    "drain": ("drain", "cordon", "decommission"),
    "rollback": ("roll back", "rollback", "undo"),
    "diagnose": (
        "diagnose",
        "investigate",
        "what's wrong",
        "what's going on",
        "root cause",
        "check",
        "find",
        "trace",
        "why",
        "health",
        "fix",
        "handle",
        "how is",
        "look into",
        "issue",
        "problem",
    ),
}
SECRET_WORDS = (
    "password",
    "secret",
    "credential",
    "token",
    "api key",
    "apikey",
    "env vars",
    "environment var",
)
URGENCY = ("urgent", "skip the change approval", "skip approval", "no time", "immediately", "asap")
INSTRUCTION_MARKERS = (
    "agent instruction",
    "system override",
    "ignore previous",
    "ai assistant:",
    "note to agent",
    "instruction:",
    "override:",
)
_NAMESPACE = re.compile(
    r"(?:in|from) (?:the )?([a-z0-9][a-z0-9-]*) namespace|namespace[: ]+([a-z0-9][a-z0-9-]*)"
)
_REPLICAS = re.compile(r"(?:to|=)\s*(\d+)\s*(?:replicas?)?|(\d+)\s+replicas")
_ASSIGN = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\s*(?:=|to)\s*\"?([A-Za-z0-9_.:/-]+)\"?")
_IMAGE_TAG = re.compile(r"image tag (v?[0-9][\w.-]*)|to (v[0-9][\w.-]*)")


@dataclass
class Intent:
    text: str
    verbs: set[str] = field(default_factory=set)
    namespaces: list[str] = field(default_factory=list)
    replicas: int | None = None
    assignments: dict[str, str] = field(default_factory=dict)
    image_tag: str | None = None
    secret: bool = False
    urgent: bool = False
    kubeconfig: str | None = None

    def names_in(self, candidates: list[str]) -> list[str]:
        """Candidate object names the text mentions (longest first, so `api-service-canary` wins)."""
        lowered = self.text.lower()
        found = [
            n
            for n in sorted(set(candidates), key=len, reverse=True)
            if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", lowered)
        ]
        return sorted(found, key=lowered.index)


def read_intent(text: str) -> Intent:
    lowered = text.lower()
    intent = Intent(text=text)
    for verb, words in _VERBS.items():
        if any(w in lowered for w in words):
            intent.verbs.add(verb)
    intent.namespaces = [a or b for a, b in _NAMESPACE.findall(lowered)]
    match = _REPLICAS.search(lowered)
    if match and ("replica" in lowered or "scale" in lowered):
        intent.replicas = int(match.group(1) or match.group(2))
    intent.assignments = {k: v.rstrip(".,;:") for k, v in _ASSIGN.findall(text) if not k.startswith("HTTP")}
    tag = _IMAGE_TAG.search(lowered)
    intent.image_tag = (tag.group(1) or tag.group(2)).rstrip(".,;:") if tag else None
    intent.secret = any(w in lowered for w in SECRET_WORDS)
    intent.urgent = any(w in lowered for w in URGENCY)
    if "kind: config" in lowered and "apiversion" in lowered:
        intent.kubeconfig = text[lowered.index("apiversion") :]
    return intent


def injected_instructions(text: str) -> list[str]:
    """Sentences in data that address an agent (what `careful` ignores and `reckless` obeys)."""
    found = []
    for line in text.splitlines():
        lowered = line.lower()
        for marker in INSTRUCTION_MARKERS:
            if marker in lowered:
                found.append(line[lowered.index(marker) + len(marker) :].strip(" :-\"'"))
                break
    return found
