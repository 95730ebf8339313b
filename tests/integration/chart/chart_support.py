"""Helpers for the chart's tests on the API server: kubectl with a YAML stream, ServiceAccount identities,
the operator run as the chart's Deployment runs it, and the API server's audit record of an identity."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from oasis_operator.kube import request, resource_path
from tests.cluster_fixtures import KUBECTLS, REPO, VENV_BIN, Cluster, wait_for
from tests.unit.chart.chart_render import Manifest, find, render, rule_triples

RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
PROFILE = REPO / "profiles" / "software-infrastructure"

Triple = tuple[str, str, str]

# Grants of the job adapter's Role and of document-set rewrites, which no test run here exercises (its
# agent is a command, and nothing resumes mid-run); both RBAC tests accept them unused for these reasons.
JOB_ADAPTER_GRANTS: dict[Triple, str] = {
    ("batch", "jobs", "create"): "the job adapter runs each agent call as a Job (here: a command agent)",
    ("batch", "jobs", "get"): "the job adapter polls its Job until it finishes",
    ("batch", "jobs", "delete"): "the job adapter removes its Job (and, by ownership, its inputs)",
    ("", "secrets", "create"): "the job adapter's gateway kubeconfig for the agent pod",
    ("", "pods", "list"): "the job adapter finds its Job's pod",
    ("", "pods/log", "get"): "the job adapter reads the agent's answer from its pod's log",
}
# An evaluation past its ttlSecondsAfterFinished is deleted by the operator (tests/e2e/test_ttl.py); no
# evaluation of the chart tests has one.
TTL_GRANTS: dict[Triple, str] = {
    ("oasis.evaluation.dev", "oasisevaluations", "delete"): "an evaluation past its ttlSecondsAfterFinished",
}
MULTIKUEUE_GRANTS: dict[Triple, str] = {
    ("", "configmaps", "patch"): "a MultiKueue copy's report ConfigMaps kept when MultiKueue deletes the "
    "copy (owner reference dropped, retention labelled; evaluation/multikueue.py)",
}
DOCUMENT_REWRITE_GRANTS: dict[Triple, str] = {
    ("", "configmaps", "update"): "a resumed run writes a document set again (replaced whole)",
    ("", "configmaps", "delete"): "a set written again in fewer ConfigMaps has the extra ones removed",
}

AuditEntry = dict[str, Any]


@dataclass(frozen=True)
class Identity:
    """A ServiceAccount of the chart, its RBAC objects and a kubeconfig with its own token."""

    user: str
    kubeconfig: Path
    objects: list[Manifest]


def kubectl_stdin(cluster: Cluster, objects: list[Manifest], *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl (the client built with the server) with the objects as a YAML stream on stdin."""
    result = subprocess.run(
        [KUBECTLS["server"], *args],
        input=yaml.safe_dump_all(objects, sort_keys=False),
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result


def token_kubeconfig(cluster: Cluster, api: ApiClient, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig that authenticates as the ServiceAccount with a token from the TokenRequest API.

    What a pod of the account gets mounted: since Kubernetes 1.24 no token Secret is made for an account.
    """
    wait_for(
        lambda: _exists(api, resource_path("ServiceAccount", namespace, account)),
        what=f"ServiceAccount {account}",
    )
    token_path = resource_path("ServiceAccount", namespace, account) + "/token"
    # Long enough for the slowest test that uses it on a loaded machine; the test namespace goes after.
    minted = request(api, "POST", token_path, {"spec": {"expirationSeconds": 4 * 3600}})
    token = str(minted["status"]["token"])
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    cluster_name = admin["clusters"][0]["name"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": cluster_name, "user": account}}],
        "current-context": "sa",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def _exists(api: ApiClient, path: str) -> bool:
    try:
        request(api, "GET", path)
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@contextmanager
def installed(
    cluster: Cluster, api: ApiClient, namespace: str, objects: list[Manifest], account: str, path: Path
) -> Iterator[Identity]:
    """Apply the objects for real; yield the account's identity; delete the cluster-scoped ones after."""
    kubectl_stdin(cluster, objects, "apply", "-f", "-")
    try:
        kubeconfig = token_kubeconfig(cluster, api, namespace, account, path)
        user = f"system:serviceaccount:{namespace}:{account}"
        _wait_for_rbac(cluster, objects, user)
        yield Identity(user, kubeconfig, objects)
    finally:
        cluster_scoped = [o for o in objects if o["kind"] in ("ClusterRole", "ClusterRoleBinding")]
        kubectl_stdin(cluster, cluster_scoped, "delete", "--ignore-not-found", "-f", "-")


def _wait_for_rbac(cluster: Cluster, objects: list[Manifest], user: str) -> None:
    """Until the API server's authorizer has seen every binding just applied (its informers lag the
    write by a moment): one right of each bound role, asked as `user`, answers yes. Without this, the
    first requests of an operator started at once can be refused, which a test then reads as a 403."""
    roles = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objects}
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        if not any(s.get("kind") == "ServiceAccount" and user.endswith(f":{s.get('name')}")
                   for s in binding.get("subjects") or []):  # fmt: skip
            continue
        ref = binding["roleRef"]
        where = binding["metadata"].get("namespace")
        role = roles.get((ref["kind"], where if ref["kind"] == "Role" else None, ref["name"]))
        rules = (role or {}).get("rules") or []
        rule = next(
            (r for r in rules if r.get("resources") and r.get("verbs") and not r.get("resourceNames")), None
        )
        if rule is None:
            continue
        group = (rule.get("apiGroups") or [""])[0]
        resource = rule["resources"][0] + (f".{group}" if group and group != "*" else "")
        verb = rule["verbs"][0]
        argv = ["auth", "can-i", verb, resource, *(["-n", where] if where else ["-A"]), "--as", user]
        wait_for(
            lambda argv=argv: cluster.kubectl(*argv, check=False).stdout.strip() == "yes",
            timeout=30,
            what=f"the authorizer to see {binding['kind']} {binding['metadata']['name']}",
        )


TENANT_ROLES = ("oasis-evaluation-edit", "oasis-evaluation-view")


def operator_rbac(values: dict[str, object], namespace: str) -> list[Manifest]:
    """The operator's ServiceAccount and RBAC as the chart renders them (no hook, no agent account, not
    the tenants' roles), and the namespace its namespaced grants live in (host mode: the sandbox's control
    namespace)."""
    return [
        o
        for o in render(values, namespace=namespace)
        if o["kind"] in (*RBAC_KINDS, "Namespace")
        and "helm.sh/hook" not in o["metadata"].get("annotations", {})
        and not o["metadata"]["name"].endswith("-agent")
        and o["metadata"]["name"] not in TENANT_ROLES
    ]


def operator_container(values: dict[str, object], namespace: str) -> Manifest:
    """The operator container of the chart's Deployment."""
    deployment = find(render(values, namespace=namespace), "Deployment", "oasis-operator")
    container: Manifest = deployment["spec"]["template"]["spec"]["containers"][0]
    return container


def operator_argv(values: dict[str, object], namespace: str) -> list[str]:
    """`oasis` plus the args the chart's Deployment passes (after the image's `oasis operator` entrypoint),
    with the servers kept local and the profile taken from the checkout."""
    args = operator_container(values, namespace)["args"]
    local = {
        "--bind": "127.0.0.1",
        "--liveness-port": "0",
        "--metrics-port": "0",
        "--profile-dir": str(PROFILE),
    }
    out = []
    for arg in args:
        flag = arg.split("=", 1)[0]
        out.append(f"{flag}={local[flag]}" if flag in local else arg)
    assert sorted(a.split("=", 1)[0] for a in args if a.split("=", 1)[0] in local) == sorted(local)
    return [str(VENV_BIN / "oasis"), "operator", *out]


def operator_env(
    values: dict[str, object], namespace: str, local: Mapping[str, str], extra: Mapping[str, str]
) -> dict[str, str]:
    """The environment the chart's Deployment gives the operator, with `local` replacing what only makes
    sense in a pod (mount paths, the pod's address), plus `extra` variables the chart does not set."""
    env = {item["name"]: str(item["value"]) for item in operator_container(values, namespace)["env"]}
    missing = sorted(set(local) - set(env))
    assert not missing, f"the chart no longer sets {missing}"
    overlap = sorted(set(extra) & set(env))
    assert not overlap, f"the chart sets {overlap} now: replace them in `local` instead"
    return {**env, **local, **extra}


def start_operator(
    argv: list[str], kubeconfig: Path, log: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """The operator as a process authenticated by `kubeconfig`, its output in `log`."""
    full = {**os.environ, **(env or {}), "KUBECONFIG": str(kubeconfig)}
    with log.open("wb") as out:
        return subprocess.Popen(argv, env=full, stdout=out, stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    """SIGTERM, then SIGKILL after `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def audit_uses(audit_log: Path, user: str, since: str) -> list[AuditEntry]:
    """Audit entries of `user` (authenticated as itself, not impersonated) at or after `since` (RFC 3339),
    from the log and the backups the API server rotated it into (`audit-<time>.log`), oldest first."""
    entries = []
    rotated = sorted(audit_log.parent.glob(f"{audit_log.stem}-*{audit_log.suffix}"))
    lines = [line for path in [*rotated, audit_log] for line in path.read_text().splitlines()]
    for line in lines:
        entry = json.loads(line)
        if entry.get("user", {}).get("username") != user or entry.get("impersonatedUser"):
            continue
        if entry["requestReceivedTimestamp"] >= since and entry.get("objectRef"):
            entries.append(entry)
    return entries


def triple(entry: AuditEntry) -> Triple:
    """(group, resource[/subresource], verb) of an audit entry."""
    ref = entry["objectRef"]
    resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return (ref.get("apiGroup", ""), resource, str(entry["verb"]))


def granted_triples(objects: list[Manifest], skip_delegate: bool) -> set[Triple]:
    """What the Roles and ClusterRoles among `objects` grant (optionally without the sandbox delegate)."""
    granted: set[Triple] = set()
    for role in objects:
        if role["kind"] in ("ClusterRole", "Role"):
            if skip_delegate and role["metadata"]["name"].endswith("-sandbox-delegate"):
                continue
            granted |= rule_triples(role["rules"])
    return granted


def grants_allowing(entry: AuditEntry, granted: set[Triple]) -> set[Triple]:
    """The granted triples that allow this request (a `resource@names` grant only for those names)."""
    group, resource, verb = triple(entry)
    name = entry["objectRef"].get("name")
    return {
        (g, r, v)
        for g, r, v in granted
        if g == group
        and v == verb
        and (r == resource or (r.startswith(resource + "@") and name in r.split("@", 1)[1].split(",")))
    }
