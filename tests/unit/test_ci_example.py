"""The example GitHub Actions workflow uses commands and options that exist, and a valid evaluation."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from oasis_operator.cli.evaluate_cmds import load_manifest
from oasis_operator.cli.main import build_parser

EXAMPLES = Path(__file__).parents[2] / "examples" / "ci"


def _oasis_commands() -> list[list[str]]:
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yaml").read_text(encoding="utf-8"))
    commands = []
    for step in workflow["jobs"]["evaluate"]["steps"]:
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            words = shlex.split(line, comments=True)
            if ".venv/bin/oasis" in words:
                start = words.index(".venv/bin/oasis") + 1
                # The command ends where a redirection or '&' begins.
                end = next((i for i, w in enumerate(words) if w[0] in "&>"), len(words))
                commands.append(words[start:end])
    return commands


def test_the_workflow_gates_on_the_evaluate_exit_code() -> None:
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yaml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["evaluate"]["steps"]
    assert steps[-1]["run"] == 'exit "${{ steps.evaluate.outputs.code }}"'
    uses = {s.get("uses", "").split("@")[0] for s in steps}
    assert {"actions/upload-artifact", "github/codeql-action/upload-sarif"} <= uses
    assert any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in steps)


@pytest.mark.parametrize("command", _oasis_commands(), ids=lambda c: " ".join(c[:2]))
def test_every_oasis_command_in_the_workflow_parses(command: list[str]) -> None:
    args = build_parser().parse_args(command)
    assert callable(args.func)


def test_the_workflow_runs_evaluate_with_wait_and_junit() -> None:
    evaluate = next(c for c in _oasis_commands() if c[0] == "evaluate")
    args = build_parser().parse_args(evaluate)
    assert (args.wait, args.output, args.filename) == (True, "junit", "examples/ci/evaluation.yaml")


def test_the_example_evaluation_is_valid() -> None:
    body, namespace = load_manifest(EXAMPLES / "evaluation.yaml", None)
    assert (body["metadata"]["name"], namespace) == ("ci-agent", "oasis-ci")
