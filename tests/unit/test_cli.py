"""The `oasis` command line, run in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from oasis_operator.cli.main import main

REPO = Path(__file__).resolve().parents[2]


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("cluster", "crds", "operator"):
        assert command in out


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
