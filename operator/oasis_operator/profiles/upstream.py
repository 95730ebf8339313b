"""Read the metadata of a profile in the upstream (markdown) layout.

Only structure is taken from the markdown: headings, tables and the values in them (versions, ids,
weights, coverage numbers). Behaviours read this way have no recipe, so a profile loaded from the
upstream layout validates structurally but is not runnable until recipes are supplied.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

_HEADER = re.compile(r"^\*\*(?P<key>[^*]+):\*\*\s*(?P<value>.+)$", re.MULTILINE)
_BULLET = re.compile(r"^- \*\*(?P<key>[^*]+):\*\*\s*(?P<value>.+)$", re.MULTILINE)
_SECTION = re.compile(r"^## \d+\. (?P<title>.+)$", re.MULTILINE)
_ARCHETYPE = re.compile(r"^### (?P<id>[SC]-[A-Z]{2}-\d{3}): (?P<name>.+)$", re.MULTILINE)
_BEHAVIOR = re.compile(r"^### `(?P<id>[a-z_]+)`$", re.MULTILINE)
_STIMULUS = re.compile(r"^### (?P<id>STIM-[A-Z]+-\d{3}): (?P<name>.+)$", re.MULTILINE)
_WEIGHTED = re.compile(
    r"(?P<subject>[A-Za-z -]+?) (?:archetypes? )?weighted (?P<weight>[\d.]+)x", re.IGNORECASE
)
_CATEGORY_WEIGHT = re.compile(r"(?P<name>[A-Z][A-Za-z -]+?) \((?P<weight>[\d.]+)\)")
_COVERAGE = re.compile(
    r"All 7 (?P<cls>safety|capability) categories: (?:≥(?P<n>\d+) archetypes?|all archetypes)"
)

# Behaviour name prefixes the core spec treats as decided from actions (Core §3.5.1).
_ACTION_PREFIXES = ("refuse_", "treat_", "halt_", "preserve_", "maintain_", "use_", "modify_", "attempt_")


def slug(text: str) -> str:
    """`Boundary Enforcement` → `boundary-enforcement`."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _sections(text: str) -> list[tuple[str, str]]:
    """(title, body) for every `## N. Title` section."""
    matches = list(_SECTION.finditer(text))
    return [
        (
            match["title"].strip(),
            text[match.end() : matches[i + 1].start() if i + 1 < len(matches) else len(text)],
        )
        for i, match in enumerate(matches)
    ]


def _first_paragraph(text: str) -> str:
    for raw_block in text.strip().split("\n\n"):
        block = raw_block.strip()
        if block and not block.startswith(("-", "#", "|", "`", "*")):
            return " ".join(block.split())
    return ""


def _archetypes(body: str) -> list[dict[str, str]]:
    matches = list(_ARCHETYPE.finditer(body))
    found = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        description = _first_paragraph(body[match.end() : end]) or match["name"]
        found.append({"id": match["id"], "name": match["name"].strip(), "description": description})
    return found


def _safety_categories(text: str) -> list[dict[str, Any]]:
    categories = []
    for title, body in _sections(text):
        archetypes = _archetypes(body)
        if not archetypes:
            continue
        fields = {m["key"].strip(): m["value"].strip() for m in _HEADER.finditer(body)}
        mapping = fields.get("Core mapping", "")
        core = [] if "domain-specific" in mapping.lower() else [slug(part) for part in mapping.split("+")]
        categories.append(
            {
                "id": slug(title),
                "code": archetypes[0]["id"][2:4].lower(),
                "name": title,
                "core_mapping": core,
                "question": fields.get("Core question", title),
                "archetypes": archetypes,
            }
        )
    return categories


def _aggregation(text: str, archetypes: list[dict[str, str]]) -> dict[str, Any]:
    method = "minimum" if text.lower().startswith("minimum") else "weighted_average"
    weights: dict[str, float] = {}
    for match in _WEIGHTED.finditer(text):
        subjects = re.split(r",| and ", match["subject"].lower().replace("archetypes", ""))
        for subject in (s.strip() for s in subjects):
            for archetype in archetypes:
                if subject and archetype["name"].lower().startswith(subject):
                    weights[archetype["id"]] = float(match["weight"])
    return {"method": method, "weights": weights}


def _capability_categories(text: str) -> list[dict[str, Any]]:
    categories = []
    for title, body in _sections(text):
        archetypes = _archetypes(body)
        if not archetypes:
            continue
        fields = {m["key"].strip(): m["value"].strip() for m in _HEADER.finditer(body)}
        dimensions = [
            slug(part).replace("-", "_") for part in fields.get("Core dimension mapping", "").split(",")
        ]
        categories.append(
            {
                "id": slug(title),
                "code": archetypes[0]["id"][2:4].lower(),
                "name": title,
                "dimensions": [d for d in dimensions if d],
                "question": fields.get("Core question", title),
                "aggregation": _aggregation(fields.get("Aggregation", "Weighted average."), archetypes),
                "archetypes": archetypes,
            }
        )
    return categories


def _table_rows(text: str, after: str) -> list[list[str]]:
    """Cells of the first markdown table after the line containing `after`."""
    start = text.find(after)
    if start < 0:
        return []
    rows: list[list[str]] = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if not all(set(cell) <= {"-", ":", " "} for cell in cells):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]  # drop the header row


def _subcategories(profile_md: str, names_to_ids: dict[str, str]) -> list[dict[str, Any]]:
    found = []
    for cells in _table_rows(profile_md, "### 5.1 Safety subcategories"):
        parents = [names_to_ids.get(name.strip(), slug(name)) for name in cells[1].split(",")]
        found.append({"id": cells[0].strip("`"), "parents": parents, "description": cells[2]})
    return found


def _core_dimension_weights(profile_md: str, names_to_ids: dict[str, str]) -> dict[str, dict[str, float]]:
    weights: dict[str, dict[str, float]] = {}
    for cells in _table_rows(profile_md, "### 9.2 Capabilities"):
        dimension = slug(cells[0]).replace("-", "_")
        weights[dimension] = {
            names_to_ids.get(m["name"].strip(), slug(m["name"])): float(m["weight"])
            for m in _CATEGORY_WEIGHT.finditer(cells[1])
        }
    return weights


def _tiers(profile_md: str) -> list[dict[str, Any]]:
    tiers = []
    start = profile_md.find("Complexity tier requirements")
    profile_md = profile_md[start:] if start >= 0 else ""
    for match in re.finditer(r"^### Tier (?P<n>\d) — (?P<name>.+)$", profile_md, re.MULTILINE):
        body = profile_md[match.end() :].split("\n### ", 1)[0]
        coverage: dict[str, int | str] = {}
        for cov in _COVERAGE.finditer(body):
            coverage[cov["cls"]] = int(cov["n"]) if cov["n"] else "all"
        environment_block = body.split("**Minimum coverage:**")[0]
        environment = [line[2:].strip() for line in environment_block.splitlines() if line.startswith("- ")]
        tiers.append(
            {
                "tier": int(match["n"]),
                "name": match["name"].strip(),
                "environment": environment,
                "coverage": coverage,
                "adversarial_variants_required": "Adversarial variants required" in body,
            }
        )
    return tiers


def _intent_promotion(profile_md: str) -> dict[str, Any]:
    block = re.search(r"```yaml\n(profile_validation:.*?)```", profile_md, re.DOTALL)
    if not block:
        return {}
    data = yaml.safe_load(block.group(1)) or {}
    intent = data.get("profile_validation", {}).get("intent", {})
    return {
        "required_for": intent.get("required_for", []),
        "recommended_for": intent.get("recommended_for", []),
    }


def _behaviors(text: str) -> dict[str, Any]:
    matches = list(_BEHAVIOR.finditer(text))
    behaviors = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        group_match = list(re.finditer(r"^## \d+\. (.+)$", text[: match.start()], re.MULTILINE))
        group = slug(group_match[-1].group(1)) if group_match else "ungrouped"
        behavior_id = match["id"]
        behaviors.append(
            {
                "id": behavior_id,
                "kind": "action" if behavior_id.startswith(_ACTION_PREFIXES) else "detection",
                "group": group,
                "description": _first_paragraph(text[match.end() : end]) or behavior_id,
            }
        )
    return {"behaviors": behaviors}


def _stimuli(text: str) -> list[dict[str, Any]]:
    matches = list(_STIMULUS.finditer(text))
    found: list[dict[str, Any]] = []
    for i, match in enumerate(matches):
        body = text[match.end() : matches[i + 1].start() if i + 1 < len(matches) else len(text)]
        block = re.search(r"```yaml\n(.*?)```", body, re.DOTALL)
        data: dict[str, Any] = _lenient_yaml(block.group(1)) if block else {}
        usage = _first_paragraph(body[block.end() :] if block else body) or match["name"]
        entry: dict[str, Any] = {
            key: data[key] for key in ("type", "value", "description", "target", "timing") if key in data
        }
        found.append({"id": match["id"], "name": match["name"].strip(), "usage": usage, **entry})
    return found


def _lenient_yaml(text: str) -> dict[str, Any]:
    """Parse a small YAML block; upstream templates with bare {placeholders} fall back to key: line."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    lines = {m[1]: m[2].strip() for m in re.finditer(r"^([a-z_]+): (.+)$", text, re.MULTILINE)}
    if not isinstance(data, dict):
        return lines
    return {
        key: value if isinstance(value, str) else lines.get(key, str(value)) for key, value in data.items()
    }


def _read(root: Path, name: str) -> str:
    path = root / name
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def read_upstream_metadata(root: Path) -> dict[str, Any]:
    """A `Profile`-shaped mapping (without scenarios) built from the upstream markdown documents."""
    profile_md = _read(root, "profile.md")
    header = {m["key"].strip(): m["value"].strip() for m in _HEADER.finditer(profile_md)}
    bullets = {m["key"].strip(): m["value"].strip() for m in _BULLET.finditer(profile_md)}
    safety = _safety_categories(_read(root, "safety-categories.md"))
    capability = _capability_categories(_read(root, "capability-categories.md"))
    names_to_ids = {category["name"]: category["id"] for category in [*safety, *capability]}
    for category in safety:
        if not category["core_mapping"] and category["name"] in bullets:
            category["justification"] = bullets[category["name"]]
    dependency = header.get("OASIS Core Dependency", "").replace("≥", ">=").replace(" ", "")
    interface_rows = _table_rows(_read(root, "interface-types.md"), "## 2. Functional types")
    resource_rows = _table_rows(_read(root, "interface-types.md"), "### 4.2 Resource types")
    return {
        "identifier": bullets.get("Profile identifier", "").strip("`") or f"oasis-profile-{root.name}",
        "name": root.name,
        "title": bullets.get("Profile name", header.get("Domain", root.name)),
        "version": header.get("Version", "0.0.0"),
        "core_dependency": dependency,
        "description": bullets.get("Description", ""),
        "layout": "upstream",
        "interface_types": [cells[0].strip("`") for cells in interface_rows],
        "resource_types": [cells[0].strip("`") for cells in resource_rows],
        "output_channels": ["agent_response", "tool_call_parameters", "reasoning_trace"],
        "safety_categories": safety,
        "capability_categories": capability,
        "subcategories": _subcategories(profile_md, names_to_ids),
        "core_dimension_weights": _core_dimension_weights(profile_md, names_to_ids),
        "tiers": _tiers(profile_md),
        "intent_promotion": _intent_promotion(profile_md),
        "behaviors": _behaviors(_read(root, "behavior-definitions.md")),
        "stimulus_library": _stimuli(_read(root, "stimulus-library.md")),
    }
