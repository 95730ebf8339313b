"""The example GitHub Actions workflow uses commands and options that exist, and a valid evaluation."""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

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


# --- the replay (hack/replay-ci-example.sh runs the job script hack/ci_example_job.py makes) -------------
REPO = Path(__file__).parents[2]


def _replay_module() -> Any:
    spec = importlib.util.spec_from_file_location("ci_example_job", REPO / "hack" / "ci_example_job.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((EXAMPLES / "github-actions.yaml").read_text(encoding="utf-8"))
    return loaded


def test_the_replay_runs_every_step_of_the_workflow_in_order() -> None:
    replay = _replay_module()
    workflow = _workflow()
    steps = workflow["jobs"]["evaluate"]["steps"]
    script = replay.job_script(workflow)
    assert script.count("\n# --- step ") == len(steps)
    position = 0
    for step in steps:
        if "run" in step:
            # The step's own text, as written in the workflow (only ${{ }} expressions are filled in).
            text = shlex.quote(replay.expand(step["run"], step["name"]))
            found = script.find(text, position)
            assert found > position, f"step {step['name']!r} is not in the replay, or not in order"
            position = found
        else:
            assert step["uses"].split("@")[0] in replay.STAND_INS


def test_the_replay_script_generates_its_job_from_the_workflow_file() -> None:
    script = (REPO / "hack" / "replay-ci-example.sh").read_text(encoding="utf-8")
    assert "WORKFLOW=examples/ci/github-actions.yaml" in script
    assert 'hack/ci_example_job.py "$WORKFLOW"' in script
    assert "mmdebstrap --quiet --mode=root --variant=minbase" in script


@pytest.mark.parametrize(
    ("step", "refused"),
    [
        ({"uses": "docker/setup-buildx-action@v3"}, "no stand-in for 'docker/setup-buildx-action@v3'"),
        ({"name": "x", "if": "github.event_name == 'push'", "run": "true"}, "does not know the condition"),
        ({"name": "x", "run": "echo ${{ secrets.TOKEN }}"}, "does not know the expression"),
    ],
)
def test_the_replay_refuses_what_it_cannot_stand_in_for(step: dict[str, Any], refused: str) -> None:
    replay = _replay_module()
    workflow = _workflow()
    workflow["jobs"]["evaluate"]["steps"].insert(1, step)
    with pytest.raises(replay.ReplayError, match=re.escape(refused)):
        replay.job_script(workflow)


def test_the_replay_gives_if_outputs_and_failures_their_github_meaning(tmp_path: Path) -> None:
    replay = _replay_module()
    workflow = {
        "jobs": {
            "evaluate": {
                "container": "debian:12",
                "env": {"WHERE": "${{ github.workspace }}/run"},
                "steps": [
                    {
                        "name": "set",
                        "id": "evaluate",
                        "run": 'echo "code=3" >> "$GITHUB_OUTPUT"; echo $WHERE',
                    },
                    {
                        "name": "on 3",
                        "if": "always() && steps.evaluate.outputs.code == '3'",
                        "run": "echo saw-3",
                    },
                    {
                        "name": "not 3",
                        "if": "always() && steps.evaluate.outputs.code != '3'",
                        "run": "echo no",
                    },
                    {"name": "fail", "run": "false"},
                    {"name": "after a failure", "run": "echo must-not-run"},
                    {"name": "always", "if": "always()", "run": 'exit "${{ steps.evaluate.outputs.code }}"'},
                ],
            }
        }
    }
    out, workspace = tmp_path / "out", tmp_path / "ws"
    script = replay.job_script(workflow, out=str(out), workspace=str(workspace))
    (tmp_path / "job.sh").write_text(script)
    env = {"PATH": "/usr/bin:/bin", "HOME_OVERRIDE": str(tmp_path / "home")}
    done = subprocess.run(
        ["bash", str(tmp_path / "job.sh")], check=False, capture_output=True, text=True, env=env
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{workspace}/run" in done.stdout
    assert "saw-3" in done.stdout
    assert "== step 3: not 3: skipped" in done.stdout
    assert "== step 4: fail: exit 1" in done.stdout
    assert "must-not-run" not in done.stdout
    assert "== step 6: always: exit 3" in done.stdout


def test_the_workflow_installs_from_a_bare_debian_12_with_make_deps() -> None:
    job = _workflow()["jobs"]["evaluate"]
    assert job["container"] == "debian:12"
    first = job["steps"][0]["run"]
    assert "apt-get install" in first
    assert {"git", "make"} <= set(first.split())
    assert any(s.get("run") == "make deps" for s in job["steps"])
    cache = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/cache"))
    assert cache["with"]["path"] == "/var/cache/oasis-operator"
    for pinned in (
        "localcluster/release.env",
        "hack/build-kube.sh",
        "hack/go-toolchain.env",
        "hack/install-go.sh",
    ):
        assert pinned in cache["with"]["key"]
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "deps:" in makefile
    assert "\tbash hack/install-deps.sh demo\n" in makefile
