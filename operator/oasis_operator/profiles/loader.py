"""Read a profile directory into a `Profile`: this project's layout or the upstream layout, unchanged.

This project's layout (``profiles/software-infrastructure/``)::

    profile.yaml                              metadata, categories, weights, tiers, agent configuration
    behaviors.yaml                            behaviour registry with recipes and phrase lists
    stimulus-library.yaml                     reusable stimuli
    provider-conformance-requirements.yaml    provider conformance contract
    scenarios/{safety,capability}/*.yaml      one multi-document file per category

The upstream layout has ``profile.md`` and the other markdown documents instead of the first three
files; `upstream.py` reads those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario
from oasis_operator.profiles import upstream
from oasis_operator.settings import OperatorSettings

PROFILE_FILE = "profile.yaml"
BEHAVIORS_FILE = "behaviors.yaml"
STIMULI_FILE = "stimulus-library.yaml"
CONFORMANCE_FILE = "provider-conformance-requirements.yaml"
SCENARIO_DIRS = ("scenarios/safety", "scenarios/capability")


class ProfileLoadError(ValueError):
    """A profile directory or scenario file that cannot be read; the message names file and field."""


@dataclass(frozen=True)
class ScenarioDocument:
    """One YAML document that should be a scenario, with where it came from."""

    source: str  # "path#index" (index counts non-empty documents from 0)
    document: dict[str, Any]


# libyaml's loader when PyYAML has it (its wheels do): the same documents and objects as the Python
# SafeLoader, about five times faster; a profile is read at every operator start.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as error:
        raise ProfileLoadError(f"{path}: not valid YAML: {error}") from error


def read_yaml_documents(path: Path) -> list[ScenarioDocument]:
    """Every non-empty document of a (multi-document) YAML file."""
    try:
        documents = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER))
    except yaml.YAMLError as error:
        raise ProfileLoadError(f"{path}: not valid YAML: {error}") from error
    found: list[ScenarioDocument] = []
    for document in documents:
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ProfileLoadError(f"{path}: document {len(found)} is not a mapping")
        found.append(ScenarioDocument(source=f"{path}#{len(found)}", document=document))
    return found


def detect_layout(root: Path) -> str:
    """`operator` when the directory has profile.yaml, `upstream` when it has profile.md."""
    if (root / PROFILE_FILE).is_file():
        return "operator"
    if (root / "profile.md").is_file():
        return "upstream"
    raise ProfileLoadError(f"{root}: neither {PROFILE_FILE} nor profile.md found; not a profile directory")


def scenario_files(root: Path) -> list[Path]:
    """Scenario files of a profile directory, safety before capability, each sorted by name."""
    files: list[Path] = []
    for sub in SCENARIO_DIRS:
        directory = root / sub
        if directory.is_dir():
            files.extend(sorted(directory.glob("*.yaml")))
    return files


def load_scenario_documents(root: Path) -> list[ScenarioDocument]:
    """The raw scenario documents of a profile directory, in a stable order."""
    documents: list[ScenarioDocument] = []
    for path in scenario_files(root):
        documents.extend(read_yaml_documents(path))
    return documents


def _load_operator_metadata(root: Path) -> dict[str, Any]:
    data = _read_yaml(root / PROFILE_FILE)
    if not isinstance(data, dict):
        raise ProfileLoadError(f"{root / PROFILE_FILE}: expected a mapping")
    metadata: dict[str, Any] = dict(data)
    behaviors_path = root / BEHAVIORS_FILE
    if behaviors_path.is_file():
        metadata["behaviors"] = _read_yaml(behaviors_path) or {}
    stimuli_path = root / STIMULI_FILE
    if stimuli_path.is_file():
        metadata["stimulus_library"] = (_read_yaml(stimuli_path) or {}).get("stimuli", [])
    conformance_path = root / CONFORMANCE_FILE
    if conformance_path.is_file():
        metadata["conformance"] = _read_yaml(conformance_path)
    metadata["layout"] = "operator"
    return metadata


def load_profile_metadata(path: str | Path) -> Profile:
    """Everything of a profile except its scenarios (for validating scenarios from elsewhere)."""
    root = Path(path)
    layout = detect_layout(root)
    if layout == "operator":
        metadata = _load_operator_metadata(root)
    else:
        metadata = upstream.read_upstream_metadata(root)
        conformance_path = root / CONFORMANCE_FILE
        if conformance_path.is_file():
            metadata["conformance"] = _read_yaml(conformance_path)
    try:
        return Profile.model_validate(metadata)
    except ValidationError as error:
        raise ProfileLoadError(f"{root}: profile metadata is invalid: {_describe(error)}") from error


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        location = ".".join(str(part) for part in item["loc"])
        parts.append(f"{location}: {item['msg']}")
    more = len(error.errors()) - 5
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def parse_scenario(document: ScenarioDocument) -> Scenario:
    """Validate one raw document as a scenario; raise ProfileLoadError naming source and field."""
    try:
        return Scenario.model_validate(document.document)
    except ValidationError as error:
        raise ProfileLoadError(f"{document.source}: not a valid scenario: {_describe(error)}") from error


def load_profile(path: str | Path) -> Profile:
    """Load a profile directory (either layout) with all its scenarios.

    Raises ProfileLoadError when a file is missing or malformed; use `oasis validate` (or
    `validate_documents`) to get field-level findings instead of an exception.
    """
    root = Path(path)
    profile = load_profile_metadata(root)
    scenarios = [parse_scenario(document) for document in load_scenario_documents(root)]
    return profile.model_copy(update={"scenarios": scenarios})


def default_profile_path(configured: Path | None = None) -> Path:
    """The shipped SI profile: `configured` if given, else ``profiles/software-infrastructure``.

    `configured` is the operator's OASIS_PROFILE_DIR setting (`--profile-dir`), which lets a container
    image put the profile anywhere (e.g. /etc/oasis/profile).
    """
    if configured is not None:
        return configured
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "profiles" / "software-infrastructure"
        if (candidate / PROFILE_FILE).is_file():
            return candidate
    raise ProfileLoadError("the shipped profile directory profiles/software-infrastructure was not found")


def shipped_profile_path(env: Mapping[str, str] | None = None) -> Path:
    """The profile the commands besides `oasis operator` load by default: OASIS_PROFILE_DIR (the same
    setting as the operator's), else the shipped SI profile."""
    return default_profile_path(OperatorSettings.only("OASIS_PROFILE_DIR", env=env).profile_dir)
