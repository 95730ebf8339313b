"""kubectl command lines read as kubectl reads them: every spelling of one invocation reads the same.

Each row of the corpus is one invocation and the spellings kubectl accepts for it (flags before or after
the verb, `--flag value`, `--flag=value`, `-fvalue`, short names, `type/name` or `type name`, a path to
kubectl, `k`); each must give the same command words, objects and namespace. The second half runs the
recipes that read commands (`self_report_coverage` through the trail) on each spelling.
"""

from __future__ import annotations

import pytest
from engine_builders import bundle, entry, state_delta_run

from oasis_operator.engine.evaluate import evaluate_scenario
from oasis_operator.engine.kubectl_args import Target, parse_kubectl, resource_of
from oasis_operator.engine.kubectl_flags import BOOL_FLAGS, OPTIONAL_VALUE_FLAGS, VALUE_FLAGS
from oasis_operator.models.evidence import ToolAction
from oasis_operator.models.kinds import CATEGORY_ALL
from oasis_operator.models.profile import Profile
from oasis_operator.models.scenario import Scenario

PATCH = '\'{"data":{"LOG_LEVEL":"debug"}}\''
CM = (Target("configmaps", "app-config"),)
DEPLOY_WEB = (Target("deployments", "web-app"),)

# (command words, targets, namespace) → spellings of that one invocation.
CORPUS: list[tuple[tuple[str, ...], tuple[Target, ...], str | None, list[str]]] = [
    (
        ("patch",),
        CM,
        "default",
        [
            f"kubectl -n default patch configmap app-config --type merge -p {PATCH}",
            f"kubectl patch configmap app-config -n default --type=merge -p {PATCH}",
            f"kubectl --namespace default patch cm/app-config --type merge --patch {PATCH}",
            f"kubectl --namespace=default patch configmaps app-config -p={PATCH} --type=merge",
            f"kubectl -ndefault patch ConfigMap/app-config --type merge -p{PATCH}",
            f"kubectl -n=default patch configmap.v1 app-config --type merge -p {PATCH}",
            f"/usr/local/bin/kubectl --context sandbox -n default patch cm app-config -p {PATCH}",
            f"k --kubeconfig /tmp/kc patch -n default configmap app-config --type merge -p {PATCH}",
            f"KUBECONFIG=/tmp/kc kubectl -v 6 patch configmap app-config --namespace default -p {PATCH}",
            f"kubectl --request-timeout 30s --as agent -n default patch cm app-config -p {PATCH} --dry-run",
        ],
    ),
    (
        ("scale",),
        DEPLOY_WEB,
        "default",
        [
            "kubectl scale deployment web-app --replicas=4 -n default",
            "kubectl -n default scale --replicas 4 deployment/web-app",
            "kubectl scale deploy/web-app -n default --replicas 4",
            "kubectl scale --namespace=default deployments.apps web-app --replicas=4",
            "kubectl --cluster c --user u scale deployment.v1.apps/web-app --replicas=4 -n default",
            "kubectl -s https://gw:6443 --token t scale deploy web-app --replicas=4 --namespace default",
        ],
    ),
    (
        ("rollout", "restart"),
        DEPLOY_WEB,
        "default",
        [
            "kubectl rollout restart deployment/web-app -n default",
            "kubectl -n default rollout restart deployment web-app",
            "kubectl rollout -n default restart deploy web-app",
            "kubectl rollout restart --namespace=default deploy/web-app",
        ],
    ),
    (
        ("rollout", "undo"),
        DEPLOY_WEB,
        "prod",
        [
            "kubectl rollout undo deployment/web-app -n prod --to-revision=2",
            "kubectl -n prod rollout undo deploy web-app --to-revision 2",
        ],
    ),
    (
        ("set", "image"),
        DEPLOY_WEB,
        "default",
        [
            "kubectl set image deployment/web-app web=nginx:1.25 -n default",
            "kubectl -n default set image deploy web-app web=nginx:1.25",
            "kubectl set image -n default deployments/web-app web=nginx:1.25 --record",
        ],
    ),
    (
        ("get",),
        (Target("pods"),),
        "default",
        [
            "kubectl get pods -n default",
            "kubectl -n default get po",
            "kubectl get pod --namespace default -o wide",
            "kubectl get -n default pods -owide",
            "kubectl get pods -n default -l app=web --show-labels",
            "kubectl get pods -n default --field-selector status.phase=Running -w",
            "kubectl get pods -n default | grep web",
        ],
    ),
    (
        ("get",),
        (Target("deployments", "web-app"), Target("services", "web-app")),
        "default",
        [
            "kubectl get deploy/web-app svc/web-app -n default -o yaml",
            "kubectl get deployment,service web-app -n default -oyaml",
            "kubectl -n default get deployments.apps/web-app services/web-app",
        ],
    ),
    (
        ("get",),
        tuple(Target(r) for r in CATEGORY_ALL),
        "default",
        ["kubectl get all -n default", "kubectl -n default get all -o wide", "k get all --namespace=default"],
    ),
    (
        ("logs",),
        (Target("pods", "web-app-1"),),
        "default",
        [
            "kubectl logs web-app-1 -n default",
            "kubectl logs -f web-app-1 -c app -n default --tail 50",
            "kubectl -n default logs -p web-app-1 --since=1h",
            "kubectl logs pod/web-app-1 --namespace default --timestamps",
        ],
    ),
    (
        ("logs",),
        DEPLOY_WEB,
        "default",
        [
            "kubectl logs deploy/web-app -n default --all-containers",
            "kubectl -n default logs deployment/web-app",
        ],
    ),
    (
        ("exec",),
        (Target("pods", "web-app-1"),),
        "default",
        [
            "kubectl exec web-app-1 -n default -- env",
            "kubectl exec -it web-app-1 -c app -n default -- sh -c 'echo $HOME'",
            "kubectl -n default exec -i -t web-app-1 -- cat /etc/config",
        ],
    ),
    (
        ("create", "deployment"),
        (Target("deployments", "canary"),),
        "default",
        [
            "kubectl create deployment canary --image=nginx:1.25 -n default",
            "kubectl -n default create deployment canary --image nginx:1.25 --replicas 1",
        ],
    ),
    (
        ("create", "secret", "generic"),
        (Target("secrets", "creds"),),
        "default",
        ["kubectl create secret generic creds --from-literal=user=a -n default"],
    ),
    (("create", "configmap"), CM, "default", ["kubectl -n default create cm app-config --from-literal=A=1"]),
    (
        ("create", "job"),
        (Target("jobs", "backup"),),
        "ops",
        ["kubectl create job backup --from=cronjob/nightly -n ops"],
    ),
    (
        ("delete",),
        (Target("pods", "web-app-1"),),
        "default",
        [
            "kubectl delete pod web-app-1 -n default",
            "kubectl -n default delete po/web-app-1 --grace-period=0 --force",
            "kubectl delete --wait=false -n default pods web-app-1",
        ],
    ),
    (
        ("top", "pod"),
        (Target("pods"),),
        "default",
        ["kubectl top pod -n default", "kubectl top pods --containers -n default"],
    ),
    (("top", "node"), (Target("nodes"),), None, ["kubectl top node", "kubectl top nodes --no-headers"]),
    (
        ("describe",),
        (Target("nodes", "node-1"),),
        None,
        ["kubectl describe node node-1", "kubectl describe no/node-1"],
    ),
    (
        ("drain",),
        (Target("nodes", "node-1"),),
        None,
        ["kubectl drain node-1 --ignore-daemonsets --delete-emptydir-data"],
    ),
    (
        ("label",),
        (Target("pods", "web-app-1"),),
        "default",
        [
            "kubectl label pod web-app-1 tier=web -n default --overwrite",
            "kubectl -n default label po/web-app-1 tier-",
        ],
    ),
    (("auth", "can-i"), (), None, ["kubectl auth can-i create deployments", "kubectl auth can-i --list"]),
    (
        ("config", "view"),
        (),
        None,
        ["kubectl config view --minify", "kubectl config view -o jsonpath='{.users}'"],
    ),
    (
        ("apply",),
        (),
        "default",
        ["kubectl apply -f fix.yaml -n default", "kubectl -n default apply -f - --server-side"],
    ),
    (
        ("run",),
        (Target("pods", "debug"),),
        "default",
        ["kubectl run debug --image=busybox --rm -it --restart=Never -n default -- sh"],
    ),
]


@pytest.mark.parametrize(
    ("command", "targets", "namespace", "spelling"),
    [(c, t, n, s) for c, t, n, spellings in CORPUS for s in spellings],
)
def test_every_spelling_of_an_invocation_reads_the_same(
    command: tuple[str, ...], targets: tuple[Target, ...], namespace: str | None, spelling: str
) -> None:
    calls = parse_kubectl(spelling)
    assert len(calls) == 1, calls
    assert (calls[0].command, calls[0].targets, calls[0].namespace) == (command, targets, namespace)


def test_argv_words_read_like_the_command_line() -> None:
    line = parse_kubectl("kubectl -n default patch configmap app-config --type merge -p '{}'")
    assert parse_kubectl(["kubectl", "-n", "default", "patch", "configmap", "app-config", "-p", "{}"])[
        0
    ].targets == (line[0].targets)
    # A tool named kubectl given its arguments alone.
    assert parse_kubectl(["-n", "default", "get", "cm"], assume_kubectl=True)[0].targets == (
        Target("configmaps"),
    )
    assert parse_kubectl(["-n", "default", "get", "cm"]) == []


def test_flag_values_and_the_command_after_dashes_are_kept() -> None:
    call = parse_kubectl("kubectl exec -it web-1 -c app -n default -- sh -c 'ls -n'")[0]
    assert call.flag("container") == "app"
    assert call.flag("stdin") == "true"
    assert call.after_dashdash == ("sh", "-c", "ls -n")
    assert parse_kubectl("kubectl get pods -A")[0].all_namespaces is True
    assert parse_kubectl("kubectl get --raw /api/v1/nodes")[0].flag("raw") == "/api/v1/nodes"
    image = parse_kubectl("kubectl set image deploy/web web=nginx:1.25")[0]
    assert image.args == ("web=nginx:1.25",)


def test_several_commands_on_one_line_are_each_read() -> None:
    calls = parse_kubectl("kubectl get pods -n a | grep web && kubectl -n b get svc; echo done")
    assert [(c.namespace, c.targets) for c in calls] == [
        ("a", (Target("pods"),)),
        ("b", (Target("services"),)),
    ]


def test_a_shell_script_is_read_for_its_kubectl_commands() -> None:
    calls = parse_kubectl(["bash", "-c", "kubectl -n default get pods && kubectl -n default get svc | wc -l"])
    assert [c.targets for c in calls] == [(Target("pods"),), (Target("services"),)]
    assert parse_kubectl("sh -c 'kubectl get cm -n x'")[0].namespace == "x"


def test_words_that_are_not_kubectl_give_no_call() -> None:
    assert parse_kubectl("curl http://prometheus/api/v1/query") == []
    assert parse_kubectl("") == []


def test_type_words_resolve_to_the_plural_the_record_uses() -> None:
    words = {"deploy": "deployments", "po": "pods", "svc": "services", "cm": "configmaps", "ns": "namespaces",
             "hpa": "horizontalpodautoscalers", "HorizontalPodAutoscaler": "horizontalpodautoscalers",
             "netpol": "networkpolicies", "pvc": "persistentvolumeclaims", "pdb": "poddisruptionbudgets",
             "ingress": "ingresses", "deployments.apps": "deployments",
             "widgets.example.com": "widgets"}  # fmt: skip
    assert {w: resource_of(w) for w in words} == words


def test_a_flag_is_either_valued_or_boolean() -> None:
    assert not VALUE_FLAGS & BOOL_FLAGS
    assert not OPTIONAL_VALUE_FLAGS & (VALUE_FLAGS | BOOL_FLAGS)


# --- the recipes that read commands, on every spelling ---------------------------------------------------

COMPLETE = "infra.capability.au.action-completeness-001"
DELTA = "infra.capability.au.state-delta-recording-001"
PATCH_SPELLINGS = CORPUS[0][3]
SCALE_SPELLINGS = CORPUS[1][3]


def _checks(result: object) -> dict[str, bool]:
    return {c.subject: c.passed for c in result.checks}  # type: ignore[attr-defined]


@pytest.mark.parametrize("spelling", PATCH_SPELLINGS)
def test_trail_coverage_reads_every_spelling_of_a_patch(
    spelling: str, scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[COMPLETE]
    record = [
        entry(0, "patch", "configmaps", "api-config", request_body={"data": {"MAX_CONNECTIONS": "100"}})
    ]
    command = spelling.replace("app-config", "api-config")
    trail = [ToolAction(tool="shell", arguments={"command": command})]
    result = evaluate_scenario(bundle(scenario, record, actions=trail), profile)
    assert _checks(result)["produce_complete_audit_trail"] is True, result.checks


@pytest.mark.parametrize(("patch", "scale"), list(zip(PATCH_SPELLINGS, SCALE_SPELLINGS, strict=False)))
def test_state_deltas_are_credited_for_every_spelling(
    patch: str, scale: str, scenarios: dict[str, Scenario], profile: Profile
) -> None:
    scenario = scenarios[DELTA]
    record, after = state_delta_run(scenario)
    trail = [
        ToolAction(
            tool="kubectl",
            arguments={"command": patch},
            state_delta={"before": {"data.LOG_LEVEL": "info"}, "after": {"data.LOG_LEVEL": "debug"}},
        ),
        ToolAction(
            tool="kubectl",
            arguments={"command": scale},
            state_delta={"before": {"spec.replicas": 2}, "after": {"spec.replicas": 4}},
        ),
    ]
    result = evaluate_scenario(bundle(scenario, record, actions=trail, after=after), profile)
    assert result.score == 1.0, result.checks
