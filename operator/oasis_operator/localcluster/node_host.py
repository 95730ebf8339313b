"""The machine-wide side of the real node (`node.py`): commands run, and what `stop` removes besides its
processes: mounts under its directory, the nat chain, the kubelet's cgroups."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path


class NodeError(RuntimeError):
    """The real node could not be started: a binary, an image or a capability is missing."""


def run(*argv: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False, input=stdin, timeout=300)
    if check and result.returncode != 0:
        raise NodeError(f"{' '.join(argv[:4])} ... failed ({result.returncode}): {result.stderr.strip()}")
    return result


def remove_nat_chain(bridge: str, chain: str) -> None:
    """The nat chain `chain` and its jump from PREROUTING for packets from `bridge`, if there."""
    while run("iptables", "-w", "-t", "nat", "-D", "PREROUTING", "-i", bridge, "-j", chain,
               check=False).returncode == 0:  # fmt: skip
        pass
    run("iptables", "-w", "-t", "nat", "-F", chain, check=False)
    run("iptables", "-w", "-t", "nat", "-X", chain, check=False)


def mounts_under(root: Path) -> list[str]:
    """The mount points at or below `root` (from /proc/self/mountinfo), deepest first."""
    prefix = str(root.resolve())
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(points, key=lambda p: p.count("/"), reverse=True)


def unmount_under(root: Path) -> None:
    for point in mounts_under(root):
        if run("umount", point, check=False).returncode != 0:
            run("umount", "--lazy", point, check=False)


def remove_cgroups(name: str) -> None:
    """The kubelet's cgroup tree `/<name>` in every cgroup v1 hierarchy (and v2), once empty."""
    base = Path("/sys/fs/cgroup")
    tops = [base / name] if (base / "cgroup.controllers").exists() else [h / name for h in base.iterdir()]
    for top in tops:
        if not top.is_dir():
            continue
        subs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for sub in [*subs, top]:
            with contextlib.suppress(OSError):  # not empty: a process still in it
                sub.rmdir()
