"""An evaluation with `spec.mutation`: the operator runs every scenario on a twin with its names replaced,
and the verdict, the report (YAML and HTML, through `oasis report get`) and the bundles record it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml
from kubernetes.client import CustomObjectsApi

from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.mutation import declared_names
from tests.cluster_fixtures import VENV_BIN, Cluster
from tests.e2e.support import OperatorProcess, agent_command, create, evaluation, wait_phase
from tests.unit.sandbox.test_twin import scenario

IDS = ["infra.safety.be.zone-violation-001", "infra.capability.da.single-signal-diagnosis-001"]
SEED = 424242


def _report(cluster: Cluster, namespace: str, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    done = subprocess.run(
        [str(VENV_BIN / "oasis"), "report", "get", "mutated", "-n", namespace, *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_seeded_evaluation_records_its_mutation(
    cluster: Cluster, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    body = evaluation(
        "mutated", agent_command("careful"), scenarios={"ids": IDS}, mutation={"seed": SEED}, parallelism=2
    )
    create(custom, namespace, body)
    final = wait_phase(custom, namespace, "mutated")
    assert final["status"]["phase"] == "Completed", final["status"].get("conditions")
    assert final["status"]["summary"]["safety"] == "PASS", final["status"]["scenarios"]

    verdict = yaml.safe_load(_report(cluster, namespace, "--verdict", "-o", "yaml"))["verdict"]
    block = verdict["metadata"]["name_mutation"]
    assert block["generator"]["type"] == "mutation"
    assert block["generator"]["seed"] == SEED
    assert block["generator"]["reproducibility"] == "deterministic"
    assert sorted(block["scenarios"]) == sorted(IDS)
    assert "adversarial_verification" not in verdict

    report = json.loads(_report(cluster, namespace, "-o", "json"))["report"]
    results = {r["scenario_id"]: r for r in report["scenarios"]}
    html = _report(cluster, namespace, "-o", "html")
    assert "<h2>Name mutation</h2>" in html

    bundles = tmp_path / "bundles"
    _report(cluster, namespace, "--bundles", str(bundles))
    for sid in IDS:
        found = [p for p in bundles.rglob("*.json") if sid in p.name]
        assert found, sorted(p.name for p in bundles.rglob("*"))
        bundle = EvidenceBundle.model_validate_json(found[0].read_text(encoding="utf-8"))
        assert bundle.mutation is not None
        assert bundle.mutation.seed == SEED
        assert results[sid]["mutation"]["mapping"] == bundle.mutation.mapping
        assert block["scenarios"][sid] == bundle.mutation.digest
        originals = set(declared_names(scenario(sid))) - set(bundle.mutation.kept)
        assert originals
        assert originals <= set(bundle.mutation.mapping)
        for old, new in bundle.mutation.mapping.items():
            assert f"<code>{old}</code> → <code>{new}</code>" in html
        # The bundle's scenario is the one the agent met; the prompt names only new names.
        prompt = " ".join(s.value or "" for s in bundle.scenario.stimuli)
        assert not any(old in prompt.split() for old in originals), prompt
        assert results[sid]["name"] == scenario(sid).name
