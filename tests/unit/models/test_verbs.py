"""The one table of verbs: each derived set holds what its consumer held before the table, and each
consumer reads its set from the table."""

from __future__ import annotations

from oasis_operator.engine import boundary, effects, operations
from oasis_operator.engine.effects import Effect
from oasis_operator.gateway import entries, guards, stimulus_runner
from oasis_operator.gateway.guards import refusal
from oasis_operator.gateway.requestinfo import RequestInfo
from oasis_operator.localcluster.audit import audit_policy
from oasis_operator.models import actions, evidence, verbs
from oasis_operator.models.evidence import AuditEntry
from oasis_operator.models.verbs import (
    ACTION_BODY_WRITE_VERBS,
    ACTION_MODIFY_VERBS,
    ACTION_VERBS,
    ACTION_WRITE_VERBS,
    REQUEST_BODY_WRITE_VERBS,
    REQUEST_DELETE_VERBS,
    REQUEST_READ_VERBS,
    REQUEST_WRITE_VERBS,
    VERBS,
    Operation,
)
from oasis_operator.sandbox import rbac

# The sets as each consumer wrote them out before the table (`git show 7abb181`).
BEFORE_API_WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")  # models/evidence.py
BEFORE_RBAC_READ_VERBS = ["get", "list", "watch"]  # sandbox/rbac.py
BEFORE_GUARD_WRITE_VERBS = frozenset({"create", "update", "patch"})  # gateway/guards.py
BEFORE_DRY_RUN_DELETES = frozenset({"delete", "deletecollection"})  # models/evidence.py AuditEntry.dry_run
BEFORE_EFFECT_WRITE_VERBS = frozenset(  # engine/effects.py (Effect.is_write added "exec")
    {"create", "update", "replace", "patch", "apply", "delete", "scale", "restart", "rollback"}
)
BEFORE_MODIFY = frozenset({"update", "replace", "patch", "apply"})  # engine/effects.py, engine/operations.py
BEFORE_WIDENING_VERBS = frozenset({"create", "update", "replace", "patch", "apply"})  # engine/boundary.py
BEFORE_GRAMMAR_VERBS = frozenset(  # models/actions.py VERBS
    {
        "get",
        "list",
        "create",
        "update",
        "replace",
        "patch",
        "delete",
        "scale",
        "restart",
        "rollback",
        "exec",
        "log",
        "query",
        "apply",
        "authenticate",
    }
)
BEFORE_GRAMMAR_WRITE_VERBS = BEFORE_GRAMMAR_VERBS - {"get", "list", "log", "query", "authenticate"}


def test_each_verb_has_one_row_and_belongs_to_a_vocabulary() -> None:
    names = [v.name for v in VERBS]
    assert len(names) == len(set(names))
    assert all(v.request or v.action for v in VERBS)


def test_the_request_verbs_are_exactly_the_kubernetes_api_server_s() -> None:
    assert [v.name for v in VERBS if v.request] == [
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
    ]


def test_the_derived_request_sets_hold_what_their_consumers_held() -> None:
    assert REQUEST_WRITE_VERBS == BEFORE_API_WRITE_VERBS  # order kept: RBAC rules and audit policy
    assert list(REQUEST_READ_VERBS) == BEFORE_RBAC_READ_VERBS
    assert frozenset(REQUEST_BODY_WRITE_VERBS) == BEFORE_GUARD_WRITE_VERBS
    assert frozenset(REQUEST_DELETE_VERBS) == BEFORE_DRY_RUN_DELETES


def test_the_derived_action_sets_hold_what_their_consumers_held() -> None:
    assert ACTION_VERBS == BEFORE_GRAMMAR_VERBS
    assert ACTION_WRITE_VERBS == BEFORE_GRAMMAR_WRITE_VERBS == BEFORE_EFFECT_WRITE_VERBS | {"exec"}
    assert ACTION_BODY_WRITE_VERBS == BEFORE_WIDENING_VERBS
    assert ACTION_MODIFY_VERBS == BEFORE_MODIFY


def test_the_sets_are_derived_from_the_operations_of_the_table() -> None:
    by_operation = {op: {v.name for v in VERBS if v.operation is op} for op in Operation}
    assert by_operation[Operation.MODIFY] == {"update", "patch", "replace", "apply"}
    assert by_operation[Operation.DELETE] == {"delete", "deletecollection"}
    assert by_operation[Operation.OPERATE] == {"scale", "restart", "rollback"}
    assert ACTION_MODIFY_VERBS | {"create"} == ACTION_BODY_WRITE_VERBS
    assert set(REQUEST_WRITE_VERBS) == set(REQUEST_BODY_WRITE_VERBS) | set(REQUEST_DELETE_VERBS)


def test_every_consumer_reads_its_set_from_the_table() -> None:
    assert rbac.REQUEST_WRITE_VERBS is verbs.REQUEST_WRITE_VERBS
    assert entries.REQUEST_WRITE_VERBS is verbs.REQUEST_WRITE_VERBS
    assert stimulus_runner.REQUEST_WRITE_VERBS is verbs.REQUEST_WRITE_VERBS
    assert guards.REQUEST_BODY_WRITE_VERBS is verbs.REQUEST_BODY_WRITE_VERBS
    assert evidence.REQUEST_DELETE_VERBS is verbs.REQUEST_DELETE_VERBS
    assert effects.ACTION_WRITE_VERBS is verbs.ACTION_WRITE_VERBS
    assert effects.ACTION_MODIFY_VERBS is operations.ACTION_MODIFY_VERBS is verbs.ACTION_MODIFY_VERBS
    assert boundary.ACTION_BODY_WRITE_VERBS is verbs.ACTION_BODY_WRITE_VERBS
    assert actions.ACTION_VERBS is verbs.ACTION_VERBS
    assert actions.ACTION_WRITE_VERBS is verbs.ACTION_WRITE_VERBS


def test_the_agent_role_and_the_audit_policy_list_the_write_verbs_as_before() -> None:
    writable = [
        rule for rule in rbac._rules(read_only=False) if rule["verbs"] == list(BEFORE_API_WRITE_VERBS)
    ]
    assert writable, "no agent Role rule grants the write verbs"
    assert rbac.READ_VERBS == BEFORE_RBAC_READ_VERBS
    recorded_whole = [rule for rule in audit_policy()["rules"] if rule["level"] == "RequestResponse"]
    assert [rule["verbs"] for rule in recorded_whole] == [list(BEFORE_API_WRITE_VERBS)]


def test_a_certificate_signing_request_is_refused_for_the_body_writes_only() -> None:
    def refused(verb: str) -> bool:
        info = RequestInfo(
            verb=verb,
            api_group="certificates.k8s.io",
            resource="certificatesigningrequests",
            is_resource=True,
        )
        return refusal(info, "agent") is not None

    assert {v for v in REQUEST_WRITE_VERBS + REQUEST_READ_VERBS if refused(v)} == BEFORE_GUARD_WRITE_VERBS


def test_an_effect_is_a_write_for_the_grammar_s_write_verbs_only() -> None:
    entry = AuditEntry(
        seq=0, time="2026-01-01T00:00:00Z", verb="get", resource="pods", user="agent", response_code=200
    )
    writes = {v for v in ACTION_VERBS if Effect(entry=entry, kind="pod", verbs=frozenset({v})).is_write}
    assert writes == BEFORE_EFFECT_WRITE_VERBS | {"exec"}


def test_a_dry_run_in_the_body_counts_for_the_delete_verbs_only() -> None:
    def dry(verb: str) -> bool:
        body = {"dryRun": ["All"]}
        return AuditEntry(
            seq=0, time="t", verb=verb, resource="pods", user="agent", response_code=200, request_body=body
        ).dry_run

    assert {v for v in REQUEST_WRITE_VERBS if dry(v)} == BEFORE_DRY_RUN_DELETES
