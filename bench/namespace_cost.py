"""What removing one namespace costs the control plane: the namespace controller's sweep.

Usage: .venv/bin/python bench/namespace_cost.py [COUNT] [--out FILE]

Starts a local control plane in a temporary directory, creates COUNT empty namespaces (default 30),
deletes them and waits until they are gone. Prints the CPU seconds per namespace of etcd,
kube-apiserver and kube-controller-manager for the creates and for the removal (each process's idle
rate, measured first for 5 s, subtracted), and the requests the controller manager sent per namespace
as the API server's audit log counts them, by verb. Appends the table to FILE with `--out`.

Every sandbox namespace costs one such sweep at teardown; this is why the environments share one
control namespace (sandbox/control.py) instead of having one each.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import cpu_seconds, load_note

from oasis_operator.kube import api_client, request, resource_path
from oasis_operator.localcluster import LocalControlPlane
from oasis_operator.localcluster.audit import CONTROLLER_MANAGER_USER

IDLE_SECONDS = 5.0


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def _controller_requests(audit_log: Path, since: str) -> Counter[str]:
    """The controller manager's audited requests (its writes: its reads are not audited) by verb."""
    verbs: Counter[str] = Counter()
    for line in audit_log.read_text().splitlines():
        event = json.loads(line)
        if (
            event["user"].get("username") == CONTROLLER_MANAGER_USER
            and event["requestReceivedTimestamp"] >= since
        ):
            verbs[event["verb"]] += 1
    return verbs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", nargs="?", type=int, default=30)
    parser.add_argument("--out")
    args = parser.parse_args()
    n = args.count
    with tempfile.TemporaryDirectory(prefix="oasis-bench-ns-") as tmp:
        plane = LocalControlPlane(run_dir=Path(tmp) / "cluster")
        plane.start()
        try:
            api = api_client(plane.kubeconfig)
            state = plane.read_state()
            assert state is not None
            pids = dict(state.pids)
            time.sleep(5)  # start-up traffic settles
            first = _cpu(pids)
            time.sleep(IDLE_SECONDS)
            idle = {k: (v - first[k]) / IDLE_SECONDS for k, v in _cpu(pids).items()}
            load_before = os.getloadavg()
            since = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
            names = [f"bench-ns-{i}" for i in range(n)]
            begun, before = time.monotonic(), _cpu(pids)
            for name in names:
                request(api, "POST", resource_path("Namespace"), {"metadata": {"name": name}})
            created, after_create = time.monotonic(), _cpu(pids)
            for name in names:
                request(api, "DELETE", resource_path("Namespace", None, name))
            while any(
                ns["metadata"]["name"] in names
                for ns in request(api, "GET", resource_path("Namespace"))["items"]
            ):
                time.sleep(0.2)
            gone, after_delete = time.monotonic(), _cpu(pids)
            load_after = os.getloadavg()
            verbs = _controller_requests(plane.audit_log, since)
        finally:
            plane.stop()

    def per_namespace(start: dict[str, float], end: dict[str, float], seconds: float, name: str) -> str:
        return f"{(end[name] - start[name] - idle[name] * seconds) / n * 1000:.1f}"

    components = ("kube-apiserver", "etcd", "kube-controller-manager")
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    lines = [
        f"### {n} empty namespaces created, then removed, {when} UTC",
        "",
        f"`bench/namespace_cost.py {n}`, {os.cpu_count()} cores, load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after. Removal took {gone - created:.1f} s until all were gone.",
        "",
        "| CPU per namespace (ms) | " + " | ".join(components) + " |",
        "| --- | " + " | ".join("---" for _ in components) + " |",
        "| create | "
        + " | ".join(per_namespace(before, after_create, created - begun, c) for c in components)
        + " |",
        "| remove (until gone) | "
        + " | ".join(per_namespace(after_create, after_delete, gone - created, c) for c in components)
        + " |",
        "",
        "Controller-manager writes per namespace (audited; its reads are not): "
        + ", ".join(f"{verb} {count / n:.1f}" for verb, count in verbs.most_common())
        + ".",
        "",
        load_note(),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with Path(args.out).open("a") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
