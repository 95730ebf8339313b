"""Names in the sandbox cluster: unique per environment, valid DNS labels, stable for the same inputs."""

from __future__ import annotations

import hashlib
import re
import secrets

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


def control_namespace(prefix: str, env_id: str) -> str:
    """The environment's own namespace: agent identity and bookkeeping, never shown to the agent."""
    return f"{prefix}-{env_id}"


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
