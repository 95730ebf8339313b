"""The port-forward protocol the gateway serves (bytes in, bytes out, as kubectl's SPDY client sees it)
and what answers on a pod's port (the twin's declared state, never a socket)."""

from __future__ import annotations

from typing import Any

import pytest

from oasis_operator.gateway.apis import spdy
from oasis_operator.gateway.apis.pod_ports import PortAnswer, http_response, port_answer, refused_message
from oasis_operator.gateway.apis.portforward import PortForwardSession
from oasis_operator.gateway.apis.spdy import Data, FrameReader, FrameWriter, GoAway, Ping, RstStream, SynReply
from oasis_operator.models.connect import ConnectGrants

REFUSED = "error forwarding port 7000 to pod abc, uid : connection refused"


class Client:
    """kubectl's side: its own compression contexts, one session under test."""

    def __init__(self, answers: dict[int, PortAnswer | str] | None = None) -> None:
        table = answers or {8080: PortAnswer(200, "OK\n"), 7000: REFUSED}
        self.session = PortForwardSession(lambda port: table.get(port, REFUSED))
        self.writer, self.reader = FrameWriter(), FrameReader()

    def send(self, *frames: spdy.Frame) -> list[spdy.Frame]:
        wire = b"".join(self.writer.encode(f) for f in frames)
        return [f for data in self.session.receive(wire) for f in self.reader.feed(data)]

    def connect(self, port: int, request_id: str, first: int) -> list[spdy.Frame]:
        """Open the error stream (half-closed at once, as kubectl does) and the data stream."""
        headers = {"streamtype": ("error",), "port": (str(port),), "requestid": (request_id,)}
        replies = self.send(spdy.SynStream(first, headers), Data(first, b"", spdy.FLAG_FIN))
        return replies + self.send(spdy.SynStream(first + 2, {**headers, "streamtype": ("data",)}))


def test_a_forwarded_connection_is_answered_per_request_with_keep_alive() -> None:
    client = Client()
    assert client.connect(8080, "0", 1) == [SynReply(1, {}), SynReply(3, {})]
    got = client.send(Data(3, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nHEAD / HTTP/1.1\r\n\r\n"))
    assert got == [
        Data(
            3, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nOK\n"
        ),
        Data(3, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\n"),
    ]
    # A request in two pieces is answered once whole; `Connection: close` ends both streams.
    assert client.send(Data(3, b"POST /x HTTP/1.1\r\nContent-Length: 4\r\n\r\nab")) == []
    got = client.send(Data(3, b"cd"), Data(3, b"GET /y HTTP/1.1\r\nConnection: close\r\n\r\n"))
    assert [f.data.split(b"\r\n")[0] for f in got[:2] if isinstance(f, Data)] == [b"HTTP/1.1 200 OK"] * 2
    assert b"Connection: close" in got[1].data  # type: ignore[union-attr]
    assert got[2:] == [Data(1, b"", spdy.FLAG_FIN), Data(3, b"", spdy.FLAG_FIN)]
    assert client.session.record() == {
        "ports": [8080],
        "connections": [
            {"request_id": "0", "port": 8080, "answer": "default", "status": 200, "request_count": 4,
             "requests": [{"method": "GET", "path": "/healthz", "status": 200},
                          {"method": "HEAD", "path": "/", "status": 200},
                          {"method": "POST", "path": "/x", "status": 200},
                          {"method": "GET", "path": "/y", "status": 200}]},
        ],
    }  # fmt: skip


def test_the_clients_fin_on_the_data_stream_ends_both_streams() -> None:
    client = Client()
    client.connect(8080, "0", 1)
    got = client.send(Data(3, b"GET / HTTP/1.0\r\n\r\n", spdy.FLAG_FIN))
    assert b"Connection: close" in got[0].data  # type: ignore[union-attr]
    assert got[1:] == [Data(1, b"", spdy.FLAG_FIN), Data(3, b"", spdy.FLAG_FIN)]
    assert client.send(Data(3, b"GET / HTTP/1.1\r\n\r\n")) == []  # nothing more on a finished pair
    assert client.send(RstStream(3, spdy.CANCEL)) == []  # kubectl's reset afterwards


def test_a_refused_port_writes_the_runtime_error_then_ends_the_streams_as_the_kubelet_does() -> None:
    client = Client()
    got = client.connect(7000, "4", 5)
    assert got == [
        SynReply(5, {}),
        SynReply(7, {}),
        Data(5, REFUSED.encode()),
        Data(5, b"", spdy.FLAG_FIN),
        RstStream(7, spdy.CANCEL),
    ]
    assert client.session.record()["connections"] == [
        {"request_id": "4", "port": 7000, "answer": "refused", "error": REFUSED}
    ]


def test_streams_without_a_request_id_pair_as_the_kubelet_pairs_them() -> None:
    client = Client()
    replies = client.send(
        spdy.SynStream(1, {"streamtype": ("error",), "port": ("8080",)}),
        spdy.SynStream(3, {"streamtype": ("data",), "port": ("8080",)}),
        Data(3, b"GET / HTTP/1.1\r\n\r\n"),
    )
    assert replies[:2] == [SynReply(1, {}), SynReply(3, {})]
    assert isinstance(replies[2], Data)
    assert replies[2].data.startswith(b"HTTP/1.1 200 OK")
    assert client.session.record()["connections"][0]["request_id"] == "1"


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"streamtype": ("data",)}, '"port" header is required'),
        ({"streamtype": ("data",), "port": ("http",)}, "unable to parse 'http' as a port"),
        ({"streamtype": ("data",), "port": ("70000",)}, "unable to parse '70000' as a port"),
        ({"port": ("80",)}, '"streamType" header is required'),
        ({"port": ("80",), "streamtype": ("stdin",)}, 'invalid stream type "stdin"'),
    ],
)
def test_a_stream_the_kubelet_would_not_take_is_reset(headers: dict[str, Any], problem: str) -> None:
    client = Client()
    assert client.send(spdy.SynStream(1, headers)) == [RstStream(1, spdy.CANCEL)]
    assert client.session.record()["connections"] == [{"stream": 1, "error": problem}]


def test_a_second_stream_of_one_type_is_an_error_on_the_error_stream() -> None:
    client = Client()
    client.connect(8080, "0", 1)
    headers = {"streamtype": ("data",), "port": ("8080",), "requestid": ("0",)}
    got = client.send(spdy.SynStream(5, headers))
    message = b"error processing stream for request 0: data stream already assigned"
    assert got == [SynReply(5, {}), Data(1, message)]


def test_stream_ids_must_be_odd_and_rising() -> None:
    client = Client()
    client.connect(8080, "0", 5)
    headers = {"streamtype": ("error",), "port": ("8080",), "requestid": ("1",)}
    assert client.send(spdy.SynStream(3, headers)) == [RstStream(3, spdy.PROTOCOL_ERROR)]
    assert client.send(spdy.SynStream(10, headers)) == [RstStream(10, spdy.PROTOCOL_ERROR)]


def test_client_pings_are_echoed_and_a_goaway_ends_the_session() -> None:
    client = Client()
    assert client.send(Ping(1), Ping(2), spdy.Settings(((0, 4, 1000),)), spdy.WindowUpdate(1, 10)) == [
        Ping(1)
    ]
    assert client.send(GoAway(0)) == []
    assert client.session.closed
    assert client.send(Ping(3)) == []


def test_a_malformed_frame_ends_the_session_with_a_protocol_error_goaway() -> None:
    client = Client()
    client.connect(8080, "0", 1)
    out = client.session.receive(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")  # SPDY/2 ping
    assert [f for data in out for f in client.reader.feed(data)] == [GoAway(3, spdy.GOAWAY_PROTOCOL_ERROR)]
    assert client.session.closed
    assert client.session.record()["error"] == "malformed SPDY: SPDY version 2 is not served (only 3)"


def test_bytes_that_are_not_http_get_a_400_and_the_connection_closes() -> None:
    client = Client()
    client.connect(8080, "0", 1)
    got = client.send(Data(3, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"))  # a TLS hello
    assert isinstance(got[0], Data)
    assert got[0].data.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert got[1:] == [Data(1, b"", spdy.FLAG_FIN), Data(3, b"", spdy.FLAG_FIN)]
    request = client.session.record()["connections"][0]["requests"][0]
    assert request["status"] == 400
    assert request["bad_request"].startswith("not an HTTP/1.x request line")


# ---- what answers on the port --------------------------------------------------------------------


def _pod(ready: bool = True, state: str = "running", port: int = 8080) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1", "namespace": "sbx-default", "uid": "0f6c1e2a-uid"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app", "ports": [{"containerPort": port}]}]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"name": "app", "state": {state: {}}}],
        },
    }


def test_a_declared_port_answers_as_declared_whatever_the_pod() -> None:
    connect = ConnectGrants.model_validate(
        {"grants": ["port-forward"],
         "port_forward": [{"pod": "web-*", "port": 9000, "status": 502, "body": "{}",
                           "headers": {"Content-Type": "application/json"}}]}
    )  # fmt: skip
    answer = port_answer(connect, _pod(ready=False), "web-1", "default", 9000)
    assert answer == PortAnswer(502, "{}", {"Content-Type": "application/json"}, "declared")
    assert http_response(answer, head_only=False, close=False) == (
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
    )
    assert port_answer(connect, _pod(), "api-1", "default", 9000) == refused_message(_pod(), 9000)


def test_a_declared_container_port_answers_from_readiness() -> None:
    assert port_answer(None, _pod(), "web-1", "default", 8080) == PortAnswer(
        200, "OK\n", {"Content-Type": "text/plain; charset=utf-8"}
    )
    failing = port_answer(None, _pod(ready=False), "web-1", "default", 8080)
    assert isinstance(failing, PortAnswer)
    assert (failing.status, failing.body) == (503, "Service Unavailable\n")


def test_no_listener_is_containerds_connection_refused_always_in_the_same_words() -> None:
    crash_looping = port_answer(None, _pod(state="waiting"), "web-1", "default", 8080)
    undeclared = port_answer(None, _pod(), "web-1", "default", 80)
    assert crash_looping == refused_message(_pod(), 8080)
    assert isinstance(undeclared, str)
    assert undeclared.startswith("error forwarding port 80 to pod ")
    assert ', uid : failed to execute portforward in network namespace "/var/run/netns/cni-' in undeclared
    assert undeclared.endswith(
        "IPv4: dial tcp4 127.0.0.1:80: connect: connection refused "
        "IPv6 dial tcp6 [::1]:80: connect: connection refused "
    )
    assert refused_message(_pod(), 80) == undeclared  # the same pod, the same words
    other = {**_pod(), "metadata": {"uid": "another"}}
    assert refused_message(other, 80) != undeclared


def test_a_large_answer_goes_in_32_kib_frames_and_a_large_body_is_refused_unread() -> None:
    client = Client({8080: PortAnswer(200, "x" * 100_000)})
    client.connect(8080, "0", 1)
    got = client.send(Data(3, b"GET / HTTP/1.1\r\n\r\n"))
    assert [len(f.data) for f in got if isinstance(f, Data)][:3] == [32 * 1024] * 3
    assert b"".join(f.data for f in got if isinstance(f, Data)).endswith(b"x" * 100_000)
    got = client.send(Data(3, b"PUT / HTTP/1.1\r\nContent-Length: 5000000\r\n\r\n"))
    assert isinstance(got[0], Data)
    assert got[0].data.startswith(b"HTTP/1.1 413 Request Entity Too Large\r\n")
    assert got[1:] == [Data(1, b"", spdy.FLAG_FIN), Data(3, b"", spdy.FLAG_FIN)]


def test_the_record_keeps_the_first_connections_and_counts_them_all() -> None:
    client = Client()
    for i in range(205):
        client.connect(7000, str(i), 1 + 4 * i)
    record = client.session.record()
    assert len(record["connections"]) == 200
    assert record["connection_count"] == 205
    assert record["ports"] == [7000]
