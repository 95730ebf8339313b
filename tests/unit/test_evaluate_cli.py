"""`oasis evaluate`: exit codes and the errors before any verdict that need no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from oasis_operator.cli.evaluate_cmds import progress_line, verdict_exit_code
from oasis_operator.cli.main import main

GOOD = """\
apiVersion: oasis.evaluation.dev/v1alpha1
kind: OASISEvaluation
metadata: {name: ci-run, namespace: team-a}
spec:
  profile: {name: software-infrastructure}
  agent: {name: careful, http: {url: "http://127.0.0.1:1"}}
"""


@pytest.mark.parametrize(
    ("safety", "aborted", "code"),
    [
        ("PASS", False, 0),
        ("FAIL", False, 1),
        ("FAIL", True, 1),
        ("PROVIDER_FAILURE", False, 2),
        ("PROVIDER_FAILURE", True, 2),
        (None, True, 3),
        (None, False, 3),
        ("NOT_EVALUATED", False, 4),
    ],
)
def test_exit_code_follows_the_safety_verdict(safety: str | None, aborted: bool, code: int) -> None:
    assert verdict_exit_code(safety, aborted) == code


def test_not_evaluated_has_its_own_exit_code_in_the_help() -> None:
    from oasis_operator.cli import evaluate_cmds, verdict_codes  # noqa: PLC0415 - docstrings are the help

    assert verdict_codes.EXIT_NOT_EVALUATED == 4
    assert "4  safety verdict NOT_EVALUATED" in (evaluate_cmds.__doc__ or "")


def test_progress_line_names_phase_and_counts() -> None:
    status = {"phase": "Safety", "progress": {"done": 3, "total": 12, "passed": 2, "failed": 1}}
    assert progress_line("team-a/x", status) == "oasis: team-a/x phase=Safety done=3/12 pass=2 fail=1"
    assert progress_line("team-a/x", {}) == "oasis: team-a/x phase=Pending done=0/0"
    failing = {"phase": "Safety", "progress": {"done": 2, "total": 5, "unevaluable": 2}}
    assert progress_line("team-a/x", failing) == "oasis: team-a/x phase=Safety done=2/5 unevaluable=2"


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        (None, [], "cannot read"),
        ("a: [b", [], "is not valid YAML"),
        (GOOD + "---\n" + GOOD, [], "exactly one OASISEvaluation object, found 2 documents"),
        (GOOD.replace("kind: OASISEvaluation", "kind: Scenario"), [], "set them to"),
        (GOOD.replace("metadata: {name: ci-run, namespace: team-a}", "metadata: {}"), [], "metadata.name"),
        (GOOD.replace("http: {url", "htp: {url"), [], "spec.agent"),
        (GOOD, ["-n", "team-b"], "metadata.namespace is 'team-a' but -n says 'team-b'"),
    ],
)
def test_bad_files_exit_3_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, extra: list[str], message: str
) -> None:
    path = tmp_path / "evaluation.yaml"
    if text is not None:
        path.write_text(text)
    kubeconfig = tmp_path / "no-such-kubeconfig"
    code = main(["evaluate", "-f", str(path), "--wait", "--kubeconfig", str(kubeconfig), *extra])
    assert code == 3
    assert message in capsys.readouterr().err


def test_unreachable_api_server_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text(GOOD)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    code = main(["evaluate", "-f", str(path), "--wait", "--timeout", "5", "--kubeconfig", str(kubeconfig)])
    assert code == 3
    assert "team-a" in capsys.readouterr().err


def test_usage_errors_exit_3_not_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["evaluate", "--wait"])
    assert raised.value.code == 3
    assert "the following arguments are required: -f/--filename" in capsys.readouterr().err


def test_output_format_needs_wait(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "evaluation.yaml"
    path.write_text(GOOD)
    assert main(["evaluate", "-f", str(path), "-o", "junit"]) == 3
    assert "add --wait" in capsys.readouterr().err
