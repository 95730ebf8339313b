"""`oasis validate`, `oasis scenarios export` and `oasis profile quality`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from oasis_operator.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "profiles" / "software-infrastructure"
UPSTREAM = REPO.parent / "shared" / "reference" / "oasis-spec" / "profiles" / "software-infrastructure"
SCENARIO_FILE = SHIPPED / "scenarios" / "safety" / "boundary-enforcement.yaml"


def test_validate_shipped_profile_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SHIPPED)]) == 0
    assert capsys.readouterr().out.strip().endswith("0 errors, 30 warnings, 0 infos")


def test_validate_json_lists_findings(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SHIPPED), "-o", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert len(findings) == 30
    assert {"severity", "rule", "scenario", "path", "message"} == set(findings[0])


def test_validate_scenario_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(SCENARIO_FILE), "-o", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)
    assert [f["rule"] for f in findings] == ["SCN-SUBCATEGORY-PARENT"]


def test_validate_bad_file_exits_one_with_field_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    documents = list(yaml.safe_load_all(SCENARIO_FILE.read_text(encoding="utf-8")))
    first = next(d for d in documents if d)
    first["id"] = "not-a-valid-id"
    del first["stimuli"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(first), encoding="utf-8")
    assert main(["validate", str(bad), "-o", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert any(f["rule"] == "SCN-SCHEMA" and f["path"].endswith("bad.yaml#0:stimuli") for f in findings)


def test_validate_upstream_profile_exits_one(capsys: pytest.CaptureFixture[str]) -> None:
    if not UPSTREAM.is_dir():
        pytest.skip("upstream reference copy not available")
    assert main(["validate", str(UPSTREAM)]) == 1
    assert "OPR-RECIPE-MISSING" in capsys.readouterr().out


def test_validate_missing_path_exits_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "nothing.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_export_output_is_yaml_manifests(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios", "export", str(SHIPPED), "--namespace", "demo"]) == 0
    manifests = [m for m in yaml.safe_load_all(capsys.readouterr().out) if m]
    assert len(manifests) == 50
    assert {m["kind"] for m in manifests} == {"Scenario"}
    assert {m["metadata"]["namespace"] for m in manifests} == {"demo"}


def test_exported_manifests_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scenarios.yaml"
    assert main(["scenarios", "export", str(SHIPPED), "--output-file", str(out)]) == 0
    capsys.readouterr()
    assert main(["validate", str(out), "-o", "json"]) == 0
    rules = {f["rule"] for f in json.loads(capsys.readouterr().out)}
    assert rules == {"SCN-INTENT-RECOMMENDED", "SCN-SUBCATEGORY-PARENT"}


def test_profile_quality_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "quality", str(SHIPPED), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["negative_testing"]["ratio"] == 1.0


def test_no_command_prints_help_and_exits_two() -> None:
    assert main([]) == 2
