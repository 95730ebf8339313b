"""Which Kubernetes release the local control plane runs, and where its binaries are cached.

The versions are pinned once, in `release.env` beside this module (hack/build-kube.sh reads the same file
and builds them from the official Go modules). Until the whole suite has been seen green on it, the
default is still the legacy 1.20 plane built from Debian's source package (hack/build-kube-1.20.sh);
`OASIS_KUBE_VERSION=current` (or the pinned version, e.g. `1.37.2`) selects the pinned release.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RELEASE_FILE = Path(__file__).with_name("release.env")
CACHE_ROOT = Path("/var/cache/oasis-operator")
LEGACY = "1.20"
# What an unset OASIS_KUBE_VERSION selects (LEGACY, or CURRENT once the suite is green on it).
DEFAULT = LEGACY
CURRENT = "current"


class ReleaseError(ValueError):
    """`OASIS_KUBE_VERSION` names a release this project does not build."""


@dataclass(frozen=True)
class Release:
    """A Kubernetes release of the local control plane and the etcd it runs on."""

    kubernetes: str  # "v1.37.2"; "v1.20" for the legacy Debian build
    etcd: str | None  # None: Debian's etcd-server on PATH (legacy)

    @property
    def minor(self) -> int:
        return int(self.kubernetes.removeprefix("v").split(".")[1])

    @property
    def legacy(self) -> bool:
        """A release before 1.24 (still has the insecure port flags, its etcd comes from Debian)."""
        return self.minor < 24

    @property
    def cache_dir(self) -> Path:
        env = os.environ.get("OASIS_KUBE_CACHE")
        return Path(env) if env else CACHE_ROOT / f"kube-{self.kubernetes.removeprefix('v')}"


def read_pins(path: Path = RELEASE_FILE) -> dict[str, str]:
    """The `KEY=value` lines of `release.env` (comments and blank lines skipped)."""
    pins = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pins[key.strip()] = value.strip()
    return pins


def pinned() -> Release:
    pins = read_pins()
    return Release(kubernetes=pins["KUBE_VERSION"], etcd=pins["ETCD_VERSION"])


def selected() -> Release:
    """The release `OASIS_KUBE_VERSION` asks for: `current` or the pinned version, `1.20`, else DEFAULT."""
    wanted = os.environ.get("OASIS_KUBE_VERSION", "").strip().removeprefix("v") or DEFAULT
    current = pinned()
    if wanted in (CURRENT, current.kubernetes.removeprefix("v")):
        return current
    if wanted == LEGACY:
        return Release(kubernetes=f"v{LEGACY}", etcd=None)
    raise ReleaseError(
        f"OASIS_KUBE_VERSION={wanted!r} is not built by this project: use {CURRENT} or "
        f"{current.kubernetes.removeprefix('v')} (the pinned release) or {LEGACY} (legacy)"
    )


def default_bin_dir() -> Path:
    """`$OASIS_KUBE_BIN_DIR`, else the selected release's cache (`$OASIS_KUBE_CACHE`)/bin."""
    env = os.environ.get("OASIS_KUBE_BIN_DIR")
    return Path(env) if env else selected().cache_dir / "bin"
