"""The chart rendered by the real Helm engine (offline): specific facts for each meaningful value set."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import pytest

from oasis_operator.sandbox.naming import control_namespace
from oasis_operator.sandbox.rbac import READ_VERBS, _rules
from tests.unit.chart.chart_render import CHART, REPO, chart_crds, find, render, render_notes, rule_triples

NS = "oasis-system"


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = find(objects, "Deployment", "oasis-operator")
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def _port(container: dict[str, Any], name: str) -> int:
    return int(next(p["containerPort"] for p in container["ports"] if p["name"] == name))


def test_chart_crds_are_byte_for_byte_the_top_level_crds() -> None:
    top = sorted(p.name for p in (REPO / "crds").glob("*.yaml"))
    chart = sorted(p.name for p in (CHART / "crds").glob("*.yaml"))
    assert top == chart
    assert len(top) == 2
    for name in top:
        assert (CHART / "crds" / name).read_bytes() == (REPO / "crds" / name).read_bytes(), name


def test_helm_lint_finds_no_errors() -> None:
    report = helm.lint(CHART, strict=True, namespace=NS)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_default_operator_deployment_is_hardened() -> None:
    objects = render()
    deployment = find(objects, "Deployment", "oasis-operator")
    spec = deployment["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "Recreate"}
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = _container(objects)
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
    }
    probe = container["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"
    assert _port(container, probe["port"]) == 8080
    # Ready (in the gateway Service's endpoints) once the gateway accepts connections.
    assert _port(container, container["readinessProbe"]["tcpSocket"]["port"]) == 8443
    assert "--liveness-port=8080" in container["args"]
    assert "--all-namespaces" in container["args"]
    assert "operator" not in container["args"], "the image ENTRYPOINT already says `oasis operator`"
    assert container["resources"]["limits"]["memory"] == "1Gi"
    assert container["resources"]["requests"]["cpu"] == "100m"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OASIS_PROFILE_DIR"] == "/opt/oasis/profiles/software-infrastructure"
    # Default sandbox: the chart's own control plane, whose kubeconfig the operator mounts.
    assert env["OASIS_SANDBOX_KUBECONFIG"] == "/etc/oasis/sandbox/kubeconfig"
    # The gateway listens on the pod's addresses (the Service forwards there) and advertises the Service.
    assert env["OASIS_GATEWAY_HOST"] == "0.0.0.0"  # noqa: S104
    assert env["OASIS_GATEWAY_URL"] == f"https://oasis-oasis-operator-gateway.{NS}.svc:443"
    # These and no others (OASIS_SANDBOX_MODE and POD_NAMESPACE had no reader and are gone).
    assert sorted(env) == [
        "HOME",
        "OASIS_AGENT_NAMESPACE",
        "OASIS_AGENT_SERVICE_ACCOUNT",
        "OASIS_AUDIT_WEBHOOK_HOST",
        "OASIS_AUDIT_WEBHOOK_PORT",
        "OASIS_AUDIT_WEBHOOK_TLS_DIR",
        "OASIS_COMMAND_AGENTS",
        "OASIS_GATEWAY_HOST",
        "OASIS_GATEWAY_HOSTS",
        "OASIS_GATEWAY_KUBECONFIG",
        "OASIS_GATEWAY_NAMESPACE",
        "OASIS_GATEWAY_PORT",
        "OASIS_GATEWAY_SERVICE",
        "OASIS_GATEWAY_URL",
        "OASIS_KUEUE_SLOT_CPU",
        "OASIS_KUEUE_SLOT_MEMORY",
        "OASIS_LOG_FORMAT",
        "OASIS_MAX_EVALUATIONS",
        "OASIS_PROFILE_DIR",
        "OASIS_SANDBOX_KUBECONFIG",
        "OASIS_SANDBOX_PREFIX",
    ]
    assert volumes[mounts["/etc/oasis/sandbox"]]["secret"]["secretName"] == "oasis-oasis-operator-sandbox-pki"
    # The gateway's own identity on that plane, from the same PKI Secret.
    assert env["OASIS_GATEWAY_KUBECONFIG"] == "/etc/oasis/sandbox-gateway/kubeconfig"
    gateway = volumes[mounts["/etc/oasis/sandbox-gateway"]]["secret"]
    assert gateway["secretName"] == "oasis-oasis-operator-sandbox-pki"
    assert gateway["items"] == [{"key": "gateway.kubeconfig", "path": "kubeconfig"}]


def test_the_log_format_is_a_variable_of_the_deployment() -> None:
    def setting(values: dict[str, Any] | None) -> tuple[str | None, list[str]]:
        container = _container(render(values))
        env = {e["name"]: e.get("value") for e in container["env"]}
        return env.get("OASIS_LOG_FORMAT"), [a for a in container["args"] if a.startswith("--log-format")]

    assert setting(None) == ("json", [])  # one JSON object per line by default, set once, as a variable
    assert setting({"operator": {"logFormat": "full"}}) == ("full", [])


def test_default_rbac_is_cluster_wide_and_grants_no_sandbox_rights_in_the_host() -> None:
    objects = render()
    bindings = sorted(o["metadata"]["name"] for o in objects if o["kind"] == "ClusterRoleBinding")
    assert bindings == [
        f"{NS}-oasis-oasis-operator-application",
        f"{NS}-oasis-oasis-operator-framework",
        f"{NS}-oasis-oasis-operator-framework-events",
    ]
    # The only namespaced grant: the job adapter's, in the agent namespace (the release's by default).
    namespaced = sorted(
        (o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])
        for o in objects
        if o["kind"] in ("Role", "RoleBinding")
    )
    assert namespaced == [
        ("Role", NS, "oasis-oasis-operator-agent-runner"),
        ("RoleBinding", NS, "oasis-oasis-operator-agent-runner"),
    ]
    runner = next(o for o in objects if o["kind"] == "Role")
    assert rule_triples(runner["rules"]) == {
        ("batch", "jobs", "get"),
        ("batch", "jobs", "create"),
        ("batch", "jobs", "delete"),
        ("", "secrets", "create"),
        ("", "configmaps", "create"),
        ("", "pods", "list"),
        ("", "pods/log", "get"),
    }
    granted: set[tuple[str, str, str]] = set()
    for role in (o for o in objects if o["kind"] == "ClusterRole" and "cleanup" not in o["metadata"]["name"]):
        granted |= rule_triples(role["rules"])
    # Nothing that creates namespaces, writes RBAC or impersonates, in the platform cluster.
    assert not [t for t in granted if t[2] in ("impersonate", "escalate", "bind", "*")]
    assert ("", "namespaces", "create") not in granted
    assert not [t for t in granted if t[0] == "rbac.authorization.k8s.io"]
    assert ("", "secrets", "get") in granted
    assert not [t for t in granted if t[1] == "secrets" and t[2] != "get"]
    # Sandboxes are in the sandbox cluster: nothing here looks at namespaces (kopf does not, cluster-wide).
    assert not [t for t in granted if t[1] == "namespaces"]
    assert {t[2] for t in granted if t[1] == "configmaps"} == {"get", "list", "create", "update", "delete"}


def test_gateway_port_is_configurable_and_the_service_targets_it() -> None:
    objects = render({"gateway": {"port": 9443, "service": {"port": 8443}}})
    container = _container(objects)
    assert _port(container, "gateway") == 9443
    service = find(objects, "Service", "-gateway")
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 8443, "targetPort": "gateway", "protocol": "TCP"}
    ]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OASIS_GATEWAY_PORT"] == "9443"
    assert env["OASIS_GATEWAY_URL"] == f"https://oasis-oasis-operator-gateway.{NS}.svc:8443"
    metrics = find(objects, "Service", "-metrics")
    assert metrics["spec"]["ports"][0]["targetPort"] == "metrics"


def test_namespaced_mode_binds_per_namespace() -> None:
    objects = render(
        {
            "watch": {"clusterWide": False, "namespaces": ["team-a", "team-b"]},
            "cleanupOnUninstall": {"enabled": True},
        }
    )
    container = _container(objects)
    assert "--namespace=team-a" in container["args"]
    assert "--namespace=team-b" in container["args"]
    assert "--all-namespaces" not in container["args"]
    rolebindings = sorted(
        (o["metadata"]["namespace"], o["roleRef"]["name"])
        for o in objects
        if o["kind"] == "RoleBinding" and not o["metadata"]["name"].endswith("-agent-runner")
    )
    assert rolebindings == [
        ("team-a", f"{NS}-oasis-oasis-operator-application"),
        ("team-a", f"{NS}-oasis-oasis-operator-cleanup"),
        ("team-a", f"{NS}-oasis-oasis-operator-framework-events"),
        ("team-b", f"{NS}-oasis-oasis-operator-application"),
        ("team-b", f"{NS}-oasis-oasis-operator-cleanup"),
        ("team-b", f"{NS}-oasis-oasis-operator-framework-events"),
    ]
    framework = find(objects, "ClusterRole", "-framework")
    # kopf lists and watches namespaces only when given a list of them.
    assert {t for t in rule_triples(framework["rules"]) if t[1] == "namespaces"} == {
        ("", "namespaces", "list"),
        ("", "namespaces", "watch"),
    }
    cluster_bindings = [o["roleRef"]["name"] for o in objects if o["kind"] == "ClusterRoleBinding"]
    assert cluster_bindings == [f"{NS}-oasis-oasis-operator-framework"]
    job = find(objects, "Job", "-cleanup")
    env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["WATCH_NAMESPACES"] == "team-a,team-b"


def test_namespaced_mode_defaults_to_the_release_namespace() -> None:
    objects = render({"watch": {"clusterWide": False}})
    assert f"--namespace={NS}" in _container(objects)["args"]


def test_ingress_points_at_the_gateway_with_its_tls_secret() -> None:
    ingress_values = {
        "enabled": True,
        "host": "oasis.example.test",
        "className": "nginx",
        "tlsSecretName": "gw",
    }
    values = {"gateway": {"ingress": ingress_values, "tls": {"secretName": "gw"}}}
    objects = render(values)
    ingress = find(objects, "Ingress", "-gateway")
    assert ingress["spec"]["ingressClassName"] == "nginx"
    assert ingress["spec"]["tls"] == [{"hosts": ["oasis.example.test"], "secretName": "gw"}]
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "oasis-oasis-operator-gateway", "port": {"name": "https"}}
    container = _container(objects)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OASIS_GATEWAY_URL"] == "https://oasis.example.test"
    assert env["OASIS_GATEWAY_TLS_DIR"] == "/etc/oasis/gateway-tls"


def test_ingress_needs_a_host() -> None:
    with pytest.raises(helm.HelmError, match=r"gateway\.ingress\.host is required"):
        render({"gateway": {"ingress": {"enabled": True}}})


def test_network_policies_contain_agents_and_the_sandbox() -> None:
    objects = render({"networkPolicies": {"enabled": True}})
    policies = {
        o["metadata"]["name"].removeprefix("oasis-oasis-operator-"): o
        for o in objects
        if o["kind"] == "NetworkPolicy"
    }
    assert sorted(policies) == [
        "agents",
        "operator",
        "sandbox-apiserver",
        "sandbox-controller-manager",
        "sandbox-etcd",
        "sandbox-kwok",
        "sandbox-scheduler",
    ]
    agents = policies["agents"]["spec"]
    assert agents["policyTypes"] == ["Ingress", "Egress"]
    assert agents["ingress"] == []
    egress_ports = [p["port"] for rule in agents["egress"] for p in rule["ports"]]
    assert egress_ports == [8443, 53, 53]
    assert (
        agents["egress"][0]["to"][0]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
        == "operator"
    )
    apiserver = policies["sandbox-apiserver"]["spec"]["ingress"][0]["from"]
    assert [p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in apiserver] == [
        "operator", "sandbox-controller-manager", "sandbox-scheduler", "sandbox-kwok"]  # fmt: skip
    # kwok serves nothing; the scheduler only its health endpoint.
    assert policies["sandbox-kwok"]["spec"]["ingress"] == []
    assert policies["sandbox-scheduler"]["spec"]["ingress"] == [
        {"ports": [{"port": "https", "protocol": "TCP"}]}
    ]
    etcd = policies["sandbox-etcd"]["spec"]["ingress"][0]["from"]
    assert [p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in etcd] == [
        "sandbox-apiserver"
    ]
    agent_sa = find(objects, "ServiceAccount", "-agent")
    assert agent_sa["automountServiceAccountToken"] is False


def test_sandbox_control_plane_runs_every_component_with_a_read_only_root() -> None:
    objects = render()
    components = {
        o["metadata"]["labels"]["app.kubernetes.io/component"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet") and "sandbox-" in o["metadata"]["name"]
    }
    assert components == {
        "sandbox-etcd",
        "sandbox-apiserver",
        "sandbox-controller-manager",
        "sandbox-scheduler",
        "sandbox-kwok",
    }
    cm = find(objects, "Deployment", "-sandbox-controller-manager")["spec"]["template"]["spec"]["containers"][
        0
    ]
    assert "--controllers=*,-horizontal-pod-autoscaler-controller" in cm["command"]
    apiserver = find(objects, "Deployment", "-sandbox-apiserver")["spec"]["template"]["spec"]["containers"][0]
    assert apiserver["image"].startswith("registry.k8s.io/kube-apiserver:")
    assert "--authorization-mode=RBAC" in apiserver["command"]
    assert "--etcd-certfile=/etc/kubernetes/pki/etcd-client.crt" in apiserver["command"]
    etcd = find(objects, "StatefulSet", "-sandbox-etcd")["spec"]["template"]["spec"]["containers"][0]
    assert "--client-cert-auth=true" in etcd["command"]
    for workload in (o for o in objects if o["kind"] in ("Deployment", "StatefulSet")):
        pod = workload["spec"]["template"]["spec"]
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["securityContext"]["readOnlyRootFilesystem"] is True, workload["metadata"][
                "name"
            ]
    # With an external sandbox, none of it is rendered and the given Secret is mounted.
    external = render({"sandbox": {"mode": "external", "kubeconfigSecret": {"name": "sbx", "key": "config"}}})
    assert not [o for o in external if "sandbox-" in o["metadata"]["name"]]
    volumes = find(external, "Deployment", "oasis-operator")["spec"]["template"]["spec"]["volumes"]
    mounted = {"secretName": "sbx", "defaultMode": 0o400, "items": [{"key": "config", "path": "kubeconfig"}]}
    assert mounted in [v.get("secret") for v in volumes]


def test_host_mode_delegates_exactly_the_agent_roles_and_impersonates_only_agents() -> None:
    objects = render({"sandbox": {"mode": "host"}})
    delegate = find(objects, "ClusterRole", "-sandbox-delegate")
    agent_rules = rule_triples(_rules(read_only=False))
    cluster_reads = {("", r, v) for r in ("nodes", "namespaces", "persistentvolumes") for v in READ_VERBS}
    assert rule_triples(delegate["rules"]) == agent_rules | cluster_reads
    sandbox = find(objects, "ClusterRole", "-sandbox")
    # Impersonation is granted in the shared control namespace alone (where the agent ServiceAccounts
    # live), never cluster-wide.
    assert not [r for r in sandbox["rules"] + delegate["rules"] if "impersonate" in r["verbs"]]
    control = control_namespace("sbx")
    assert find(objects, "Namespace", control)["metadata"]["name"] == control
    role = find(objects, "Role", "-sandbox-control")
    assert role["metadata"]["namespace"] == control
    impersonation = [r for r in role["rules"] if "impersonate" in r["verbs"]]
    assert impersonation == [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}]
    binding = find(objects, "RoleBinding", "-sandbox-control")
    assert (binding["metadata"]["namespace"], binding["roleRef"]["name"]) == (
        control,
        role["metadata"]["name"],
    )
    assert binding["subjects"] == find(objects, "ClusterRoleBinding", "-sandbox")["subjects"]
    assert not [
        r
        for r in sandbox["rules"] + delegate["rules"] + role["rules"]
        if {"escalate", "bind", "*"} & set(r["verbs"])
    ]
    assert "OASIS_SANDBOX_KUBECONFIG" not in {e["name"] for e in _container(objects)["env"]}
    # The gateway is the operator's ServiceAccount here (docs/install.md §5: what the policy can drop).
    assert "OASIS_GATEWAY_KUBECONFIG" not in {e["name"] for e in _container(objects)["env"]}
    assert "WARNING: sandbox.mode=host" in render_notes({"sandbox": {"mode": "host"}})


def test_cleanup_hook_runs_before_delete_only_when_asked() -> None:
    # By default `helm uninstall` keeps every evaluation and report (docs/install.md §8).
    assert not [o for o in render() if "cleanup" in o["metadata"]["name"]]
    job = find(render({"cleanupOnUninstall": {"enabled": True}}), "Job", "-cleanup")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "oasis-oasis-operator-cleanup"


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"sandbox": {"mode": "kind"}}, "/sandbox/mode"),
        ({"gateway": {"port": 70000}}, "/gateway/port"),
        ({"watch": {"clusterWide": "yes"}}, "/watch/clusterWide"),
        ({"sandbox": {"mode": "external"}}, "/sandbox/kubeconfigSecret/name"),
        ({"operatr": {}}, "operatr"),
        ({"operator": {"logFormat": "yaml"}}, "/operator/logFormat"),
        ({"tenancy": {"commandAgents": "yes"}}, "/tenancy/commandAgents"),
        ({"podSecurityContext": {"runAsUser": "nobody"}}, "/podSecurityContext/runAsUser"),
        ({"sandbox": {"controlPlane": {"kwok": {"args": []}}}}, "/sandbox/controlPlane/kwok"),
        (
            {"sandbox": {"controlPlane": {"scheduler": {"image": {"tag": ""}}}}},
            "/sandbox/controlPlane/scheduler/image",
        ),
    ],
)
def test_schema_refuses_bad_values(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmError, match=where):
        render(values)


def test_notes_speak_to_an_installed_user_without_paths_of_the_repository() -> None:
    notes = render_notes()
    assert f"kubectl -n {NS} rollout status deployment/oasis-oasis-operator" in notes
    # A first evaluation with kubectl alone, its token Secret labelled, and where its outcome shows.
    assert "kind: OASISEvaluation" in notes
    assert "kubectl label secret my-agent-token -n <namespace> oasis.evaluation.dev/agent-token=true" in notes
    assert "kubectl describe oasisevaluation my-agent -n <namespace>" in notes
    assert "tenancy.commandAgents=disabled" in notes
    assert "examples/" not in notes
    assert "hack/" not in notes
    assert "docs/" not in notes
    assert "WARNING: tenancy.commandAgents=unsandboxed" in render_notes(
        {"tenancy": {"commandAgents": "unsandboxed"}}
    )


def test_the_image_is_pinned_by_digest_when_one_is_given() -> None:
    digest = "sha256:" + "ab" * 32
    tagged = render({"image": {"repository": "registry.example/oasis", "tag": "1.2.3"}})
    # The cleanup hook (off by default) runs the operator's image too.
    cleanup = {"cleanupOnUninstall": {"enabled": True}}
    image = {"repository": "registry.example/oasis", "tag": "1.2.3", "digest": digest}
    pinned = render({"image": image, **cleanup})
    assert _container(tagged)["image"] == "registry.example/oasis:1.2.3"
    assert _container(pinned)["image"] == f"registry.example/oasis@{digest}"
    hook = find(pinned, "Job", "-cleanup")["spec"]["template"]["spec"]["containers"][0]
    assert hook["image"] == f"registry.example/oasis@{digest}"
    with pytest.raises(helm.HelmError, match="/image/digest"):
        render({"image": {"digest": "1.2.3"}})


def _pod_specs(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in objects
        if o["kind"] in ("Deployment", "StatefulSet", "Job")
    }


def test_the_sandbox_control_plane_images_are_pinned_by_digest_when_one_is_given() -> None:
    digest = "sha256:" + "cd" * 32
    parts = ("etcd", "apiServer", "controllerManager", "scheduler", "kwok")
    pinned = {part: {"image": {"digest": digest}} for part in parts}
    pinned["kwok"]["kubectlImage"] = {"digest": digest}
    images = {
        c["image"]
        for pod in _pod_specs(render({"sandbox": {"controlPlane": pinned}})).values()
        for c in pod["containers"] + pod.get("initContainers", [])
        if "registry.k8s.io/" in c["image"]
    }
    assert images == {
        f"registry.k8s.io/{name}@{digest}"
        for name in (
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok/kwok",
            "kubectl",
        )
    }
    tagged = {
        c["image"]
        for pod in _pod_specs(render()).values()
        for c in pod["containers"] + pod.get("initContainers", [])
        if "registry.k8s.io/" in c["image"]
    }
    assert all("@" not in image and ":" in image for image in tagged), tagged
    with pytest.raises(helm.HelmError, match="/sandbox/controlPlane/kwok/image/digest"):
        render({"sandbox": {"controlPlane": {"kwok": {"image": {"digest": "v0.8.0"}}}}})


def test_security_contexts_are_values_and_openshift_may_leave_the_ids_out() -> None:
    cleanup = {"cleanupOnUninstall": {"enabled": True}}
    pods = _pod_specs(render(cleanup))
    # operator, sandbox etcd, API server, controller manager, scheduler, kwok, cleanup hook
    assert len(pods) == 7, sorted(pods)
    for name, pod in pods.items():
        assert pod["securityContext"]["runAsUser"] == 65532, name
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}, name
    openshift = {"podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None}, **cleanup}
    for name, pod in _pod_specs(render(openshift)).items():
        assert pod["securityContext"] == {
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        }, name
    custom = render({"securityContext": {"readOnlyRootFilesystem": False}})
    container = _container(custom)
    assert container["securityContext"]["readOnlyRootFilesystem"] is False
    assert container["securityContext"]["allowPrivilegeEscalation"] is False  # the other keys stay


def test_command_agents_are_refused_by_default_in_the_operator_and_by_the_admission_policy() -> None:
    objects = render()
    env = {e["name"]: e.get("value") for e in _container(objects)["env"]}
    assert env["OASIS_COMMAND_AGENTS"] == "disabled"
    policy = find(objects, "ValidatingAdmissionPolicy", "-command-agents")
    assert policy["apiVersion"] == "admissionregistration.k8s.io/v1"
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [
        {
            "apiGroups": ["oasis.evaluation.dev"],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["oasisevaluations"],
        }
    ]
    [validation] = policy["spec"]["validations"]
    assert "!has(object.spec.agent.command)" in validation["expression"]
    assert "tenancy.commandAgents=sandboxed" in validation["message"]
    assert "OASIS_COMMAND_AGENTS" in validation["message"]
    binding = find(objects, "ValidatingAdmissionPolicyBinding", "-command-agents")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert "matchResources" not in binding["spec"]  # cluster-wide: every namespace

    sandboxed = render({"tenancy": {"commandAgents": "sandboxed"}})
    [validation] = find(sandboxed, "ValidatingAdmissionPolicy", "-command-agents")["spec"]["validations"]
    assert "object.spec.agent.command.isolation != 'none'" in validation["expression"]
    assert "tenancy.commandAgents=unsandboxed" in validation["message"]

    allowed = render({"tenancy": {"commandAgents": "unsandboxed"}})
    assert not [o for o in allowed if o["kind"].startswith("ValidatingAdmissionPolicy")]
    env = {e["name"]: e.get("value") for e in _container(allowed)["env"]}
    assert env["OASIS_COMMAND_AGENTS"] == "unsandboxed"
    off = render({"tenancy": {"admissionPolicy": {"enabled": False}}})
    assert not [o for o in off if o["kind"].startswith("ValidatingAdmissionPolicy")]


def test_namespaced_mode_binds_the_policy_to_the_watched_namespaces() -> None:
    objects = render({"watch": {"clusterWide": False, "namespaces": ["team-a", "team-b"]}})
    binding = find(objects, "ValidatingAdmissionPolicyBinding", "-command-agents")
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"] == [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}
    ]


def test_tenant_roles_are_aggregated_and_grant_nothing_beyond_the_projects_resources() -> None:
    objects = render()
    edit = find(objects, "ClusterRole", "oasis-evaluation-edit")
    view = find(objects, "ClusterRole", "oasis-evaluation-view")
    aggregate = "rbac.authorization.k8s.io/aggregate-to-"
    assert {k for k, v in edit["metadata"]["labels"].items() if k.startswith(aggregate) and v == "true"} == {
        aggregate + "admin",
        aggregate + "edit",
    }
    assert view["metadata"]["labels"][aggregate + "view"] == "true"
    assert {g for g, _r, _v in rule_triples(edit["rules"]) | rule_triples(view["rules"])} == {
        "oasis.evaluation.dev"
    }
    assert ("oasis.evaluation.dev", "oasisevaluations", "create") in rule_triples(edit["rules"])
    assert {v for _g, _r, v in rule_triples(view["rules"])} == {"get", "list", "watch"}
    assert not [
        o
        for o in render({"tenancy": {"roles": {"create": False}}})
        if "oasis-evaluation-" in o["metadata"]["name"]
    ]


def test_the_provider_api_is_an_optional_service_with_its_token_from_a_secret() -> None:
    assert not [o for o in render() if o["metadata"]["name"].endswith("-provider-api")]
    values = {"providerApi": {"enabled": True, "tokenSecret": {"name": "runner-token"}, "doors": ["a", "b"]}}
    objects = render(values)
    service = find(objects, "Service", "-provider-api")
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 8445, "targetPort": "provider-api", "protocol": "TCP"}
    ]
    container = _container(objects)
    assert _port(container, "provider-api") == 8445
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["OASIS_PROVIDER_API_PORT"] == "8445"
    assert env["OASIS_PROVIDER_API_HOST"] == "0.0.0.0"  # noqa: S104
    assert env["OASIS_PROVIDER_API_DOORS"] == "a,b"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert env["OASIS_PROVIDER_API_TOKEN_FILE"] == mounts["provider-api-token"] + "/token"
    assert "OASIS_PROVIDER_API_TLS_DIR" not in env  # the operator's own CA
    volumes = {
        v["name"]: v
        for v in find(objects, "Deployment", "oasis-operator")["spec"]["template"]["spec"]["volumes"]
    }
    assert volumes["provider-api-token"]["secret"]["secretName"] == "runner-token"
    # With NetworkPolicies, its port is let in (from the peers given), besides the gateway's.
    fenced = {**values, "networkPolicies": {"enabled": True, "providerApiFrom": [{"podSelector": {}}]}}
    ingress = find(render(fenced), "NetworkPolicy", "-operator")["spec"]["ingress"]
    opened = [rule for rule in ingress if rule["ports"] == [{"port": "provider-api", "protocol": "TCP"}]]
    assert opened == [{"ports": [{"port": "provider-api", "protocol": "TCP"}], "from": [{"podSelector": {}}]}]
    unfenced = find(render({"networkPolicies": {"enabled": True}}), "NetworkPolicy", "-operator")
    assert "provider-api" not in str(unfenced["spec"]["ingress"])
    with pytest.raises(helm.HelmError, match=r"providerApi\.tokenSecret\.name is required"):
        render({"providerApi": {"enabled": True}})
    with pytest.raises(helm.HelmError, match=r"providerApi\.enabled needs the operator's own sandbox"):
        render({"providerApi": {"enabled": True, "tokenSecret": {"name": "t"}}, "sandbox": {"mode": "host"}})


def test_the_ttl_default_is_a_variable_of_the_deployment_only_when_set() -> None:
    def ttl(values: dict[str, Any] | None) -> str | None:
        env = {e["name"]: e.get("value") for e in _container(render(values))["env"]}
        return env.get("OASIS_TTL_SECONDS_AFTER_FINISHED")

    assert ttl(None) is None  # unset: the operator keeps finished evaluations
    assert ttl({"operator": {"ttlSecondsAfterFinished": 604800}}) == "604800"
    assert ttl({"operator": {"ttlSecondsAfterFinished": 0}}) == "0"


def test_crds_ship_only_in_the_crds_directory_so_helm_uninstall_keeps_them() -> None:
    # Helm installs crds/ before the templates and never upgrades or deletes those CRDs; a CRD rendered
    # from templates/ would be deleted by `helm uninstall`, and every evaluation and report with it.
    assert [o["metadata"]["name"] for o in render() if o["kind"] == "CustomResourceDefinition"] == []
    assert sorted(c["metadata"]["name"] for c in chart_crds()) == [
        "oasisevaluations.oasis.evaluation.dev",
        "scenarios.oasis.evaluation.dev",
    ]
