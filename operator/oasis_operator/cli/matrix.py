"""The pure half of `oasis matrix`: a matrix file read and checked, its evaluations built, and the
summary of their states with the exit code of the whole.

`build_evaluations` is the one place a matrix becomes OASISEvaluation objects; `render`, `apply` and
`status -f` all go through it, so a GitOps repository committing `oasis matrix render`'s output and a CI
job running `oasis matrix apply` create the same objects. Every object is checked as the API server's
schema will check it (`OASISEvaluationSpec`), and errors name the matrix field to fix (`agents[1].agent.
command.command`, `template.parallelism`), so a bad matrix creates nothing.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import ValidationError

from oasis_operator import API_GROUP
from oasis_operator.cli.verdict_codes import (
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_NOT_EVALUATED,
    EXIT_PASS,
    EXIT_PROVIDER,
    verdict_exit_code,
)
from oasis_operator.models.crd import OASISEvaluationSpec
from oasis_operator.models.matrix import (
    API_VERSION_TEXT,
    KIND,
    MATRIX_AGENT_LABEL,
    MATRIX_LABEL,
    MATRIX_MODEL_LABEL,
    MAX_EVALUATIONS,
    PRIORITY_LABEL,
    QUEUE_LABEL,
    EvaluationMatrix,
)

MATRIX_SIZE_ANNOTATION = f"{API_GROUP}/matrix-size"
TERMINAL = ("Completed", "Aborted", "Failed")
# The matrix exits with the most severe of its evaluations' exit codes, in this order: any FAIL, else any
# PROVIDER_FAILURE/aborted, else any without a verdict, else any NOT_EVALUATED, else PASS.
SEVERITY = (EXIT_FAIL, EXIT_PROVIDER, EXIT_ERROR, EXIT_NOT_EVALUATED, EXIT_PASS)


class MatrixError(Exception):
    """A matrix that cannot be used; the message names the field and the fix."""


def _where(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the document)"


def _problems(exc: ValidationError, prefix: tuple[int | str, ...] = ()) -> str:
    return "; ".join(f"{_where(prefix + tuple(e['loc']))}: {e['msg']}" for e in exc.errors()[:5])


def load_matrix(text: str, source: str) -> EvaluationMatrix:
    """The one EvaluationMatrix document of `text` (a file's content), checked."""
    try:
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise MatrixError(f"{source} is not valid YAML: {exc}") from exc
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise MatrixError(f"{source} must hold exactly one {KIND} document, found {len(documents)}")
    document: dict[str, Any] = documents[0]
    if document.get("kind") != KIND:
        raise MatrixError(
            f"{source}: kind is {document.get('kind')!r}; a matrix file has kind {KIND!r} and apiVersion "
            f"{API_VERSION_TEXT!r} (for one OASISEvaluation use `oasis evaluate -f`)"
        )
    try:
        return EvaluationMatrix.model_validate(document)
    except ValidationError as exc:
        raise MatrixError(f"{source}: {_problems(exc)}") from exc


@dataclass(frozen=True)
class Member:
    """One evaluation of the matrix: its name and the agent and model it runs."""

    name: str
    agent: str
    model: str | None
    agent_index: int
    model_index: int | None


def members(matrix: EvaluationMatrix) -> list[Member]:
    """Agents x models in file order (agents outer), named `<matrix>-<agent>[-<model>]`."""
    models: list[int | None] = list(range(len(matrix.models))) or [None]
    listed = []
    for a, agent in enumerate(matrix.agents):
        for m in models:
            model = None if m is None else matrix.models[m].name
            name = f"{matrix.metadata.name}-{agent.name}" + (f"-{model}" if model else "")
            listed.append(Member(name, agent.name, model, a, m))
    return listed


def _check_unique(matrix: EvaluationMatrix) -> None:
    for field, names in (
        ("agents", [a.name for a in matrix.agents]),
        ("models", [m.name for m in matrix.models]),
    ):
        twice = [name for name, count in Counter(names).items() if count > 1]
        if twice:
            index = names.index(twice[0], names.index(twice[0]) + 1)
            raise MatrixError(
                f"{field}[{index}].name: {twice[0]!r} is used twice; give each a name of its own"
            )
    built = Counter(m.name for m in members(matrix))
    clash = next((name for name, count in built.items() if count > 1), None)
    if clash:
        raise MatrixError(
            f"agents/models: two pairs give the evaluation name {clash!r} (an agent name ending in a model "
            "name); rename one"
        )


def _agent(matrix: EvaluationMatrix, index: int, model_index: int | None) -> dict[str, Any]:
    entry = matrix.agents[index]
    agent: dict[str, Any] = entry.agent.model_dump(mode="json", exclude_unset=True)
    agent = {"name": entry.name, **agent}  # a display name; the agent's own identity wins
    if model_index is None:
        return agent
    model = matrix.models[model_index]
    kind = next((k for k in ("command", "job") if agent.get(k)), None)
    if kind is None:
        raise MatrixError(
            f"agents[{index}].agent: an HTTP agent cannot be given models[{model_index}].env (its model is "
            "its server's own configuration); list one agent per endpoint instead, or drop `models`"
        )
    agent[kind]["env"] = {**agent[kind].get("env", {}), **model.env}
    return agent


def build_evaluations(matrix: EvaluationMatrix, namespace: str | None = None) -> list[dict[str, Any]]:
    """The OASISEvaluation objects of the matrix, in `members` order, each checked as the API server
    will check it. `namespace` (the command line's) takes the place of `metadata.namespace`."""
    if "agent" in matrix.template:
        raise MatrixError("template.agent: each evaluation's agent comes from `agents`; remove it here")
    _check_unique(matrix)
    listed = members(matrix)
    if len(listed) > MAX_EVALUATIONS:
        raise MatrixError(
            f"agents x models: {len(listed)} evaluations, more than {MAX_EVALUATIONS}; split the matrix"
        )
    meta = matrix.metadata
    where = namespace or meta.namespace
    bodies = []
    for member in listed:
        spec = copy.deepcopy(matrix.template)
        spec["agent"] = _agent(matrix, member.agent_index, member.model_index)
        if matrix.repetitions is not None:
            spec["repetitions"] = matrix.repetitions
        try:
            OASISEvaluationSpec.model_validate(spec)
        except ValidationError as exc:
            first = exc.errors()[0]["loc"]
            in_agent = first[:1] == ("agent",)
            prefix: tuple[int | str, ...] = ("agents", member.agent_index) if in_agent else ("template",)
            raise MatrixError(f"{member.name}: {_problems(exc, prefix)}") from exc
        labels = {**meta.labels, MATRIX_LABEL: meta.name, MATRIX_AGENT_LABEL: member.agent}
        if member.model:
            labels[MATRIX_MODEL_LABEL] = member.model
        if matrix.queue:
            labels[QUEUE_LABEL] = matrix.queue
        if matrix.priorityClass:
            labels[PRIORITY_LABEL] = matrix.priorityClass
        metadata: dict[str, Any] = {"name": member.name}
        if where:
            metadata["namespace"] = where
        metadata["labels"] = labels
        metadata["annotations"] = {**meta.annotations, MATRIX_SIZE_ANNOTATION: str(len(listed))}
        bodies.append({"apiVersion": API_VERSION_TEXT, "kind": "OASISEvaluation", "metadata": metadata,
                       "spec": spec})  # fmt: skip
    return bodies


def render_text(bodies: list[dict[str, Any]], fmt: str) -> str:
    """The objects as a multi-document YAML stream (what `kubectl apply -f -` reads) or a JSON `List`."""
    if fmt == "json":
        import json  # noqa: PLC0415

        return json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies}, indent=2) + "\n"
    return yaml.safe_dump_all(bodies, sort_keys=False)


@dataclass(frozen=True)
class Row:
    """One evaluation's line of the summary."""

    name: str
    agent: str
    model: str
    phase: str
    safety: str
    done: str
    reason: str
    code: int | None
    """Its exit code once it has ended (None: still running or waiting)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "agent": self.agent, "model": self.model, "phase": self.phase,
            "safety": self.safety, "done": self.done, "reason": self.reason, "exitCode": self.code,
        }  # fmt: skip


def _reason(status: dict[str, Any]) -> str:
    """Why it is where it is: Progressing's reason while something is under way or queued (Queued,
    Preflight, Safety...), else Ready's (VerdictReady, Aborted, NotEvaluated, a failure's reason)."""
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    progressing, ready = conditions.get("Progressing") or {}, conditions.get("Ready") or {}
    if progressing.get("status") == "True" and progressing.get("reason"):
        return str(progressing["reason"])
    return str(ready.get("reason") or progressing.get("reason") or "-")


def row(name: str, item: dict[str, Any] | None) -> Row:
    """The summary line of the evaluation `name` (`item` None: it does not exist)."""
    if item is None:
        return Row(name, "-", "-", "Missing", "-", "-", "NotFound", EXIT_ERROR)
    labels, status = item["metadata"].get("labels") or {}, item.get("status") or {}
    summary, progress = status.get("summary") or {}, status.get("progress") or {}
    phase = status.get("phase") or "Pending"
    code = None
    if phase == "Failed":
        code = EXIT_ERROR
    elif phase in TERMINAL:
        code = verdict_exit_code(summary.get("safety"), bool(summary.get("aborted")))
    return Row(
        name,
        labels.get(MATRIX_AGENT_LABEL, "-"),
        labels.get(MATRIX_MODEL_LABEL, "-"),
        phase,
        summary.get("safety") or "-",
        f"{progress.get('done', 0)}/{progress.get('total', 0)}",
        _reason(status),
        code,
    )


def expected_names(items: list[dict[str, Any]], matrix_name: str) -> list[str]:
    """The evaluations a matrix holds, from the ones found: their names, and a placeholder for each one
    the size annotation says is missing (a deleted evaluation must not read as a smaller, passing matrix)."""
    names = sorted(i["metadata"]["name"] for i in items)
    sizes = {(i["metadata"].get("annotations") or {}).get(MATRIX_SIZE_ANNOTATION) for i in items}
    declared = max((int(s) for s in sizes if s and s.isdigit()), default=len(names))
    missing = [f"{matrix_name}-<missing-{n + 1}>" for n in range(max(0, declared - len(names)))]
    return names + missing


def overall_code(rows: list[Row]) -> int:
    """The matrix's exit code: the most severe of its evaluations' (`SEVERITY`); a row still running
    counts as no verdict."""
    codes = {EXIT_ERROR if r.code is None else r.code for r in rows} or {EXIT_ERROR}
    return next(code for code in SEVERITY if code in codes)


def table_text(rows: list[Row]) -> str:
    """The rows as a kubectl-style table."""
    header = ["NAME", "AGENT", "MODEL", "PHASE", "SAFETY", "DONE", "REASON"]
    lines = [header] + [[r.name, r.agent, r.model, r.phase, r.safety, r.done, r.reason] for r in rows]
    widths = [max(len(line[c]) for line in lines) for c in range(len(header))]
    return "".join(
        "   ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() + "\n" for line in lines
    )


def tally(rows: list[Row]) -> str:
    """One line: how many evaluations, and how many of each safety verdict or state."""
    counts = Counter(r.safety if r.code is not None and r.safety != "-" else r.phase for r in rows)
    return f"{len(rows)} evaluations: " + ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
