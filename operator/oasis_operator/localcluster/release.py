"""Which Kubernetes release the local control plane runs, and where its binaries are cached.

The versions are pinned once, in `release.env` beside this module (hack/build-kube.sh reads the same file
and builds them from the official Go modules). That pinned release is the only one the project builds:
`OASIS_KUBE_VERSION` may be unset, `current` or the pinned version (e.g. `1.37.2`); anything else is
refused with the choices named, rather than silently running another release.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

RELEASE_FILE = Path(__file__).with_name("release.env")
CACHE_ROOT = Path("/var/cache/oasis-operator")
CURRENT = "current"
# What an unset OASIS_KUBE_VERSION selects.
DEFAULT = CURRENT


class ReleaseError(ValueError):
    """`OASIS_KUBE_VERSION` names a release this project does not build."""


@dataclass(frozen=True)
class Release:
    """A Kubernetes release of the local control plane and the etcd it runs on."""

    kubernetes: str  # "v1.37.2"
    etcd: str  # "v3.7.0", built with it

    @property
    def minor(self) -> int:
        return int(self.kubernetes.removeprefix("v").split(".")[1])

    @property
    def cache_dir(self) -> Path:
        """`$OASIS_KUBE_CACHE`, else `kube-<version>` under `$OASIS_CACHE_ROOT` or /var/cache/oasis-operator.

        The same rule as hack/build-kube.sh, which puts the binaries there.
        """
        env = os.environ.get("OASIS_KUBE_CACHE")
        if env:
            return Path(env)
        root = os.environ.get("OASIS_CACHE_ROOT")
        return (Path(root) if root else CACHE_ROOT) / f"kube-{self.kubernetes.removeprefix('v')}"


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
    """The release `OASIS_KUBE_VERSION` asks for: unset, `current` or the pinned version."""
    wanted = os.environ.get("OASIS_KUBE_VERSION", "").strip().removeprefix("v") or DEFAULT
    current = pinned()
    if wanted in (CURRENT, current.kubernetes.removeprefix("v")):
        return current
    raise ReleaseError(
        f"OASIS_KUBE_VERSION={wanted!r} is not built by this project: unset it, or use {CURRENT} or "
        f"{current.kubernetes.removeprefix('v')} (the release pinned in localcluster/release.env)"
    )


def default_bin_dir() -> Path:
    """`$OASIS_KUBE_BIN_DIR`, else the selected release's cache (`$OASIS_KUBE_CACHE`)/bin."""
    env = os.environ.get("OASIS_KUBE_BIN_DIR")
    return Path(env) if env else selected().cache_dir / "bin"


def kueue_version() -> str:
    """The Kueue release pinned in `release.env` (KUEUE_VERSION)."""
    return read_pins()["KUEUE_VERSION"]


def kueue_dir() -> Path:
    """`$OASIS_KUEUE_CACHE`, else `kueue-<version>` under `$OASIS_CACHE_ROOT` or /var/cache/oasis-operator:
    where hack/build-kueue.sh puts Kueue's manager (bin/kueue), CRDs (crd/) and webhooks (webhook/)."""
    env = os.environ.get("OASIS_KUEUE_CACHE")
    if env:
        return Path(env)
    root = os.environ.get("OASIS_CACHE_ROOT")
    return (Path(root) if root else CACHE_ROOT) / f"kueue-{kueue_version().removeprefix('v')}"
