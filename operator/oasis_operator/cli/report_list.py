"""`oasis report list`: the evaluations of a namespace (or every one, `-A`) with their phase and verdict,
as `kubectl get oasisevaluations` shows them, plus `-o name|wide|json|yaml`."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

import urllib3
import yaml
from kubernetes.client.exceptions import ApiException

from oasis_operator import API_GROUP, API_VERSION
from oasis_operator.cli.common import (
    add_kube_flags,
    add_output,
    add_output_file,
    command,
    kube_target,
    transport_message,
    write_output,
)
from oasis_operator.kube import request

PLURAL = "oasisevaluations"
LIST_FORMATS = ("wide", "name", "json", "yaml")  # without -o: the table
EXAMPLES = [
    "# the evaluations of the context's namespace, with their phase and safety verdict",
    "oasis report list",
    "# every namespace, with tier, profile and age",
    "oasis report list -A -o wide",
    "# names only, to feed another command",
    "oasis report list -n team-a -o name",
]


def register(report_sub: Any) -> None:
    listing = command(
        report_sub, "list", help="list evaluations with their phase and safety verdict", examples=EXAMPLES
    )
    add_output(listing, LIST_FORMATS, None, "a table by default; wide adds columns")
    add_output_file(listing)
    add_kube_flags(listing, all_namespaces=True)
    listing.set_defaults(func=cmd_list)


def cmd_list(args: argparse.Namespace) -> int:
    target = kube_target(args)
    where = "" if args.all_namespaces else f"/namespaces/{target.namespace}"
    try:
        found = request(target.client(), "GET", f"/apis/{API_GROUP}/{API_VERSION}{where}/{PLURAL}")
    except (ApiException, urllib3.exceptions.HTTPError) as exc:
        scope = "every namespace" if args.all_namespaces else target.namespace
        print(f"oasis: listing OASISEvaluations in {scope}: {transport_message(exc)}", file=sys.stderr)
        return 1
    items: list[dict[str, Any]] = sorted(
        found.get("items") or [], key=lambda i: (i["metadata"].get("namespace", ""), i["metadata"]["name"])
    )
    write_output(listing_text(items, args.output, args.all_namespaces, datetime.now(UTC)), args.output_file)
    if not items and args.output in (None, "wide"):
        scope = "any namespace" if args.all_namespaces else f"namespace {target.namespace}"
        print(f"No OASISEvaluations found in {scope}.", file=sys.stderr)
    return 0


def listing_text(items: list[dict[str, Any]], fmt: str | None, all_namespaces: bool, now: datetime) -> str:
    """The evaluations as a table (`fmt` None) or in one of `LIST_FORMATS` (json/yaml: one `List`, as
    `kubectl get -o json` prints several objects)."""
    if fmt == "name":
        return "".join(f"oasisevaluation.{API_GROUP}/{i['metadata']['name']}\n" for i in items)
    if fmt in ("json", "yaml"):
        document = {"apiVersion": "v1", "kind": "List", "items": items}
        if fmt == "json":
            return json.dumps(document, indent=2) + "\n"
        return yaml.safe_dump(document, sort_keys=False)
    header = ["NAME", "AGENT", "PHASE", "SAFETY", "DONE"]
    if fmt == "wide":
        header += ["TIER", "PROFILE", "AGE"]
    if all_namespaces:
        header.insert(0, "NAMESPACE")
    rows = [header] + [_row(i, fmt == "wide", all_namespaces, now) for i in items]
    if not items:
        return ""
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    return "".join(
        "   ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n" for row in rows
    )


def _row(item: dict[str, Any], wide: bool, all_namespaces: bool, now: datetime) -> list[str]:
    meta, status = item["metadata"], item.get("status") or {}
    summary, progress = status.get("summary") or {}, status.get("progress") or {}
    row = [
        meta["name"],
        str(
            (status.get("agent") or {}).get("name")
            or ((item.get("spec") or {}).get("agent") or {}).get("name", "")
        ),
        status.get("phase") or "Pending",
        summary.get("safety") or "-",
        f"{progress.get('done', 0)}/{progress.get('total', 0)}",
    ]
    if wide:
        profile = ((item.get("spec") or {}).get("profile") or {}).get("name", "")
        row += [str(summary.get("tier") or "-"), profile, _age(meta.get("creationTimestamp"), now)]
    if all_namespaces:
        row.insert(0, meta.get("namespace", ""))
    return row


def _age(created: str | None, now: datetime) -> str:
    """kubectl's short age: 45s, 12m, 5h, 3d."""
    if not created:
        return "-"
    seconds = max(0, int((now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
