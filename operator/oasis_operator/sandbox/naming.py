"""Names in the sandbox cluster: unique per environment, valid DNS labels, stable for the same inputs."""

from __future__ import annotations

import hashlib
import re
import secrets

from oasis_operator.models.environment import AGENT_SHOWN_NAME

MAX_NAME = 63
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses for generated pod-name suffixes
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def new_environment_id() -> str:
    """A random environment id: 8 characters of [a-z0-9] starting with a letter."""
    return "e" + secrets.token_hex(4)[:7]


def _digest(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def sandbox_name(prefix: str, env_id: str, declared: str) -> str:
    """`<prefix>-<env id>-<declared>`, shortened with a hash suffix when it would exceed 63 characters."""
    name = f"{prefix}-{env_id}-{declared}"
    if len(name) <= MAX_NAME:
        return name
    keep = MAX_NAME - len(prefix) - len(env_id) - 2 - 9
    return f"{prefix}-{env_id}-{declared[:keep].rstrip('-')}-{_digest(declared, 8)}"


def control_namespace(prefix: str) -> str:
    """The namespace that holds every environment's agent identity and record, never shown to the agent.

    One per prefix, long-lived (why: `sandbox.control`): an environment adds its ServiceAccount and record
    ConfigMap to it (`agent_service_account`, `stored_record.record_name`) and teardown removes them.
    Environment ids start with "e" and never read "control", so the name cannot meet a sandbox namespace
    (`<prefix>-<env id>-...`).
    """
    return f"{prefix}-control"


def environment_namespace_prefix(prefix: str, env_id: str) -> str:
    """What every sandbox namespace of the environment starts with (`<prefix>-<env id>`)."""
    return f"{prefix}-{env_id}"


def agent_service_account(env_id: str) -> str:
    """The environment's agent ServiceAccount in the control namespace."""
    return f"{AGENT_SHOWN_NAME}-{env_id}"


def is_dns_label(name: str) -> bool:
    return len(name) <= MAX_NAME and bool(_DNS_LABEL.match(name))


def pod_template_hash(seed: str) -> str:
    """A 10-character hash like the one Kubernetes puts in ReplicaSet and Pod names."""
    return _suffix(seed, 10)


def pod_suffix(seed: str) -> str:
    """A 5-character suffix like the one Kubernetes appends to generated Pod names."""
    return _suffix(seed, 5)


def _suffix(seed: str, length: int) -> str:
    raw = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
    out = []
    for _ in range(length):
        raw, index = divmod(raw, len(_ALPHABET))
        out.append(_ALPHABET[index])
    return "".join(out)
