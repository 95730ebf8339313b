"""Whose request is it: the decision by credential and door, and what the credential is fingerprinted as."""

from __future__ import annotations

import hashlib

import pytest

from oasis_operator.gateway.attribution import Attribution, Credential, attribute, split_door
from oasis_operator.models.evidence import Actor

STRANGER = Credential("bearer", b"found-in-the-prompt")
FOREIGN_NOTE = "refused: a bearer credential that is not the environment's own"
PRINT = "sha256:" + hashlib.sha256(b"found-in-the-prompt").hexdigest()[:16]


@pytest.mark.parametrize(
    ("door", "credential", "owner", "revoked", "door_known", "expected"),
    [
        # Its own token: its own request, with or without the door.
        ("e1", Credential("bearer", b"t1"), "e1", False, True, Attribution("e1", Actor.AGENT, serve=True)),
        (None, Credential("bearer", b"t1"), "e1", False, False, Attribution("e1", Actor.AGENT, serve=True)),
        (None, Credential("bearer", b"t1"), "e1", True, False,
         Attribution("e1", Actor.AGENT, note="refused: the token was revoked")),
        # Its own token at another door: still its own, refused; the other record is left alone.
        ("e2", Credential("bearer", b"t1"), "e1", False, True,
         Attribution("e1", Actor.AGENT, note="refused: its token at the door of 'e2'")),
        # Someone else's credential at a door: that door's record, foreign, fingerprinted.
        ("e1", STRANGER, None, False, True,
         Attribution("e1", Actor.FOREIGN, PRINT, note=FOREIGN_NOTE)),
        ("e1", None, None, False, True, Attribution("e1", Actor.ANONYMOUS, note="refused: no credential")),
        # No door and no environment's token: unattributable, the shared record.
        (None, STRANGER, None, False, False,
         Attribution(None, Actor.FOREIGN, PRINT, note=FOREIGN_NOTE)),
        ("gone", STRANGER, None, False, False,
         Attribution(None, Actor.FOREIGN, PRINT, note=FOREIGN_NOTE)),
    ],
)  # fmt: skip
def test_attribution(
    door: str | None,
    credential: Credential | None,
    owner: str | None,
    revoked: bool,
    door_known: bool,
    expected: Attribution,
) -> None:
    assert attribute(door, credential, owner, revoked, door_known) == expected


def test_fingerprints_never_carry_the_secret() -> None:
    basic = Credential("basic", b"admin:hunter2")
    assert basic.fingerprint == "sha256:" + hashlib.sha256(b"admin:hunter2").hexdigest()[:16]
    assert "hunter2" not in basic.fingerprint
    assert basic.token_key is None
    assert STRANGER.token_key == hashlib.sha256(b"found-in-the-prompt").digest()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/env/e1/api/v1/pods", ("e1", "/api/v1/pods")),
        ("/env/e1", ("e1", "/")),
        ("/api/v1/pods", (None, "/api/v1/pods")),
        ("/env/", (None, "/env/")),
        ("/environment/x", (None, "/environment/x")),
    ],
)
def test_split_door(path: str, expected: tuple[str | None, str]) -> None:
    assert split_door(path) == expected
