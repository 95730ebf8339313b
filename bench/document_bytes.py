"""What an evaluation's stored documents and sandbox records cost the API server: bytes and CPU seconds.

Usage: .venv/bin/python bench/document_bytes.py [--level 4] [--operator-source DIR] [--out NAME]

Starts its own local control plane in a temporary directory, runs `oasis operator` (from
`--operator-source`, another checkout's operator/, when given) and one evaluation of the whole shipped
profile with the null agent. Then it measures, before deleting the evaluation:
- the plane's audit log written during the run, split into the evaluation's document ConfigMaps, the
  sandboxes' record ConfigMaps (`environment`) and everything else, with the request counts by verb;
- the bytes the API server stores for each document ConfigMap (its protobuf encoding, what etcd keeps);
- the CPU seconds of the operator, kube-apiserver and etcd over the run.
Last it provisions every shipped scenario once more through the sandbox provider of the same source and
reads each record ConfigMap back in protobuf (the record's stored bytes per scenario). Writes
bench/results/NAME.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes.client import ApiClient, CustomObjectsApi

sys.path.insert(0, str(Path(__file__).parent))
from bench_support import (
    TERMINAL,
    ProcessWatch,
    bench_cluster,
    evaluation_status,
    interrupted,
    load_note,
    start_operator,
    stop_operator,
)
from null_agent import NullAgent

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.kube import request, resource_path
from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.provider import ENV_LABEL, SandboxProvider

RESULTS = Path(__file__).parent / "results"
NAMESPACE = "bench-documents"
RECORD = "environment"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def stored_bytes(api: ApiClient, path: str) -> int:
    """The object's protobuf encoding, as the API server stores it in etcd (less the key)."""
    method, url, headers, body, post = api.param_serialize(
        method="GET", resource_path=path, header_params={"Accept": PROTOBUF}, auth_settings=["BearerToken"]
    )
    response = api.call_api(method, url, header_params=headers, body=body, post_params=post)
    return len(response.read())  # type: ignore[no-untyped-call]


def audit_bytes(lines: list[str]) -> dict[str, Counter[str]]:
    """Audit bytes and request counts of ConfigMaps, by document / record / other."""
    out: dict[str, Counter[str]] = {"bytes": Counter(), "requests": Counter()}
    for line in lines:
        entry = json.loads(line)
        ref = entry.get("objectRef") or {}
        if ref.get("resource") != "configmaps":
            group = "everything else"
        elif ref.get("namespace") == NAMESPACE:
            group = "document ConfigMaps"
        elif ref.get("name") == RECORD:
            group = "record ConfigMaps"
        else:
            group = "other ConfigMaps"
        out["bytes"][group] += len(line) + 1
        out["bytes"]["all"] += len(line) + 1
        if group != "everything else":
            out["requests"][f"{group}: {entry['verb']}"] += 1
    return out


def run_evaluation(api: ApiClient, url: str, level: int, watch: ProcessWatch) -> dict[str, Any]:
    custom = CustomObjectsApi(api)
    name = f"null-p{level}"
    body = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": "OASISEvaluation", "metadata": {"name": name},
        "spec": {"profile": {"name": "software-infrastructure"},
                 "agent": {"http": {"url": url, "timeoutSeconds": 60}}, "parallelism": level},
    }  # fmt: skip
    load_before = os.getloadavg()[0]
    watch.begin()
    started = time.monotonic()
    custom.create_namespaced_custom_object(API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", body)
    while (status := evaluation_status(custom, NAMESPACE, name)).get("phase") not in TERMINAL:
        watch.sample()
        time.sleep(0.5)
    wall = time.monotonic() - started
    cpu = watch.end()
    path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{NAMESPACE}/oasisevaluations/{name}"
    uid = request(api, "GET", path)["metadata"]["uid"]
    query = {"labelSelector": f"{API_GROUP}/evaluation-uid={uid}"}
    items = request(api, "GET", resource_path("ConfigMap", NAMESPACE), query=query)["items"]
    sizes = {
        i["metadata"]["name"]: stored_bytes(api, resource_path("ConfigMap", NAMESPACE, i["metadata"]["name"]))
        for i in items
    }
    custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, NAMESPACE, "oasisevaluations", name)
    done = (status.get("progress") or {}).get("done") or 0
    return {"phase": status.get("phase"), "safety": (status.get("summary") or {}).get("safety"),
            "done": done, "wall": wall, "cpu": cpu, "sizes": sizes,
            "load": (load_before, os.getloadavg()[0])}  # fmt: skip


def sandboxes_gone(api: ApiClient, timeout: float = 300.0) -> None:
    query = {"labelSelector": ENV_LABEL}
    deadline = time.monotonic() + timeout
    while request(api, "GET", resource_path("Namespace"), query=query)["items"]:
        if time.monotonic() > deadline:
            raise TimeoutError("sandbox namespaces still there after the evaluation")
        time.sleep(1.0)


def record_sizes(api: ApiClient) -> list[int]:
    """Stored bytes of the record ConfigMap of every shipped scenario, provisioned one at a time."""
    provider = SandboxProvider(api, prefix="dbr")
    sizes = []
    for scenario in load_profile(default_profile_path()).scenarios:
        record = provider.provision(scenario, evaluation="bench/records")
        env = record.environment
        sizes.append(stored_bytes(api, resource_path("ConfigMap", env.control_namespace, RECORD)))
        provider.teardown(env.id, wait=False)
    return sizes


def report(
    result: dict[str, Any], audit: dict[str, Counter[str]], records: list[int], argv: list[str]
) -> str:
    sizes = result["sizes"]
    scenario_sets = [v for k, v in sizes.items() if "-scenario-" in k]
    lines = [
        "# Stored documents and sandbox records: bytes and CPU seconds",
        "",
        f"`bench/document_bytes.py {' '.join(argv)}`: one whole-profile evaluation with the null agent.",
        "",
        f"- Evaluation: {result['phase']}, safety {result['safety']}, {result['done']} scenarios, "
        f"wall {result['wall']:.1f} s (load {result['load'][0]:.1f} → {result['load'][1]:.1f}).",
        "- CPU seconds over the run: "
        + ", ".join(f"{name} {seconds:.2f}" for name, seconds in result["cpu"].items())
        + ".",
        f"- Audit log written during the run: {audit['bytes']['all'] / 1e6:.2f} MB in all.",
    ]
    for group in ("document ConfigMaps", "record ConfigMaps", "other ConfigMaps"):
        verbs = ", ".join(
            f"{k.split(': ')[1]} {n}" for k, n in sorted(audit["requests"].items()) if k.startswith(group)
        )
        lines.append(f"  - {group}: {audit['bytes'][group] / 1e6:.2f} MB ({verbs or 'no request recorded'})")
    lines += [
        f"- Document ConfigMaps stored: {len(sizes)}, {sum(sizes.values()) / 1e3:.1f} kB in all; "
        f"a scenario's set median {statistics.median(scenario_sets) / 1e3:.1f} kB, "
        f"max {max(scenario_sets) / 1e3:.1f} kB (protobuf, as etcd keeps them).",
        f"- Record ConfigMap per scenario ({len(records)} scenarios): median "
        f"{statistics.median(records) / 1e3:.1f} kB, max {max(records) / 1e3:.1f} kB, "
        f"{sum(records) / 1e6:.2f} MB in all.",
        "",
        load_note(),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", type=int, default=4)
    parser.add_argument("--operator-source", type=Path, default=None)
    parser.add_argument("--out", default="document_bytes_run")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, interrupted)
    with tempfile.TemporaryDirectory(prefix="oasis-bench-documents-") as tmp, NullAgent() as url:
        work = Path(tmp)
        operator = None
        with bench_cluster(work, NAMESPACE) as (plane, api):
            try:
                extra = {"PYTHONPATH": str(args.operator_source)} if args.operator_source else {}
                operator = start_operator(plane.kubeconfig, plane.audit_log, NAMESPACE, work, extra)
                state = plane.read_state()
                watch = ProcessWatch({"operator": operator.pid, **(state.pids if state else {})})
                offset = plane.audit_log.stat().st_size
                result = run_evaluation(api, url, args.level, watch)
                sandboxes_gone(api)  # their removal is audited too
                with plane.audit_log.open() as log:
                    log.seek(offset)
                    audit = audit_bytes(log.read().splitlines())
            finally:
                stop_operator(operator)
            records = record_sizes(api)
    text = report(result, audit, records, sys.argv[1:])
    (RESULTS / f"{args.out}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
