"""API-server audit events → the environment's entries: who made them, what they asked, what came back."""

from __future__ import annotations

import pytest

from oasis_operator.evidence.apiserver import CONTROLLER_USERS, Identities, attribute, audit_log, belongs_to
from oasis_operator.models.evidence import Actor
from oasis_operator.pki import KWOK_USER
from tests.unit.evidence.audit_events import ENV, GATEWAY, OPERATOR, OURS, event

PROVIDER = OURS


@pytest.mark.parametrize(
    ("user", "impersonated", "actor"),
    [
        (GATEWAY, ENV.agent.username, Actor.AGENT),  # the gateway impersonating the agent
        (ENV.agent.username, None, Actor.AGENT),  # the agent's own token
        (OPERATOR, None, Actor.PROVIDER),
        (GATEWAY, None, Actor.PROVIDER),  # the gateway's own reads and stimuli
        (OPERATOR, "system:serviceaccount:sbx-e1234567-shop:default", Actor.OTHER),
        (GATEWAY, "system:serviceaccount:sbx-e1234567-shop:default", Actor.OTHER),
        (OPERATOR, ENV.agent.username, Actor.OTHER),  # only the gateway forwards the agent's requests
        ("system:kube-controller-manager", None, Actor.CONTROLLER),
        ("system:kube-scheduler", None, Actor.CONTROLLER),
        ("system:node-simulator", None, Actor.CONTROLLER),  # kwok, the sandbox nodes' kubelets
        ("system:node:twin-e1234567-node-1", None, Actor.CONTROLLER),  # a real kubelet
        ("system:serviceaccount:kube-system:generic-garbage-collector", None, Actor.CONTROLLER),
        ("system:anonymous", None, Actor.ANONYMOUS),
        ("system:serviceaccount:sbx-e1234567-shop:deployer", None, Actor.FOREIGN),  # a token it found
        ("someone", ENV.agent.username, Actor.FOREIGN),  # impersonating the agent is not being it
    ],
)
def test_attribution_by_authenticated_identity(user: str, impersonated: str | None, actor: Actor) -> None:
    assert attribute(event(1, user=user, impersonated=impersonated), ENV, PROVIDER) == actor


@pytest.mark.parametrize(
    ("user", "impersonated", "actor"),
    [
        (OPERATOR, ENV.agent.username, Actor.AGENT),
        (OPERATOR, None, Actor.PROVIDER),
        (OPERATOR, "system:serviceaccount:sbx-e1234567-shop:default", Actor.OTHER),
        ("someone", ENV.agent.username, Actor.FOREIGN),
    ],
)
def test_a_gateway_sharing_the_operators_identity(user: str, impersonated: str | None, actor: Actor) -> None:
    """The chart's sandbox.mode=host: one ServiceAccount is both, as the fences of both say."""
    shared = Identities(provider=frozenset({OPERATOR}), gateway=frozenset({OPERATOR}))
    assert attribute(event(1, user=user, impersonated=impersonated), ENV, shared) == actor


def test_an_unknown_gateway_identity_is_no_agent() -> None:
    """Before the gateway's fence names it, its requests for the agent are a foreign credential's."""
    assert attribute(event(1), ENV, Identities(provider=frozenset({OPERATOR}))) == Actor.FOREIGN


def test_events_belong_by_namespace_object_or_identity() -> None:
    assert belongs_to(event(1), ENV)
    assert belongs_to(event(2, namespace=None, resource="namespaces", name="sbx-e1234567-payments"), ENV)
    assert belongs_to(event(3, namespace=None, resource="nodes", name="sbx-e1234567-node-1"), ENV)
    foreign_clusterwide = event(
        4, user="system:serviceaccount:sbx-e1234567-shop:deployer", impersonated=None,
        namespace=None, resource="clusterrolebindings", name="escalate", verb="create",
    )  # fmt: skip
    assert belongs_to(foreign_clusterwide, ENV)
    assert belongs_to(event(5, namespace="sbx-e7654321-shop"), ENV)  # the agent, wherever it went
    assert not belongs_to(event(5, impersonated=None, namespace="sbx-e7654321-shop"), ENV)
    assert not belongs_to(event(6, impersonated=None, namespace=None, resource="nodes", name="n"), ENV)


def test_of_the_shared_control_namespace_only_the_environments_own_objects_and_agent_belong() -> None:
    control = ENV.control_namespace
    own = ("serviceaccounts", ENV.agent.service_account), ("configmaps", "environment-e1234567")
    for resource, name in own:
        assert belongs_to(event(1, impersonated=None, namespace=control, resource=resource, name=name), ENV)
    neighbours = ("serviceaccounts", "agent-e7654321"), ("configmaps", "environment-e7654321")
    for resource, name in neighbours:
        assert not belongs_to(
            event(2, impersonated=None, namespace=control, resource=resource, name=name), ENV
        )
    listing = event(3, impersonated=None, namespace=control, resource="configmaps", name=None)
    assert not belongs_to(listing, ENV)
    assert not belongs_to(
        event(4, impersonated=None, namespace=None, resource="namespaces", name=control), ENV
    )
    # Another environment's agent is not this one's, though it lives in the same namespace; where it
    # touched this environment its request belongs here, as `other` (ours acting as someone not its agent).
    neighbour = f"system:serviceaccount:{control}:agent-e7654321"
    assert not belongs_to(event(5, impersonated=neighbour, namespace="sbx-e7654321-shop"), ENV)
    assert belongs_to(event(6, impersonated=neighbour), ENV)
    assert attribute(event(6, impersonated=neighbour), ENV, OURS) == Actor.OTHER


def test_entry_carries_query_response_and_declared_names() -> None:
    created = event(
        1, verb="create", name="cfg", level="RequestResponse",
        uri="/api/v1/namespaces/sbx-e1234567-shop/configmaps?dryRun=All&fieldManager=kubectl",
        requestObject={"metadata": {"name": "cfg"}},
        responseObject={"kind": "ConfigMap",
                        "metadata": {"name": "cfg", "uid": "u-1", "resourceVersion": "42"}},
    )  # fmt: skip
    refused = event(2, verb="delete", responseObject={"kind": "Status", "code": 403})
    node = event(3, namespace=None, resource="nodes", name="sbx-e1234567-node-1")
    log = audit_log([refused, created, node], ENV, PROVIDER)
    first, second, third = log.entries
    assert (first.verb, first.path, first.method) == (
        "create",
        "/api/v1/namespaces/shop/configmaps",
        "POST",
    )
    assert first.query == {"dryRun": "All", "fieldManager": "kubectl"}
    assert first.dry_run
    assert (first.response_uid, first.response_resource_version) == ("u-1", "42")
    assert first.response_body["metadata"]["name"] == "cfg"
    assert (first.namespace, first.sandbox_namespace) == ("shop", "sbx-e1234567-shop")
    assert second.response_uid is None  # a Status is no object
    assert second.response_body is None
    assert third.name == "node-1"


def test_foreign_credential_is_fingerprinted_when_the_server_names_it() -> None:
    found = event(1, impersonated=None)
    found["user"] = {
        "username": "system:serviceaccount:sbx-e1234567-shop:deployer",
        "extra": {"authentication.kubernetes.io/credential-id": ["JTI=abc"]},
    }
    (entry,) = audit_log([found], ENV, PROVIDER).entries
    assert entry.actor == Actor.FOREIGN
    assert entry.credential is not None
    assert entry.credential.startswith("sha256:")
    assert len(entry.credential) == len("sha256:") + 16
    assert "abc" not in entry.credential


def test_the_node_simulators_certificate_name_is_a_controller_identity() -> None:
    assert KWOK_USER in CONTROLLER_USERS
