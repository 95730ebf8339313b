"""An evaluation survives operator restarts, deletion, a dead agent and spec edits; preflight gaps stop it."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from tests.cluster_fixtures import SERVER_RELEASE, Cluster, wait_for
from tests.e2e.support import (
    OperatorProcess,
    agent_command,
    condition,
    create,
    environments_of,
    evaluation,
    events,
    get,
    processes_with_marker,
    unique,
    wait_done,
    wait_phase,
)

# Eight safety scenarios of different categories: long enough to interrupt, short enough for CI.
EIGHT = [
    "infra.safety.be.*",
    "infra.safety.do.*",
    "infra.safety.de.direct-secret-request-001",
    "infra.safety.sc.drift*",
]


def test_restart_mid_run_resumes_without_rerunning_or_leaking(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(custom, namespace, evaluation("resume", agent_command("careful"), scenarios={"ids": EIGHT}))
    before = wait_done(custom, namespace, "resume", 2)
    operator.stop(signal.SIGKILL)  # no chance to clean up: the next start must
    finished = {
        r["id"]: r["finishedAt"]
        for r in get(custom, namespace, "resume")["status"]["scenarios"]
        if r.get("result")
    }
    assert len(finished) >= 2
    operator.start()
    done = wait_phase(custom, namespace, "resume", timeout=600)
    status = done["status"]
    assert status["phase"] == "Completed"
    assert status["progress"]["done"] == status["progress"]["total"] == len(before["status"]["scenarios"])
    after = {r["id"]: r["finishedAt"] for r in status["scenarios"]}
    assert {k: after[k] for k in finished} == finished, "finished scenarios ran again"
    assert "Resumed" in [reason for _, reason, _ in events(api, namespace, "resume")]
    assert environments_of(api, namespace, "resume") == []


def test_delete_mid_run_tears_down_and_stops_the_agent(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    marker = unique("agent")
    create(
        custom, namespace, evaluation("doomed", agent_command("careful", marker), scenarios={"ids": EIGHT})
    )
    wait_done(custom, namespace, "doomed", 1)
    wait_for(lambda: environments_of(api, namespace, "doomed"), timeout=60, what="a sandbox in flight")
    custom.delete_namespaced_custom_object(
        "oasis.evaluation.dev", "v1alpha1", namespace, "oasisevaluations", "doomed"
    )

    def gone() -> bool:
        items = custom.list_namespaced_custom_object(
            "oasis.evaluation.dev", "v1alpha1", namespace, "oasisevaluations"
        )
        return not items["items"]

    wait_for(gone, timeout=150, what="the evaluation to be deleted")
    assert environments_of(api, namespace, "doomed") == []
    assert processes_with_marker(marker) == []


def test_preflight_gap_stops_before_any_scenario(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    create(custom, namespace, evaluation("tier2", agent_command("careful"), tier=2))
    status = wait_phase(custom, namespace, "tier2", timeout=120)["status"]
    assert status["phase"] == "Failed"
    ready = condition({"status": status}, "Ready")
    assert ready is not None
    assert ready["reason"] == "PreflightFailed"
    assert "complexity_tier_supported: requires gte 2, provider declares 1" in ready["message"]
    assert status["preflightGaps"] == [ready["message"].removeprefix("provider conformance: ")]
    # The self-check says which server it ran on, in status as in the verdict's conformance line.
    assert status["sandboxServer"].startswith(f"kube-apiserver {SERVER_RELEASE.kubernetes} (")
    assert not status.get("scenarios")
    assert not status.get("summary")
    names = [cm.metadata.name for cm in CoreV1Api(api).list_namespaced_config_map(namespace).items]
    assert "tier2-verdict" not in names
    assert "tier2-report" not in names


def test_spec_edit_after_start_is_refused(
    api: ApiClient, custom: CustomObjectsApi, namespace: str, operator: OperatorProcess
) -> None:
    ids = ["infra.safety.be.zone-violation-001", "infra.safety.do.unqualified-destruction-001"]
    create(custom, namespace, evaluation("frozen", agent_command("careful"), scenarios={"ids": ids}))
    wait_phase(custom, namespace, "frozen", {"Safety", "Capability", "Completed"}, timeout=120)
    patch = {"spec": {"scenarios": {"ids": ["infra.safety.*"]}, "parallelism": 4}}

    def edit() -> None:
        custom.patch_namespaced_custom_object(
            "oasis.evaluation.dev", "v1alpha1", namespace, "oasisevaluations", "frozen", patch
        )

    # The CRD's CEL rule refuses the edit before it is stored.
    with pytest.raises(ApiException) as refused:
        edit()
    assert refused.value.status == 422
    assert "the spec is frozen: the run started" in str(refused.value.body)
    status = wait_phase(custom, namespace, "frozen", {"Completed"}, timeout=300)["status"]
    assert status["progress"]["total"] == 2
    assert status["runGeneration"] == 1
    assert condition(get(custom, namespace, "frozen"), "SpecFrozen") is None


def test_evaluations_beyond_the_limit_wait_as_pending(
    cluster: Cluster, api: ApiClient, custom: CustomObjectsApi, namespace: str, tmp_path: Path
) -> None:
    operator = OperatorProcess(cluster, namespace, tmp_path, "--max-evaluations", "1").start()
    try:
        ids = {"ids": ["infra.safety.be.zone-violation-001", "infra.safety.do.unqualified-destruction-001"]}
        create(custom, namespace, evaluation("first", agent_command("careful"), scenarios=ids))
        wait_phase(custom, namespace, "first", {"Preflight", "Safety"}, timeout=60)
        create(custom, namespace, evaluation("second", agent_command("careful"), scenarios=ids))
        queued = wait_phase(custom, namespace, "second", {"Pending"}, timeout=60)
        progressing = condition(queued, "Progressing")
        assert progressing is not None
        assert progressing["reason"] == "Queued"
        assert get(custom, namespace, "first")["status"]["phase"] in {"Preflight", "Safety", "Capability"}
        assert wait_phase(custom, namespace, "second", timeout=300)["status"]["phase"] == "Completed"
        assert get(custom, namespace, "first")["status"]["phase"] == "Completed"
    finally:
        operator.stop()
