"""The pure parts of the containment probes: outcomes, verdicts, the table, the snapshot diff, the CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from oasis_operator.cli.main import main
from oasis_operator.containment.acts import SKIPPED, Observation, kubectl_outcome
from oasis_operator.containment.harness import ProbeResult, local_plane_ports
from oasis_operator.containment.probes import HOST_PROBES, PROBE_IDS, PROBES, Probe
from oasis_operator.containment.report import as_json, markdown_table, summary
from oasis_operator.containment.snapshot import changes

PROBE = Probe("p", "tries | something", ("403",), lambda t: Observation("403"))


def result(outcome: str, record_ok: bool = True, diff: tuple[str, ...] = ()) -> ProbeResult:
    return ProbeResult(PROBE, Observation(outcome, "detail"), "self: 403", record_ok, diff)


def completed(code: int, stdout: str = "", stderr: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["kubectl"], code, stdout, stderr)


def test_probe_ids_are_unique_and_every_gateway_probe_names_its_record() -> None:
    assert len(PROBE_IDS) == len(set(PROBE_IDS))
    for probe in PROBES:
        assert probe.expected, probe.id
        on_the_host = probe in HOST_PROBES and probe.id != "port-scan"  # the scan knocks on the gateway too
        direct = probe.id.startswith(("etcd-", "apiserver-")) or on_the_host
        assert (probe.record is None) == direct, probe.id


@pytest.mark.parametrize(
    ("proc", "outcome"),
    [
        (completed(1, stderr='Error from server (Forbidden): secrets is forbidden: User "x" cannot'), "403"),
        (completed(1, stderr="Error from server (BadRequest): the request path segment"), "400"),
        (completed(1, stderr='error: failed to create token: serviceaccounts "default" is forbidden'), "403"),
        (completed(1, stderr="Error from server (TooManyRequests): too many requests"), "429"),
        (completed(0, stdout="namespace/default\n"), "ok"),
        (completed(1, stderr="Unable to connect to the server: dial tcp"), "error: exit 1"),
    ],
)
def test_kubectl_failures_map_to_their_http_code(
    proc: subprocess.CompletedProcess[str], outcome: str
) -> None:
    assert kubectl_outcome(proc).outcome == outcome


@pytest.mark.parametrize(
    ("res", "verdict"),
    [
        (result("403"), "contained"),
        (result("200"), "ESCAPED"),
        (result("403", record_ok=False), "ESCAPED"),
        (result("403", diff=("added Secret default/x",)), "ESCAPED"),
        (result(SKIPPED), "skipped"),
    ],
)
def test_a_probe_is_contained_only_when_all_three_promises_hold(res: ProbeResult, verdict: str) -> None:
    assert res.verdict == verdict


def test_the_table_escapes_cells_and_counts() -> None:
    results = [result("403"), result("200", diff=("added ClusterRoleBinding x",))]
    table = markdown_table(results).splitlines()
    assert table[0] == "| probe | the agent tries | expected | outcome | gateway record | cluster | result |"
    assert table[2] == "| `p` | tries \\| something | 403 | 403 | self: 403 | unchanged | contained |"
    assert table[3].endswith("| CHANGED: added ClusterRoleBinding x | ESCAPED |")
    assert summary(results) == "2 probes: 1 contained, 1 ESCAPED, 0 skipped"
    assert json.loads(json.dumps(as_json(results)))[1]["changes"] == ["added ClusterRoleBinding x"]


def test_snapshot_changes_name_what_was_added_removed_or_changed() -> None:
    before = {"Secret a/x": "1", "Secret a/y": "2", "ClusterRole z": "3"}
    after = {"Secret a/x": "1", "Secret a/y": "5", "ClusterRoleBinding w": "9"}
    assert changes(before, after) == [
        "added ClusterRoleBinding w",
        "removed ClusterRole z",
        "changed Secret a/y",
    ]
    assert changes(before, dict(before)) == []


def test_local_plane_ports_come_from_the_state_beside_the_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    assert local_plane_ports(kubeconfig) is None
    (tmp_path / "state.json").write_text(json.dumps({"etcd_client_port": 5, "etcd_peer_port": 6}))
    assert local_plane_ports(kubeconfig) == (5, 6)
    (tmp_path / "state.json").write_text("{not json")
    assert local_plane_ports(kubeconfig) is None


def test_cli_names_a_missing_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope" / "kubeconfig"
    assert main(["containment", "probe", "--kubeconfig", str(missing), "--kubectl", "sh"]) == 2
    err = capsys.readouterr().err
    assert f"{missing}: no such kubeconfig" in err


def test_cli_names_an_unknown_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["containment", "probe", "--run-dir", str(tmp_path), "--scenario", "infra.nope", "--kubectl", "sh"]
    assert main(args) == 2
    assert "scenario 'infra.nope' is not in the profile" in capsys.readouterr().err


def test_cli_names_a_missing_kubectl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kubeconfig").write_text("{}")
    args = ["containment", "probe", "--run-dir", str(tmp_path), "--kubectl", str(tmp_path / "kubectl")]
    assert main(args) == 2
    assert "was not found (give --kubectl PATH)" in capsys.readouterr().err


def test_cli_needs_to_know_where_the_sandbox_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["containment", "probe"])
    assert exited.value.code == 2
    assert "one of the arguments --run-dir --kubeconfig is required" in capsys.readouterr().err


def test_cli_names_an_unreachable_api_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    (tmp_path / "kubeconfig").write_text(json.dumps(config))
    args = ["containment", "probe", "--kubeconfig", str(tmp_path / "kubeconfig"), "--kubectl", "sh"]
    assert main(args) == 2
    assert "cannot reach the sandbox API server https://127.0.0.1:1" in capsys.readouterr().err
