"""docs/architecture.md states the import contract that `lint-imports` checks: the two never disagree."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import oasis_operator

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(oasis_operator.__file__).parent


def _contract_layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    assert layers["containers"] == ["oasis_operator"]
    assert layers.get("exhaustive") is True
    return [" ".join(layer.split()) for layer in layers["layers"]]


def _documented_layers() -> list[str]:
    text = (REPO / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    found = []
    for line in section.splitlines():
        match = re.match(r"^\d+\.\s+(.*?)\s+—", line)
        if match:
            head = match.group(1).replace("`", "")
            found.append(" ".join(head.split()))
    return found


def test_the_documented_layers_are_the_checked_ones_in_order() -> None:
    assert _documented_layers() == _contract_layers()


def test_every_top_level_part_of_the_package_has_a_layer() -> None:
    parts = {p.stem for p in PACKAGE.iterdir() if p.suffix == ".py" and p.stem != "__init__"}
    parts |= {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    layered = {name for layer in _contract_layers() for name in re.split(r"\s*[|:]\s*", layer)}
    assert parts == layered
