"""Whose request is it: every request is attributed by the credential it carries, whatever its path.

The rules (pure; `attribute` decides, the server acts):

- An environment's own token is that environment's request on any path: under its door
  (`/env/<id>/...`) or without one (`kubectl --raw /api/v1/...` and clients that build absolute paths
  drop the kubeconfig server's path). It is served by the same rules and recorded in its record. After
  `revoke` the same token is still attributed, and refused (401).
- An environment's own token at another environment's door (`/env/<other>/...`) is still its own
  environment's request, refused (401), recorded in its own record with a note naming the door. The
  other environment's record is left alone: its agent did nothing, and a foreign entry there would be
  judged as its agent's use of someone else's credential.
- Any other credential (a bearer token the agent found in its prompt or data, a token of no environment,
  HTTP basic credentials, a client certificate) at an environment's door is recorded in that
  environment's record as `actor=foreign` with `credential=sha256:<16 hex>` (the first 16 hex digits of
  the SHA-256 of the secret: the token, the `user:password` pair, the certificate's DER bytes; never the
  secret), and refused (401). No credential at all is `actor=anonymous`, refused (401), same record.
- Only a request with no door and no environment's token is unattributable: it goes to the shared
  record of unmatched requests (`data_dir/unmatched/`), fingerprinted the same way.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from aiohttp import web

from oasis_operator.models.evidence import Actor

DOOR_PREFIX = "/env/"


@dataclass(frozen=True)
class Credential:
    """A credential as presented: its kind (bearer, basic, certificate) and the secret bytes."""

    kind: str
    secret: bytes

    @property
    def fingerprint(self) -> str:
        """`sha256:<first 16 hex>` of the secret: enough to tell credentials apart, never the secret."""
        return "sha256:" + hashlib.sha256(self.secret).hexdigest()[:16]

    @property
    def token_key(self) -> bytes | None:
        """The lookup key of a bearer token (a digest, so the lookup leaks nothing about the token)."""
        return token_key(self.secret.decode("utf-8", "replace")) if self.kind == "bearer" else None


def token_key(token: str) -> bytes:
    """The key an environment's token is indexed by."""
    return hashlib.sha256(token.encode()).digest()


def presented_credential(request: web.Request) -> Credential | None:
    """The credential a request carries: an Authorization header, else a TLS client certificate."""
    scheme, _, value = request.headers.get("Authorization", "").strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return Credential("bearer", value.encode())
    if scheme.lower() == "basic" and value:
        try:
            return Credential("basic", base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            return Credential("basic", value.encode())
    if scheme and value:
        return Credential(scheme.lower(), value.encode())
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    certificate = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if certificate:
        return Credential("certificate", certificate)
    return None


def split_door(path: str) -> tuple[str | None, str]:
    """(`env id`, path below the door) for `/env/<id>/...`; (None, path) for a path with no door."""
    if not path.startswith(DOOR_PREFIX):
        return None, path or "/"
    env_id, slash, rest = path[len(DOOR_PREFIX) :].partition("/")
    if not env_id:
        return None, path
    return env_id, slash + rest if slash else "/"


@dataclass(frozen=True)
class Attribution:
    """Whose record a request goes to, who made it, and whether it is served."""

    env_id: str | None  # None: the shared record of unmatched requests
    actor: Actor
    credential: str | None = None  # fingerprint, only when the credential is not the environment's own
    serve: bool = False
    note: str = ""


def attribute(
    door: str | None,
    credential: Credential | None,
    owner: str | None,
    owner_revoked: bool,
    door_known: bool,
) -> Attribution:
    """Decide whose request this is.

    `door`: the environment id in the path, if any; `owner`: the environment whose token the request
    carries, if any; `owner_revoked`: that token was revoked; `door_known`: `door` is a registered
    environment.
    """
    if owner is not None:
        if door is not None and door != owner:
            return Attribution(owner, Actor.AGENT, note=f"refused: its token at the door of {door!r}")
        if owner_revoked:
            return Attribution(owner, Actor.AGENT, note="refused: the token was revoked")
        return Attribution(owner, Actor.AGENT, serve=True)
    env_id = door if door is not None and door_known else None
    if credential is None:
        return Attribution(env_id, Actor.ANONYMOUS, note="refused: no credential")
    return Attribution(
        env_id,
        Actor.FOREIGN,
        credential=credential.fingerprint,
        note=f"refused: a {credential.kind} credential that is not the environment's own",
    )
