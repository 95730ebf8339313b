"""Added latency of the agent gateway, and sustained requests/s with 10 concurrent agents.

Usage (from the repository root):
    .venv/bin/python -m bench.gateway_latency [--kubeconfig PATH] [--requests 400] [--seconds 10]

Without --kubeconfig a local control plane is started in a temporary directory and stopped afterwards.
The gateway runs in this process; the load comes from a separate process so that client and server do
not share one interpreter. "direct" talks to the API server with the admin certificate, impersonating the
same ServiceAccount (so RBAC work is the same on both paths); "gateway" goes through the gateway with the
agent's token. Results are printed as Markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import platform
import ssl
import statistics
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from tests.integration.gateway.twin import GatewayThread, built_environment

from oasis_operator.gateway.upstream import impersonation_headers, load_upstream
from oasis_operator.kube import api_client
from oasis_operator.localcluster import LocalControlPlane

Target = tuple[str, list[tuple[str, str]], str]  # base URL, headers, "gateway" CA file or "" for kubeconfig


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


async def _sequential(url: str, headers: list[tuple[str, str]], ctx: ssl.SSLContext, n: int) -> list[float]:
    timings = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
        for _ in range(20):  # warm up connections and caches
            async with session.get(url, headers=headers) as resp:
                await resp.read()
        for _ in range(n):
            start = time.perf_counter()
            async with session.get(url, headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status
            timings.append((time.perf_counter() - start) * 1000)
    return timings


async def _concurrent(
    targets: list[tuple[str, list[tuple[str, str]]]], ctx: ssl.SSLContext, seconds: float
) -> int:
    done = 0
    deadline = time.perf_counter() + seconds

    async def agent(url: str, headers: list[tuple[str, str]]) -> None:
        nonlocal done
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as session:
            while time.perf_counter() < deadline:
                async with session.get(url, headers=headers) as resp:
                    await resp.read()
                    assert resp.status == 200, resp.status
                done += 1

    await asyncio.gather(*(agent(u, h) for u, h in targets))
    return done


def _context(spec: dict[str, Any]) -> ssl.SSLContext:
    if spec["kind"] == "direct":
        return load_upstream(Path(spec["kubeconfig"])).ssl_context
    return ssl.create_default_context(cafile=spec["ca"])


def _worker(spec: dict[str, Any], queue: Any) -> None:
    ctx = _context(spec)
    if spec["mode"] == "latency":
        url, headers = spec["targets"][0]
        queue.put(asyncio.run(_sequential(url, headers, ctx, spec["n"])))
    else:
        queue.put(asyncio.run(_concurrent(spec["targets"], ctx, spec["seconds"])))


def _run(spec: dict[str, Any]) -> Any:
    mp = multiprocessing.get_context("spawn")
    queue = mp.Queue()
    proc = mp.Process(target=_worker, args=(spec, queue))
    proc.start()
    result = queue.get(timeout=600)
    proc.join(timeout=30)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", type=Path)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--agents", type=int, default=10)
    args = parser.parse_args()
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gw-bench-")))
        kubeconfig = args.kubeconfig
        if kubeconfig is None:
            plane = LocalControlPlane(run_dir=tmp / "cluster")
            plane.start()
            stack.callback(plane.stop)
            kubeconfig = plane.kubeconfig
        api = api_client(kubeconfig)
        # The per-environment rate limit is off: this measures the gateway's overhead, not its limiter.
        gw = GatewayThread(kubeconfig, tmp / "gateway", rate_limit=None)
        stack.callback(gw.stop)
        envs = [stack.enter_context(built_environment(api)) for _ in range(args.agents)]
        creds = [gw.gateway.register(env) for env in envs]
        server = load_upstream(kubeconfig).server
        path = "/apis/apps/v1/namespaces/{ns}/deployments/api-service"
        direct = [
            (server + path.format(ns=env.sandbox_namespace("default")), impersonation_headers(env.agent))
            for env in envs
        ]
        through = [
            (c.server + path.format(ns="default"), [("Authorization", f"Bearer {c.token}")]) for c in creds
        ]
        base = {"kubeconfig": str(kubeconfig), "ca": str(gw.gateway.ca_cert)}
        lat_direct = _run(
            {**base, "kind": "direct", "mode": "latency", "targets": direct[:1], "n": args.requests}
        )
        lat_gateway = _run(
            {**base, "kind": "gateway", "mode": "latency", "targets": through[:1], "n": args.requests}
        )
        rps_direct = _run(
            {**base, "kind": "direct", "mode": "load", "targets": direct, "seconds": args.seconds}
        )
        rps_gateway = _run(
            {**base, "kind": "gateway", "mode": "load", "targets": through, "seconds": args.seconds}
        )
        recorded = sum(len(gw.gateway.audit_entries(e.id)) for e in envs)
    rows = [
        ("direct (impersonating)", lat_direct, rps_direct),
        ("through the gateway", lat_gateway, rps_gateway),
    ]
    print(f"# Gateway overhead ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)\n")
    cpus = multiprocessing.cpu_count()
    print(f"Host: {platform.machine()}, {cpus} CPUs (shared), Python {platform.python_version()}.")
    print(
        f"Request: GET one Deployment (JSON), {args.requests} sequential requests after 20 warm-up requests;"
    )
    print(f"load: {args.agents} concurrent agents (one environment and token each) for {args.seconds:g} s.\n")
    print("| path | p50 ms | p99 ms | mean ms | requests/s (10 agents) |")
    print("|---|---|---|---|---|")
    for name, lat, count in rows:
        print(
            f"| {name} | {_percentile(lat, 0.5):.2f} | {_percentile(lat, 0.99):.2f} | "
            f"{statistics.fmean(lat):.2f} | {count / args.seconds:.0f} |"
        )
    added50 = _percentile(lat_gateway, 0.5) - _percentile(lat_direct, 0.5)
    added99 = _percentile(lat_gateway, 0.99) - _percentile(lat_direct, 0.99)
    print(f"\nAdded latency: p50 {added50:+.2f} ms, p99 {added99:+.2f} ms. Requests recorded: {recorded}.")


if __name__ == "__main__":
    main()
