"""Service names for the real node's pods: a small DNS server on the node's address, port 53 (the kubelet's
`clusterDNS`), that answers `<service>.<namespace>.svc[.cluster.local]` with the ready addresses of the
Service's EndpointSlices, read from the plane's API server at each question.

The node has neither CoreDNS nor kube-proxy, so a Service's cluster IP leads nowhere: the answer is the
endpoints' pod addresses (as for a headless Service), which the bridge reaches directly. It serves the
chart's sandbox control plane, whose components find each other by Service name (etcd, the API server, the
operator's audit webhook). Every other name is NXDOMAIN: nothing is forwarded.
"""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

from kubernetes import client

from oasis_operator.kube import api_client

PORT = 53
_A, _AAAA = 1, 28
_NXDOMAIN, _NOERROR, _FORMERR = 3, 0, 1
TTL = 2


def _question(packet: bytes) -> tuple[str, int, int]:
    """The first question's name, type and the offset after it."""
    labels, offset = [], 12
    while (length := packet[offset]) != 0:
        if length & 0xC0:
            raise ValueError("a compressed name in a question")
        labels.append(packet[offset + 1 : offset + 1 + length].decode("ascii").lower())
        offset += 1 + length
    qtype = struct.unpack("!H", packet[offset + 1 : offset + 3])[0]
    return ".".join(labels), qtype, offset + 5


def service_of(name: str) -> tuple[str, str] | None:
    """(namespace, service) of a Service's name, or None."""
    parts = name.rstrip(".").split(".")
    if parts[-2:] == ["cluster", "local"]:
        parts = parts[:-2]
    if len(parts) != 3 or parts[2] != "svc":
        return None
    return parts[1], parts[0]


class ServiceDNS:
    """The server, started in a thread by `start` and stopped by `stop`."""

    def __init__(self, kubeconfig: Path, address: str, port: int = PORT) -> None:
        self._api = api_client(kubeconfig)
        self._slices = client.DiscoveryV1Api(self._api)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((address, port))
        self._sock.settimeout(0.5)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="service-dns", daemon=True)
        # (namespace, service) -> the addresses last answered
        self.answered: dict[tuple[str, str], list[str]] = {}

    def start(self) -> ServiceDNS:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)
        self._sock.close()
        self._api.close()  # type: ignore[no-untyped-call]

    def addresses(self, namespace: str, service: str) -> list[str]:
        found = self._slices.list_namespaced_endpoint_slice(
            namespace, label_selector=f"kubernetes.io/service-name={service}"
        )
        return sorted(
            {
                address
                for eps in found.items
                if eps.address_type == "IPv4"
                for endpoint in eps.endpoints or []
                if endpoint.conditions is None or endpoint.conditions.ready is not False
                for address in endpoint.addresses
            }
        )

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                packet, peer = self._sock.recvfrom(512)
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                reply = self._answer(packet)
            except Exception:  # noqa: BLE001 - a bad question gets FORMERR, the server goes on
                reply = packet[:2] + struct.pack("!HHHHH", 0x8180 | _FORMERR, 0, 0, 0, 0)
            self._sock.sendto(reply, peer)

    def _answer(self, packet: bytes) -> bytes:
        ident = packet[:2]
        flags = 0x8400 | (struct.unpack("!H", packet[2:4])[0] & 0x0100)  # response, authoritative, RD echoed
        name, qtype, end = _question(packet)
        question = packet[12:end]
        target = service_of(name)
        addresses = self.addresses(*target) if target else []
        if target is None or not addresses:
            return ident + struct.pack("!HHHHH", flags | _NXDOMAIN, 1, 0, 0, 0) + question
        self.answered[target] = addresses
        records = b""
        if qtype == _A:
            for address in addresses:
                records += struct.pack("!HHHIH", 0xC00C, _A, 1, TTL, 4) + socket.inet_aton(address)
        count = len(addresses) if qtype == _A else 0
        return ident + struct.pack("!HHHHH", flags | _NOERROR, 1, count, 0, 0) + question + records
