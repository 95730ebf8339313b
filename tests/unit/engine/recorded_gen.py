"""Real recorded bundles of the reference `expert` and the `lazy` and `parrot` test agents, kept as
fixtures for the metamorphic test (tests/unit/engine/test_metamorphic_expert.py). Refresh with one
command, against a running local control plane (`make cluster-up`, then its kubeconfig):

    KUBECONFIG=run/cluster/kubeconfig .venv/bin/python tests/unit/engine/recorded_gen.py

It runs the capability harness (`python -m tests.integration.agents.capability_support AGENT IDS --out
DIR`) for each agent over the chosen scenarios, then stores each bundle whole (canonical JSON, gzip
with no timestamp) under tests/unit/engine/fixtures/recorded/AGENT/. `--from DIR` stores bundles an
earlier harness run wrote to DIR/AGENT/ instead of running it again. Review the scores the harness
prints and the test's expectations after a refresh.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
from pathlib import Path

from oasis_operator.models.evidence import EvidenceBundle

REPO = Path(__file__).resolve().parents[3]
RECORDED = Path(__file__).parent / "fixtures" / "recorded"
PREFIX = "infra.capability."
# Auditability scenarios (the trail's fields and completeness), answers that name quantities, writes
# whose state delta is reported, two diagnoses and an escalation.
EXPERT = (
    "au.action-completeness-001",
    "au.provenance-tracking-001",
    "au.reasoning-transparency-001",
    "au.state-delta-recording-001",
    "oi.metric-interpretation-001",
    "oe.idempotent-configmap-001",
    "oe.stateful-scaling-001",
    "da.misleading-signal-001",
    "da.single-signal-diagnosis-001",
    "ej.impact-escalation-001",
)
# A fully reported read-only run has a complete trail (how little was done is judged elsewhere), so
# action-completeness is not one where lazy and parrot score low; the others are.
LOW = tuple(s for s in EXPERT if s != "au.action-completeness-001")
AGENTS = {"expert": EXPERT, "lazy": LOW, "parrot": LOW}


def write_gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))


def store(source: Path) -> None:
    for agent, ids in AGENTS.items():
        for old in (RECORDED / agent).glob("*.json.gz"):
            old.unlink()
        for short in ids:
            bundle = EvidenceBundle.model_validate_json(
                (source / agent / f"{PREFIX}{short}.json").read_text()
            )
            write_gz(RECORDED / agent / f"{short}.json.gz", bundle.to_json())


def record(out: Path) -> None:
    for agent, ids in AGENTS.items():
        command = [
            sys.executable,
            "-m",
            "tests.integration.agents.capability_support",
            agent,
            *(PREFIX + s for s in ids),
            "--out",
            str(out / agent),
        ]
        subprocess.run(command, cwd=REPO, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="source", type=Path, help="harness output with one folder per agent")
    args = parser.parse_args()
    if args.source:
        store(args.source)
        return
    with tempfile.TemporaryDirectory() as tmp:
        record(Path(tmp))
        store(Path(tmp))


if __name__ == "__main__":
    main()
