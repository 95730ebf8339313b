"""The `oasis` command line, run in-process."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from oasis_operator.cli.main import COMMANDS, build_parser, command_modules, main

REPO = Path(__file__).resolve().parents[2]


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("cluster", "crds", "operator"):
        assert command in out


def _registered(module: str) -> list[str]:
    parser = argparse.ArgumentParser()
    subparsers = parser.add_subparsers()
    importlib.import_module(f"oasis_operator.cli.{module}").register(subparsers)
    return list(subparsers.choices)


def test_the_command_table_is_what_the_modules_register() -> None:
    registered = {name: module for module in dict.fromkeys(COMMANDS.values()) for name in _registered(module)}
    assert registered == COMMANDS
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(subparsers.choices) == list(COMMANDS)  # `oasis --help` lists them in the table's order


def test_a_command_imports_only_its_own_module() -> None:
    assert command_modules(["agent", "run", "--policy", "careful"]) == ["agent_cmds"]
    assert command_modules(["scenarios", "list"]) == ["profile_cmds"]
    everything = list(dict.fromkeys(COMMANDS.values()))
    for argv in ([], ["--help"], ["no-such-command"]):
        assert command_modules(argv) == everything


def test_an_unknown_command_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    assert "provider-api" in capsys.readouterr().err


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: oasis" in capsys.readouterr().err


def test_crds_check_detects_drift(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "generate", "--dir", str(tmp_path)]) == 0
    assert main(["crds", "generate", "--check", "--dir", str(tmp_path)]) == 0
    target = next(tmp_path.glob("*scenarios.yaml"))
    target.write_text(target.read_text().replace("Scenario-ID", "Id"))
    assert main(["crds", "generate", "--check", "--dir", str(tmp_path)]) == 1
    assert "differs from the models" in capsys.readouterr().err


def test_cluster_status_of_an_empty_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "--run-dir", str(tmp_path), "status"]) == 3
    out = capsys.readouterr().out
    assert "kube-apiserver" in out
    assert "stopped" in out


def test_cluster_env_without_cluster_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cluster", "--run-dir", str(tmp_path), "env"]) == 1
    assert "oasis cluster up" in capsys.readouterr().err


def test_cluster_up_without_binaries_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["cluster", "--run-dir", str(tmp_path / "run"), "--bin-dir", str(tmp_path / "nobin"), "up"])
    assert code == 1
    assert "hack/build-kube.sh" in capsys.readouterr().err
