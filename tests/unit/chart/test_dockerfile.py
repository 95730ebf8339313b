"""Lint the Dockerfile: it cannot be built here, so check what a build would rely on."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.unit.chart.chart_render import CHART, REPO

DOCKERFILE = REPO / "Dockerfile"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        keyword, _, args = full.partition(" ")
        out.append((keyword.upper(), args.strip()))
    assert not pending, "dangling line continuation"
    return out


STEPS = instructions(DOCKERFILE.read_text())


def _copy_sources(args: str) -> list[str]:
    parts = [p for p in args.split() if not p.startswith("--")]
    return parts[:-1]


def test_parser_reads_the_instructions() -> None:
    assert [k for k, _ in STEPS].count("FROM") == 2
    assert ("USER", "65532:65532") in STEPS


def test_base_images_are_pinned_to_an_exact_version() -> None:
    for keyword, args in STEPS:
        if keyword != "FROM":
            continue
        image = args.split()[0]
        assert "@sha256:" in image or re.fullmatch(r"debian:12\.\d+-slim", image), image
        assert not image.endswith(":latest")


def test_final_stage_runs_as_a_numeric_non_root_user() -> None:
    last_from = max(i for i, (k, _) in enumerate(STEPS) if k == "FROM")
    users = [a for k, a in STEPS[last_from:] if k == "USER"]
    assert users, "no USER in the final stage"
    uid = users[-1].split(":")[0]
    assert uid.isdigit()
    assert int(uid) != 0
    # The chart's default runAsUser is the same identity.
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["podSecurityContext"]["runAsUser"] == int(uid)


def test_nothing_is_fetched_with_add() -> None:
    assert all(k != "ADD" for k, _ in STEPS), "use COPY (ADD can fetch URLs and unpack archives)"


def test_every_copied_path_exists_and_is_sent_to_the_builder() -> None:
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    included = [p[1:].rstrip("/") for p in ignore if p.startswith("!")]
    assert "*" in ignore, ".dockerignore should allow-list the build context"
    checked = 0
    for keyword, args in STEPS:
        if keyword != "COPY" or "--from=" in args:
            continue
        for source in _copy_sources(args):
            path = REPO / source
            assert path.exists(), f"COPY source {source} missing from the repository"
            top = Path(source).parts[0]
            assert top in included, f"{source} is excluded by .dockerignore"
            checked += 1
    assert checked >= 4


def test_entrypoint_runs_the_operator_and_the_profile_ships() -> None:
    entry = [a for k, a in STEPS if k == "ENTRYPOINT"]
    assert len(entry) == 1
    assert json.loads(entry[0]) == ["oasis", "operator"]
    env = " ".join(a for k, a in STEPS if k == "ENV")
    profile_dir = re.search(r"OASIS_PROFILE_DIR=(\S+)", env)
    assert profile_dir
    copies = [[*_copy_sources(a), a.split()[-1]] for k, a in STEPS if k == "COPY" and "--from" not in a]
    assert ["profiles/software-infrastructure/", profile_dir.group(1) + "/"] in copies
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["operator"]["profileDir"] == profile_dir.group(1)
    assert (REPO / "profiles" / "software-infrastructure" / "profile.yaml").is_file()
