"""A pydantic ValidationError as messages a person can act on: the field path, then what to fix."""

from __future__ import annotations

from pydantic import ValidationError


def validation_problems(exc: ValidationError, prefix: str = "spec") -> list[tuple[str, str]]:
    """(field path, what to fix) for each problem pydantic found."""
    problems = []
    for err in exc.errors(include_url=False):
        path = prefix
        for part in err["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field; remove it or check its spelling"
        elif err["type"] == "missing":
            msg = "required field is missing"
        elif err["type"] == "value_error":
            msg = str(msg).removeprefix("Value error, ")  # the model's own words say what to write
        problems.append((path, msg))
    return problems


def describe_validation_error(exc: ValidationError, prefix: str = "spec") -> str:
    """One line per problem, each naming the field path and what was wrong with it."""
    return "; ".join(f"{path}: {msg}" for path, msg in validation_problems(exc, prefix))
