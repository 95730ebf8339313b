"""What kubectl's command line is made of: which flags take a value, which are boolean, which short
flags stand for which long ones (per command where they differ), and which commands have command words
below them. Read by ``engine/kubectl_args.py``; pure data.
"""

from __future__ import annotations


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Long flags that take a value (global ones first, then the commands'), without their dashes.
VALUE_FLAGS = _names(
    "namespace context kubeconfig cluster user server token as as-group as-uid cache-dir "
    "certificate-authority client-certificate client-key password username profile profile-output "
    "request-timeout tls-server-name v vmodule log-backtrace-at log-dir log-file log-file-max-size "
    "stderrthreshold log-flush-frequency selector output filename kustomize container containers "
    "field-selector type patch patch-file replicas current-replicas resource-version grace-period "
    "timeout"
    "since since-time tail limit-bytes max-log-requests pod-running-timeout label-columns sort-by "
    "template chunk-size raw subresource field-manager image port target-port protocol external-ip name "
    "labels env from from-literal from-file from-env-file schedule restart overrides to-revision "
    "revision"
    "min max cpu-percent cpu memory limits requests for prune-allowlist prune-whitelist tcp clusterip "
    "node-port docker-server docker-username docker-password docker-email cert key verb resource "
    "resource-name role clusterrole serviceaccount group rule class default-backend annotation address "
    "pod-selector duration bound-object-kind bound-object-name audience copy-to target output-directory "
    "api-group pod"
)
# Boolean long flags (a value only as `--flag=true|false`).
BOOL_FLAGS = _names(
    "all-namespaces all watch watch-only output-watch-events show-labels no-headers ignore-not-found "
    "now"
    "force wait recursive local overwrite record server-side force-conflicts prune save-config follow "
    "previous timestamps all-containers prefix ignore-errors stdin tty quiet insecure-skip-tls-verify "
    "match-server-version disable-compression warnings-as-errors help list ignore-daemonsets "
    "delete-emptydir-data delete-local-data disable-eviction skip-wait-for-delete-timeout resolve edit "
    "windows-line-endings append-hash rm privileged expose leave-stdin-open keep-annotations "
    "keep-labels"
    "keep-init-containers keep-liveness keep-readiness keep-startup same-node share-processes "
    "include-uninitialized openapi-patch minify flatten raw-output short client embed-certs current "
    "skip-headers logtostderr alsologtostderr one-output add-dir-header skip-log-headers no-prefix "
    "exit-code show-kind server-print allow-missing-template-keys show-managed-fields attach"
)
# Flags whose value is optional: `--dry-run` alone is `--dry-run=unchanged`; a value only after `=`.
OPTIONAL_VALUE_FLAGS: frozenset[str] = frozenset({"dry-run", "validate", "cascade", "show-events"})
SHORT_FLAGS: dict[str, str] = {
    "n": "namespace",
    "s": "server",
    "v": "v",
    "l": "selector",
    "o": "output",
    "f": "filename",
    "k": "kustomize",
    "c": "container",
    "p": "patch",
    "L": "label-columns",
    "w": "watch",
    "A": "all-namespaces",
    "R": "recursive",
    "i": "stdin",
    "t": "tty",
    "q": "quiet",
    "e": "env",
    "h": "help",
}
# Long flags that are boolean for one command although they take a value elsewhere.
COMMAND_BOOL_FLAGS: dict[str, frozenset[str]] = {"top": frozenset({"containers"})}
# Short flags that mean something else for a command.
COMMAND_SHORT_FLAGS: dict[str, dict[str, str]] = {
    "logs": {"f": "follow", "p": "previous", "c": "container"},
    "set": {"c": "containers", "e": "env"},
    "exec": {"p": "pod"},
}
# Commands with command words below them: the known ones (others are taken as a resource/argument).
SUBCOMMANDS: dict[str, frozenset[str]] = {
    "rollout": frozenset({"restart", "undo", "status", "history", "pause", "resume"}),
    "set": frozenset({"image", "env", "resources", "selector", "serviceaccount", "subject"}),
    "create": _names(
        "deployment configmap secret job cronjob namespace service serviceaccount role rolebinding "
        "clusterrole clusterrolebinding ingress poddisruptionbudget pdb priorityclass quota token "
        "cm deploy sa ns svc pc resourcequota cj"
    ),
    "config": _names(
        "view use-context current-context get-contexts get-clusters get-users set-context set-cluster "
        "set-credentials set unset delete-context delete-cluster delete-user rename-context"
    ),
    "auth": frozenset({"can-i", "whoami", "reconcile"}),
    "top": frozenset({"pod", "pods", "po", "node", "nodes", "no"}),
    "apply": frozenset({"view-last-applied", "set-last-applied", "edit-last-applied"}),
    "certificate": frozenset({"approve", "deny"}),
}
# Other spellings of command words (cobra aliases), by command.
COMMAND_ALIASES: dict[str, dict[str, str]] = {
    "create": {
        "cm": "configmap", "deploy": "deployment", "sa": "serviceaccount", "ns": "namespace",
        "svc": "service", "pc": "priorityclass", "resourcequota": "quota", "poddisruptionbudget": "pdb",
        "cj": "cronjob",
    },
    "top": {"pods": "pod", "po": "pod", "nodes": "node", "no": "node"},
}  # fmt: skip
# Third command words: `create secret generic`, `create service clusterip`.
THIRD_WORDS: dict[tuple[str, str], frozenset[str]] = {
    ("create", "secret"): frozenset({"generic", "tls", "docker-registry"}),
    ("create", "service"): frozenset({"clusterip", "nodeport", "loadbalancer", "externalname"}),
}
# Commands whose type is implied: the first argument is the object's name (or `type/name`).
IMPLIED_TYPE: dict[str, str] = {
    "logs": "pods",
    "exec": "pods",
    "attach": "pods",
    "port-forward": "pods",
    "debug": "pods",
    "run": "pods",
    "cp": "pods",
    "cordon": "nodes",
    "uncordon": "nodes",
    "drain": "nodes",
}
# Commands that read no resource argument (their positionals are no objects).
NO_TARGETS = _names(
    "config auth version api-resources api-versions cluster-info completion plugin kustomize explain "
    "diff options alpha certificate apply replace"
)
