"""`oasis cluster up|down|status|env`: the local control plane."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.cli.common import UsageError, add_output, command
from oasis_operator.localcluster import ClusterStatus, ControlPlaneError, LocalControlPlane
from oasis_operator.localcluster.kueue import start_kueue
from oasis_operator.localcluster.multikueue import connect_worker, parse_worker
from oasis_operator.localcluster.node import NODE_IP, NODE_NAME, RealNode
from oasis_operator.localcluster.node_host import NodeError


def register(subparsers: Any) -> None:
    cluster = command(
        subparsers,
        "cluster",
        help="run a local Kubernetes control plane on 127.0.0.1",
        examples=[
            "oasis cluster --run-dir run/cluster up",
            'eval "$(oasis cluster --run-dir run/cluster env)"   # KUBECONFIG for kubectl and oasis',
            "oasis cluster --run-dir run/cluster down --purge",
        ],
    )
    cluster.add_argument(
        "--run-dir", type=Path, default=None, help="state directory (default: $OASIS_RUN_DIR)"
    )
    cluster.add_argument(
        "--bin-dir", type=Path, default=None, help="where kube-apiserver is (default: cache)"
    )
    sub = cluster.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)
    up = command(
        sub,
        "up",
        help="start etcd, kube-apiserver and kube-controller-manager",
        examples=[
            "oasis cluster --run-dir run/cluster up --timeout 120",
            "oasis cluster --run-dir run/cluster up --kueue",
            "# a MultiKueue manager dispatching to the plane of run/worker (docs/kueue.md)",
            "oasis cluster --run-dir run/manager up --kueue --multikueue-worker w1=run/worker/kubeconfig",
        ],
    )
    up.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the API (default 90)")
    up.add_argument(
        "--node",
        action="store_true",
        help="also a real node: containerd and the kubelet (test facility; docs/real-node.md)",
    )
    up.add_argument(
        "--kueue",
        action="store_true",
        help="also start Kueue's manager (hack/build-kueue.sh builds it; docs/kueue.md)",
    )
    up.add_argument(
        "--multikueue-worker", metavar="NAME=KUBECONFIG", action="append", default=[],
        help="with --kueue: join the cluster of KUBECONFIG (another local plane) as MultiKueueCluster NAME "
        "(repeatable; docs/kueue.md, Across clusters)",
    )  # fmt: skip
    up.set_defaults(func=_up)
    down = command(
        sub,
        "down",
        help="stop the processes this run directory started",
        examples=[
            "oasis cluster --run-dir run/cluster down",
            "oasis cluster --run-dir run/cluster down --purge",
        ],
    )
    down.add_argument("--purge", action="store_true", help="also delete the run directory")
    down.set_defaults(func=_down)
    status = command(
        sub,
        "status",
        help="show whether each component runs and the API is ready (exit 3 if not ready)",
        examples=[
            "oasis cluster --run-dir run/cluster status",
            "oasis cluster --run-dir run/cluster status -o json",
        ],
    )
    add_output(status, ("text", "json", "yaml"), "text", "the status")
    status.set_defaults(func=_status)
    env = command(
        sub,
        "env",
        help="print `export KUBECONFIG=...` for a shell",
        examples=['eval "$(oasis cluster --run-dir run/cluster env)"'],
    )
    env.set_defaults(func=_env)


def _plane(args: argparse.Namespace) -> LocalControlPlane:
    try:
        return LocalControlPlane(run_dir=args.run_dir, bin_dir=args.bin_dir)
    except ControlPlaneError as exc:  # e.g. an OASIS_KUBE_VERSION this project does not build
        raise SystemExit(f"oasis cluster: {exc}") from exc


def _print_status(status: ClusterStatus) -> None:
    for c in status.components:
        print(f"{c.name:<25} {'running' if c.running else 'stopped':<8} pid={c.pid or '-'}")
    print(f"{'api':<25} {'ready' if status.ready else 'not ready':<8} {status.server or ''}")


def _up(args: argparse.Namespace) -> int:
    if args.multikueue_worker and not args.kueue:
        raise UsageError("--multikueue-worker joins a worker to this plane's Kueue: add --kueue")
    try:
        workers = [parse_worker(value) for value in args.multikueue_worker]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    plane = _plane(args)
    try:
        status = plane.start(timeout=args.timeout)
        if args.kueue:
            pid = start_kueue(plane, timeout=args.timeout)
            print(f"{'kueue':<25} {'running':<8} pid={pid}")
        for name, kubeconfig in workers:
            connect_worker(plane, name, kubeconfig)
            print(f"{'multikueue worker':<25} {name:<8} {kubeconfig}")
    except ControlPlaneError as exc:
        print(f"oasis cluster up: {exc}", file=sys.stderr)
        return 1
    _print_status(status)
    if args.node:
        node = RealNode(plane)
        try:
            node.start()
        except NodeError as exc:
            print(f"oasis cluster up --node: {exc}", file=sys.stderr)
            return 1
        print(f"{'node ' + NODE_NAME:<25} {'ready':<8} {NODE_IP} (containerd {node.socket})")
    print(f"release:    Kubernetes {plane.release.kubernetes}")
    print(f"kubeconfig: {plane.kubeconfig}")
    print(f"audit log:  {plane.audit_log}")
    return 0


def _down(args: argparse.Namespace) -> int:
    plane = _plane(args)
    stopped = plane.stop()
    if args.purge:
        plane.purge()
    print("stopped: " + (", ".join(stopped) if stopped else "nothing was running"))
    return 0


def _status(args: argparse.Namespace) -> int:
    status = _plane(args).status()
    if args.output in ("json", "yaml"):
        doc = {
            "runDir": str(status.run_dir),
            "ready": status.ready,
            "server": status.server,
            "components": {c.name: {"pid": c.pid, "running": c.running} for c in status.components},
        }
        if args.output == "json":
            print(json.dumps(doc, indent=2, sort_keys=True))
        else:
            sys.stdout.write(yaml.safe_dump(doc, sort_keys=True))
    else:
        _print_status(status)
    return 0 if status.ready else 3


def _env(args: argparse.Namespace) -> int:
    plane = _plane(args)
    if not plane.kubeconfig.exists():
        print("oasis cluster env: no kubeconfig yet; run `oasis cluster up` first", file=sys.stderr)
        return 1
    print(f"export KUBECONFIG={plane.kubeconfig}")
    return 0
