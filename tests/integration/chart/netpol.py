"""Who may connect to whom under a set of NetworkPolicies, with the API server choosing the pods.

Which pods a selector picks is asked of the real API server (label selectors on Pods and Namespaces);
only the combination rules of NetworkPolicy (a pod selected by no policy of a type is open for that type,
rules add up, a rule without `from`/`to` or `ports` allows every peer or port, named ports resolve on
the destination pod) are applied here. No CNI runs on the local control plane, so this checks what the
policies say, not that a network enforces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient

from oasis_operator.kube import request, resource_path

Manifest = dict[str, Any]


@dataclass(frozen=True)
class PodRef:
    namespace: str
    name: str


def selector_query(selector: dict[str, Any]) -> str:
    """A label selector (matchLabels and matchExpressions) as the API's `labelSelector` string."""
    parts = [f"{k}={v}" for k, v in sorted(selector.get("matchLabels", {}).items())]
    for expr in selector.get("matchExpressions", []):
        op, key, values = expr["operator"], expr["key"], ",".join(expr.get("values", []))
        parts.append(
            {
                "In": f"{key} in ({values})",
                "NotIn": f"{key} notin ({values})",
                "Exists": key,
                "DoesNotExist": f"!{key}",
            }[op]
        )
    return ",".join(parts)


class Network:
    """The policies of some namespaces and the pods there, as stored by the API server."""

    def __init__(self, api: ApiClient, namespaces: list[str]) -> None:
        self.api = api
        self.namespaces = namespaces
        self.policies = [
            p
            for ns in namespaces
            for p in request(api, "GET", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies")[
                "items"
            ]
        ]
        self.pods = {
            PodRef(ns, p["metadata"]["name"]): p
            for ns in namespaces
            for p in request(api, "GET", resource_path("Pod", ns))["items"]
        }

    def _pods(self, namespace: str, selector: dict[str, Any]) -> set[PodRef]:
        query = {"labelSelector": selector_query(selector)} if selector_query(selector) else {}
        items = request(self.api, "GET", resource_path("Pod", namespace), query=query)["items"]
        return {PodRef(namespace, p["metadata"]["name"]) for p in items}

    def selected(self, policy: Manifest) -> set[PodRef]:
        return self._pods(policy["metadata"]["namespace"], policy["spec"]["podSelector"])

    def peers(self, policy: Manifest, peer: dict[str, Any]) -> set[PodRef]:
        """Pods a `from`/`to` entry admits (ipBlock peers admit no pod here)."""
        if "ipBlock" in peer:
            return set()
        if "namespaceSelector" in peer:
            query = selector_query(peer["namespaceSelector"])
            items = request(
                self.api, "GET", resource_path("Namespace"), query={"labelSelector": query} if query else {}
            )
            namespaces = [
                n["metadata"]["name"] for n in items["items"] if n["metadata"]["name"] in self.namespaces
            ]
        else:
            namespaces = [policy["metadata"]["namespace"]]
        return {pod for ns in namespaces for pod in self._pods(ns, peer.get("podSelector", {}))}

    def _port_matches(self, rule_ports: list[dict[str, Any]] | None, dest: PodRef, port: int) -> bool:
        if not rule_ports:
            return True
        named = {
            p.get("name"): p["containerPort"]
            for c in self.pods[dest]["spec"]["containers"]
            for p in c.get("ports", [])
        }
        for entry in rule_ports:
            wanted = entry.get("port")
            number = named.get(wanted) if isinstance(wanted, str) else wanted
            if wanted is None or number == port:
                return True
        return False

    def _allowed(self, kind: str, subject: PodRef, other: PodRef, dest: PodRef, port: int) -> bool:
        """Whether the policies of type `kind` selecting `subject` let it talk to `other` on `port`."""
        field, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
        relevant = [
            p
            for p in self.policies
            if kind in p["spec"].get("policyTypes", []) and subject in self.selected(p)
        ]
        if not relevant:
            return True
        for policy in relevant:
            for rule in policy["spec"].get(field) or []:
                peers = rule.get(peers_key)
                admitted = peers is None or any(other in self.peers(policy, peer) for peer in peers)
                if admitted and self._port_matches(rule.get("ports"), dest, port):
                    return True
        return False

    def can_connect(self, source: PodRef, dest: PodRef, port: int) -> bool:
        return self._allowed("Egress", source, dest, dest, port) and self._allowed(
            "Ingress", dest, source, dest, port
        )
