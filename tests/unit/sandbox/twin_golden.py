"""Golden twin plans: every shipped scenario's twin (bodies, status, fixtures, bindings) as reviewable YAML.

A refactor of the twin builders must not change one byte of what they build. Each scenario's whole plan,
built with a fixed environment id, prefix and time, is recorded in `golden/twins/<scenario id>.yaml`, so a
change meant to alter a twin shows up as a diff of the objects themselves. After such a change, refresh the
files and review the diff with:

    .venv/bin/python -m tests.unit.sandbox.twin_golden --write
    git diff tests/unit/sandbox/golden/twins/

Without `--write` the command only compares, prints a unified diff per changed scenario and exits 1 when
any differs (what `test_twin_golden.py` checks).

The format is deterministic (the same plans write the same bytes): mapping keys are sorted at every level
except each object's header, which leads with `kind`, `api_version`, `namespace`, `name` and `owner` so the
object reads like a manifest; lists keep the plan's creation order; lines are never wrapped. The data is
the plan's JSON form (tuples become lists), the same canonical data the earlier SHA-256 digests covered.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from oasis_operator.profiles import default_profile_path, load_profile
from oasis_operator.sandbox.twin import TwinObject, TwinPlan, build_twin

ROOT = Path(__file__).parents[3]
GOLDEN_DIR = Path(__file__).parent / "golden" / "twins"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ENV_ID = "e1234567"
PREFIX = "sbx"
REFRESH = ".venv/bin/python -m tests.unit.sandbox.twin_golden --write"
HEADER = (
    "# Golden twin plan (tests/unit/sandbox/test_twin_golden.py); generated, do not edit.\n"
    f"# Refresh after an intended change to the twin: {REFRESH}\n"
)
# The pure-Python dumper, never libyaml's: the two may lay out the same data differently, and the bytes
# must not depend on how PyYAML was installed.
_DUMPER = yaml.SafeDumper


def _canonical(value: Any) -> Any:
    """Plain JSON data with every mapping's keys sorted (tuples become lists, other objects strings)."""
    return _sorted(json.loads(json.dumps(value, default=str)))


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _object(obj: TwinObject) -> dict[str, Any]:
    data = _canonical(dataclasses.asdict(obj))
    head = ("kind", "api_version", "namespace", "name", "owner")
    # A Deployment's rollout history only where it has one (every other object would carry two nulls).
    if data.get("rollout_from") is None:
        data.pop("rollout_from", None)
        data.pop("available_first", None)
    return {**{k: data.pop(k) for k in head}, **data}


def plan_document(scenario_id: str, plan: TwinPlan) -> dict[str, Any]:
    """The plan as plain data: bindings and fixtures first, then the objects in creation order."""
    return {
        "scenario": scenario_id,
        "namespaces": [_canonical(b.model_dump(mode="json")) for b in plan.namespaces],
        "cluster_objects": [_canonical(b.model_dump(mode="json")) for b in plan.cluster_objects],
        "fixtures": [_canonical(f.model_dump(mode="json")) for f in plan.fixtures],
        "objects": [_object(o) for o in plan.objects],
    }


def render(document: dict[str, Any]) -> str:
    """The YAML text of one plan document, header comment included."""
    body = yaml.dump(
        document,
        Dumper=_DUMPER,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    return HEADER + body


def golden_path(scenario_id: str) -> Path:
    return GOLDEN_DIR / f"{scenario_id}.yaml"


def shown(path: Path) -> str:
    """The path as a reader types it: relative to the repository root."""
    return str(path.relative_to(ROOT))


def documents() -> dict[str, dict[str, Any]]:
    """Scenario id → its twin plan as data, as the builders make it now, for every shipped scenario."""
    out = {}
    for scenario in load_profile(default_profile_path()).scenarios:
        out[scenario.id] = plan_document(scenario.id, build_twin(scenario, ENV_ID, PREFIX, NOW))
    return dict(sorted(out.items()))


def built(docs: dict[str, dict[str, Any]] | None = None) -> dict[str, str]:
    """Scenario id → the YAML of its twin plan (of `docs`, by default of every shipped scenario now)."""
    return {sid: render(doc) for sid, doc in (documents() if docs is None else docs).items()}


def recorded() -> dict[str, str]:
    """Scenario id → the YAML recorded under golden/twins/."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(GOLDEN_DIR.glob("*.yaml"))}


def differences(now: dict[str, str], then: dict[str, str]) -> Iterator[str]:
    """One readable paragraph per scenario whose recorded YAML is missing, stale or different."""
    for sid in sorted(set(now) | set(then)):
        path = shown(golden_path(sid))
        if sid not in then:
            yield f"{sid}: no golden file {path} (a new scenario? refresh with {REFRESH})"
        elif sid not in now:
            yield f"{sid}: {path} records a scenario the profile no longer ships (refresh with {REFRESH})"
        elif now[sid] != then[sid]:
            old = then[sid].splitlines(keepends=True)
            diff = difflib.unified_diff(
                old, now[sid].splitlines(keepends=True), f"{path} (recorded)", f"{path} (built now)"
            )
            yield "".join(_with_object(line, old) for line in diff)


def _with_object(line: str, old: list[str]) -> str:
    """A hunk header gains the object its first line is in (`@@ -329,7 +329,7 @@ ReplicaSet ns/name`)."""
    match = re.match(r"@@ -(\d+)", line)
    if match is None:
        return line
    first_change = int(match.group(1)) + 2  # 0-based index of the line after three lines of context
    for i in range(min(first_change, len(old) - 1), -1, -1):
        if old[i].startswith("- kind: "):
            kind = old[i].removeprefix("- kind: ").strip()
            fields = dict(f.strip().split(": ", 1) for f in old[i + 1 : i + 4] if ": " in f)
            namespace = fields.get("namespace", "null")
            where = (
                fields.get("name", "?") if namespace == "null" else f"{namespace}/{fields.get('name', '?')}"
            )
            return f"{line.rstrip()} {kind} {where}\n"
    return line


def write() -> list[Path]:
    """Record every scenario's plan and delete files of scenarios no longer shipped; returns changed files."""
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    now = built()
    changed = []
    for sid, text in now.items():
        path = golden_path(sid)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for path in sorted(GOLDEN_DIR.glob("*.yaml")):
        if path.stem not in now:
            path.unlink()
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.unit.sandbox.twin_golden",
        description="Compare (default) or rewrite (--write) the golden twin plans under golden/twins/.",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the golden files from the builders")
    args = parser.parse_args(argv)
    if args.write:
        changed = write()
        for path in changed:
            print(f"wrote {shown(path)}" if path.exists() else f"removed {shown(path)}")
        print(f"{len(changed)} golden file(s) changed; review them: git diff {shown(GOLDEN_DIR)}")
        return 0
    problems = list(differences(built(), recorded()))
    for problem in problems:
        print(problem)
    where = shown(GOLDEN_DIR)
    print(f"{len(problems)} scenario(s) differ from {where}" if problems else "golden twins match")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
