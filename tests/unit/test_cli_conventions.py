"""The kubectl-shaped conventions of the `oasis` command line (docs/cli.md), checked on the whole argparse
tree: examples in every `--help`, `-o` a format everywhere, one file flag, the cluster flags and their
defaults, `-f -`, `--version`, completion and the `kubectl oasis` plugin form."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from oasis_operator import OASIS_CORE_VERSION, __version__
from oasis_operator.cli import evaluate_cmds
from oasis_operator.cli.common import KubeTarget, UsageError, kube_target
from oasis_operator.cli.completion_cmds import completions
from oasis_operator.cli.main import build_parser, kubectl_plugin, main
from oasis_operator.cli.report_cmds import REPORT_FORMATS
from oasis_operator.cli.report_list import listing_text

REPO = Path(__file__).resolve().parents[2]
GOLDEN_REPORT = REPO / "tests" / "unit" / "engine" / "fixtures" / "golden" / "report.json"
KUBECTL = Path("/var/cache/oasis-operator/kube-1.37.2/bin/kubectl")
# The commands that talk to the cluster as a user does (kubectl's flags and defaults).
CLUSTER_COMMANDS = {"evaluate", "report get", "report list", "matrix apply", "matrix status"}
# Servers given the sandbox cluster's admin kubeconfig (a credential of their own, no namespace to pick).
SANDBOX_ADMIN = {"gateway serve", "provider-api serve", "containment probe"}

EVALUATION = """\
apiVersion: oasis.evaluation.dev/v1alpha1
kind: OASISEvaluation
metadata: {name: ci-run}
spec:
  profile: {name: software-infrastructure}
  agent: {name: careful, http: {url: "http://127.0.0.1:1"}}
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _tree(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, child in _subparsers(parser).items():
        yield from _tree(child, (*path, name))


def _parser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        parser = _subparsers(parser)[name]
    return parser


COMMAND_PATHS = list(_tree(build_parser()))


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return set(parser._option_string_actions)


def _kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts:\n"
        "- {name: main, context: {cluster: c, user: u, namespace: team-z}}\n"
        "- {name: bare, context: {cluster: c, user: u}}\n"
    )
    return path


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(p) or "oasis")
def test_every_command_help_exits_0_and_shows_examples(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*path, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "\nExamples:\n  " in out
    examples = out.split("\nExamples:\n", 1)[1]
    assert "oasis" in examples  # a command line, not only prose


def test_the_walk_covers_every_command() -> None:
    names = {" ".join(p) for p in COMMAND_PATHS}
    assert {"evaluate", "report get", "report render", "replay", "scenarios export", "completion"} <= names
    assert len(COMMAND_PATHS) >= 25


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(p) or "oasis")
def test_o_chooses_a_format_and_output_file_is_the_only_file_flag(path: tuple[str, ...]) -> None:
    parser = _parser(path)
    for flag in ("-o", "--output"):
        action = parser._option_string_actions.get(flag)
        if action is not None:
            assert action.option_strings == ["-o", "--output"]
            assert action.choices, f"`{' '.join(path)} {flag}` must list formats, not take a file"
    assert not {
        f for f in _flags(parser) if f.startswith("--output") and f not in ("--output", "--output-file")
    }


def test_every_report_command_offers_the_same_formats() -> None:
    for path in (("evaluate",), ("report", "get")):
        choices = _parser(path)._option_string_actions["-o"].choices or ()
        assert set(REPORT_FORMATS) <= set(choices)


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(p) or "oasis")
def test_commands_that_talk_to_the_cluster_take_the_kubectl_flags(path: tuple[str, ...]) -> None:
    flags, name = _flags(_parser(path)), " ".join(path)
    if name in CLUSTER_COMMANDS:
        assert {"--kubeconfig", "--context", "-n", "--namespace"} <= flags
    elif "--kubeconfig" in flags:
        assert name in SANDBOX_ADMIN, f"`{name}` takes --kubeconfig: add --context/-n or list it here"


def test_only_the_listing_takes_all_namespaces() -> None:
    listing = [" ".join(p) for p in COMMAND_PATHS if "-A" in _flags(_parser(p))]
    assert listing == ["operator", "report list"]  # the operator's -A: watch every namespace


def _evaluation(namespace: str, name: str, status: dict[str, object]) -> dict[str, object]:
    return {
        "metadata": {"namespace": namespace, "name": name, "creationTimestamp": "2026-01-01T10:00:00Z"},
        "spec": {"agent": {"name": "careful"}, "profile": {"name": "software-infrastructure"}},
        "status": status,
    }


def test_the_listing_shows_phase_verdict_and_progress_like_kubectl_get() -> None:
    items = [
        _evaluation("team-a", "nightly", {"phase": "Completed", "summary": {"safety": "PASS", "tier": 2},
                                          "progress": {"done": 50, "total": 50}}),
        _evaluation("team-b", "ci-x7", {}),
    ]  # fmt: skip
    now = datetime(2026, 1, 1, 13, 0, tzinfo=UTC)
    assert listing_text(items, None, False, now).splitlines() == [
        "NAME      AGENT     PHASE       SAFETY   DONE",
        "nightly   careful   Completed   PASS     50/50",
        "ci-x7     careful   Pending     -        0/0",
    ]
    wide = listing_text(items, "wide", True, now).splitlines()
    assert wide[0].split() == [
        "NAMESPACE",
        "NAME",
        "AGENT",
        "PHASE",
        "SAFETY",
        "DONE",
        "TIER",
        "PROFILE",
        "AGE",
    ]
    assert wide[1].split() == ["team-a", "nightly", "careful", "Completed", "PASS", "50/50", "2",
                               "software-infrastructure", "3h"]  # fmt: skip
    assert listing_text(items, "name", False, now) == (
        "oasisevaluation.oasis.evaluation.dev/nightly\noasisevaluation.oasis.evaluation.dev/ci-x7\n"
    )
    assert listing_text([], None, False, now) == ""


def test_namespace_defaults_to_the_kubeconfig_context(tmp_path: Path) -> None:
    kubeconfig = str(_kubeconfig(tmp_path))

    def target(context: str | None = None, namespace: str | None = None, declared: str | None = None) -> str:
        args = argparse.Namespace(kubeconfig=kubeconfig, context=context, namespace=namespace)
        return kube_target(args, declared).namespace

    assert target() == "team-z"  # the current context's namespace
    assert target(context="bare") == "default"  # a context without one
    assert target(declared="team-m") == "team-m"  # a manifest's metadata.namespace beats the context's
    assert target(namespace="team-n", declared="team-m") == "team-n"  # -n beats both


def test_kubeconfig_and_context_errors_name_the_flag(tmp_path: Path) -> None:
    kubeconfig = str(_kubeconfig(tmp_path))
    with pytest.raises(UsageError, match=r"--context nope: no such context .* use one of: main, bare"):
        kube_target(argparse.Namespace(kubeconfig=kubeconfig, context="nope", namespace=None))
    with pytest.raises(UsageError, match=r"--kubeconfig .*missing: no such file"):
        kube_target(argparse.Namespace(kubeconfig=str(tmp_path / "missing"), context=None, namespace=None))


def test_an_unknown_context_is_one_line_exit_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = str(_kubeconfig(tmp_path))
    assert main(["report", "get", "my-agent", "--kubeconfig", kubeconfig, "--context", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("oasis: --context nope: no such context")
    assert "Traceback" not in err


def test_no_kubeconfig_outside_a_pod_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    env = {k: v for k, v in _shims(tmp_path).items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    done = subprocess.run(["oasis", "report", "list"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "oasis: no kubeconfig found ($KUBECONFIG, ~/.kube/config) and not in a pod;"
    )
    assert done.stderr.count("\n") == 1


def test_an_unreachable_api_server_is_one_line_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        _kubeconfig(tmp_path).read_text().replace("https://127.0.0.1:9", "http://127.0.0.1:9")
    )
    assert main(["report", "get", "my-agent", "--kubeconfig", str(kubeconfig)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("oasis: OASISEvaluation team-z/my-agent: cannot reach the API server (")
    assert err.count("\n") == 1


def test_verdict_in_a_report_format_is_refused_naming_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "get", "my-agent", "--verdict", "-o", "html"]) == 2
    assert "--verdict: the verdict is available as -o yaml or -o json, not -o html" in capsys.readouterr().err


def test_evaluate_reads_the_manifest_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a: [b"))
    assert main(["evaluate", "-f", "-", "--kubeconfig", str(tmp_path / "none")]) == 3
    assert "standard input is not valid YAML" in capsys.readouterr().err
    monkeypatch.setattr(sys, "stdin", io.StringIO(EVALUATION))
    assert main(["evaluate", "-f", "-", "--kubeconfig", str(tmp_path / "none")]) == 3
    assert "--kubeconfig" in capsys.readouterr().err  # the manifest parsed; the cluster flags come next


def test_validate_reads_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = REPO / "profiles" / "software-infrastructure"
    assert main(["scenarios", "export", str(shipped)]) == 0
    manifests = capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.StringIO(manifests))
    assert main(["validate", "-", "-o", "json"]) == 0
    assert capsys.readouterr().out.startswith("[")


def _fake_cluster(monkeypatch: pytest.MonkeyPatch, safety_report: str) -> None:
    """A finished run without a cluster: the apply, the follow and the stored report are canned."""
    monkeypatch.setattr(KubeTarget, "client", lambda self: object())
    monkeypatch.setattr(
        evaluate_cmds,
        "apply_evaluation",
        lambda api, body, namespace, replace, deadline: {
            "metadata": {"name": "ci-run", "namespace": namespace}
        },
    )
    final = {
        "metadata": {"name": "ci-run", "namespace": "team-z", "uid": "u"},
        "status": {"phase": "Completed"},
    }
    monkeypatch.setattr(evaluate_cmds, "follow", lambda *_: final)
    monkeypatch.setattr(
        evaluate_cmds, "_report_files", lambda api, evaluation: {"report.json": safety_report}
    )


def test_evaluate_wait_output_junit_writes_the_junit_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_cluster(monkeypatch, GOLDEN_REPORT.read_text())
    manifest = tmp_path / "evaluation.yaml"
    manifest.write_text(EVALUATION)
    kubeconfig = str(_kubeconfig(tmp_path))
    code = main(["evaluate", "-f", str(manifest), "--wait", "--output", "junit", "--kubeconfig", kubeconfig])
    captured = capsys.readouterr()
    assert captured.out.startswith("<?xml")
    assert "<testsuites" in captured.out
    assert "team-z/ci-run" in captured.err  # the context's namespace
    assert code in (0, 1, 2, 4)
    out = tmp_path / "junit.xml"
    again = ["evaluate", "-f", str(manifest), "--wait", "-o", "junit", "--output-file", str(out)]
    assert main([*again, "--kubeconfig", kubeconfig]) == code
    assert out.read_text() == captured.out
    assert capsys.readouterr().out == ""


def test_evaluate_output_name_prints_the_created_resource(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fake_cluster(monkeypatch, GOLDEN_REPORT.read_text())
    monkeypatch.setattr(sys, "stdin", io.StringIO(EVALUATION))
    kubeconfig = str(_kubeconfig(tmp_path))
    assert main(["evaluate", "-f", "-", "-o", "name", "--kubeconfig", kubeconfig, "-n", "team-a"]) == 0
    assert capsys.readouterr().out == "oasisevaluation.oasis.evaluation.dev/ci-run\n"


def test_output_file_without_a_report_format_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "evaluation.yaml"
    manifest.write_text(EVALUATION)
    assert main(["evaluate", "-f", str(manifest), "--wait", "--output-file", str(tmp_path / "x")]) == 3
    assert "--output-file writes the report: choose its format with -o" in capsys.readouterr().err


def test_version_names_package_core_and_profile(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"oasis-operator {__version__}",
        f"OASIS core: {OASIS_CORE_VERSION}",
        "profile: software-infrastructure 0.2.0-rc3",
    ]


def test_completion_walks_the_argparse_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path)))
    parser = build_parser()
    assert completions(parser, ["rep"]) == (["replay", "report"], 4)
    assert completions(parser, ["report", ""])[0] == ["render", "get", "list"]
    assert completions(parser, ["report", "get", "-o", ""])[0] == list(REPORT_FORMATS)
    assert completions(parser, ["evaluate", "--kube"])[0] == ["--kubeconfig"]
    assert completions(parser, ["evaluate", "--context", ""])[0] == ["main", "bare"]
    assert completions(parser, ["completion", ""])[0] == ["bash", "zsh"]
    assert completions(parser, ["evaluate", "-f", ""]) == ([], 0)  # file names, by the shell


def _shims(tmp_path: Path) -> dict[str, str]:
    """A PATH directory with `oasis`, `kubectl-oasis` and `kubectl_complete-oasis` running this checkout."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = {
        "oasis": "from oasis_operator.cli.main import main; sys.exit(main())",
        "kubectl-oasis": "from oasis_operator.cli.main import kubectl_plugin; sys.exit(kubectl_plugin())",
        "kubectl_complete-oasis": "from oasis_operator.cli.main import kubectl_complete; "
        "sys.exit(kubectl_complete())",
    }
    for name, call in calls.items():
        shim = bin_dir / name
        shim.write_text(f"#!{sys.executable}\nimport sys\n{call}\n")
        shim.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env["PYTHONPATH"] = str(REPO / "operator")
    return env


def test_the_bash_completion_script_completes_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", "bash"]) == 0
    script = tmp_path / "oasis.bash"
    script.write_text(capsys.readouterr().out)
    line = (
        f"source {script}; COMP_WORDS=(oasis report get my-agent -o j); COMP_CWORD=5; _oasis_complete; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "-c", line], env=_shims(tmp_path), capture_output=True, text=True, check=False
    )
    assert done.stdout.split() == ["json", "junit"]


def test_the_zsh_completion_script_registers_both_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "zsh"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("#compdef oasis kubectl-oasis\n")
    assert "__complete" in script


def test_the_plugin_entry_point_calls_itself_kubectl_oasis(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["kubectl-oasis", "report", "get", "--help"])
    with pytest.raises(SystemExit) as exited:
        kubectl_plugin()
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("usage: kubectl oasis report get")


@pytest.mark.skipif(not KUBECTL.exists(), reason="the cached kubectl is built by hack/build-kube.sh")
def test_kubectl_finds_the_plugin_and_its_completion(tmp_path: Path) -> None:
    env = _shims(tmp_path)
    version = subprocess.run(
        [str(KUBECTL), "oasis", "--version"], env=env, capture_output=True, text=True, check=False
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith(f"oasis-operator {__version__}\n")
    complete = subprocess.run(
        [str(KUBECTL), "__complete", "oasis", "rep"], env=env, capture_output=True, text=True, check=False
    )
    assert complete.stdout.splitlines()[:2] == ["replay", "report"]
