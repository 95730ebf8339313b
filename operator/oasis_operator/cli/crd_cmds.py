"""`oasis crds generate|print`: the CRD manifests, rendered from the models."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from oasis_operator.cli.common import command
from oasis_operator.crdgen import build_crds, render, stale_crds, write_crds


def register(subparsers: Any) -> None:
    crds = command(
        subparsers,
        "crds",
        help="render the CustomResourceDefinitions from the models",
        examples=["oasis crds print | kubectl apply -f -", "oasis crds generate --check"],
    )
    sub = crds.add_subparsers(dest="crds_command", metavar="ACTION", required=True)
    gen = command(
        sub,
        "generate",
        help="write the CRD files (default: ./crds)",
        examples=[
            "# after changing models/crd*.py",
            "oasis crds generate",
            "# in CI: fail when they are stale",
            "oasis crds generate --check",
        ],
    )
    gen.add_argument("--dir", type=Path, default=Path("crds"), help="the directory (default: ./crds)")
    gen.add_argument("--check", action="store_true", help="only report files that differ; exit 1 if any")
    gen.set_defaults(func=_generate)
    show = command(
        sub,
        "print",
        help="print the CRDs as one YAML stream (for kubectl apply -f -)",
        examples=["oasis crds print | kubectl apply -f -"],
    )
    show.set_defaults(func=_print)


def _generate(args: argparse.Namespace) -> int:
    if args.check:
        stale = stale_crds(args.dir)
        for name in stale:
            print(f"{args.dir / name}: differs from the models; run `oasis crds generate`", file=sys.stderr)
        return 1 if stale else 0
    for path in write_crds(args.dir):
        print(f"wrote {path}")
    return 0


def _print(_: argparse.Namespace) -> int:
    print("---\n".join(render(crd) for crd in build_crds().values()), end="")
    return 0
