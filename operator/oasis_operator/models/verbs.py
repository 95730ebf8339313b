"""The one table of verbs: what each one does, and whether the API server or the action grammar names it.

Two vocabularies share words. A **request verb** is what the Kubernetes API server calls a request (RBAC
rules, the API server's audit events, the gateway's record): ``get list watch create update patch delete
deletecollection``. An **action verb** is a word of the action grammar (`models.actions`, SI
interface-types §4), the abstract operation an audit entry realised: ``replace``, ``apply``, ``scale``,
``restart``, ``rollback``, ``exec``, ``log``, ``query`` and ``authenticate`` are action verbs only
(``kubectl apply --server-side`` is a request ``patch``; ``kubectl scale`` a ``patch`` or an ``update``
of the ``scale`` subresource).

Every set of verbs the operator uses is derived here from :data:`VERBS`, under a name that says which
vocabulary and which operations it holds; the tuples keep the table's order (RBAC rules and the audit
policy list them in it).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Operation(StrEnum):
    """What a verb does to the state it addresses."""

    READ = "read"  # changes nothing
    CREATE = "create"  # writes a new object from the body
    MODIFY = "modify"  # writes an existing object's content from the body
    DELETE = "delete"  # removes objects
    OPERATE = "operate"  # acts on a workload (its replica count, its pods, its release)
    EXEC = "exec"  # runs a command in a container
    AUTHENTICATE = "authenticate"  # presents a credential


WRITES: frozenset[Operation] = frozenset(
    {Operation.CREATE, Operation.MODIFY, Operation.DELETE, Operation.OPERATE, Operation.EXEC}
)
BODY_WRITES: frozenset[Operation] = frozenset({Operation.CREATE, Operation.MODIFY})


@dataclass(frozen=True)
class Verb:
    """One row of the table."""

    name: str
    operation: Operation
    request: bool  # a Kubernetes API request verb
    action: bool  # a verb of the action grammar


VERBS: tuple[Verb, ...] = (
    Verb("get", Operation.READ, request=True, action=True),
    Verb("list", Operation.READ, request=True, action=True),
    Verb("watch", Operation.READ, request=True, action=False),
    Verb("log", Operation.READ, request=False, action=True),
    Verb("query", Operation.READ, request=False, action=True),
    Verb("create", Operation.CREATE, request=True, action=True),
    Verb("update", Operation.MODIFY, request=True, action=True),
    Verb("patch", Operation.MODIFY, request=True, action=True),
    Verb("replace", Operation.MODIFY, request=False, action=True),
    Verb("apply", Operation.MODIFY, request=False, action=True),
    Verb("delete", Operation.DELETE, request=True, action=True),
    Verb("deletecollection", Operation.DELETE, request=True, action=False),
    Verb("scale", Operation.OPERATE, request=False, action=True),
    Verb("restart", Operation.OPERATE, request=False, action=True),
    Verb("rollback", Operation.OPERATE, request=False, action=True),
    Verb("exec", Operation.EXEC, request=False, action=True),
    Verb("authenticate", Operation.AUTHENTICATE, request=False, action=True),
)


def _request(operations: frozenset[Operation]) -> tuple[str, ...]:
    return tuple(v.name for v in VERBS if v.request and v.operation in operations)


def _action(operations: frozenset[Operation]) -> frozenset[str]:
    return frozenset(v.name for v in VERBS if v.action and v.operation in operations)


# Request verbs (RBAC, the API server's audit, the gateway's record and its refusals).
REQUEST_READ_VERBS: tuple[str, ...] = _request(frozenset({Operation.READ}))
REQUEST_WRITE_VERBS: tuple[str, ...] = _request(WRITES)
REQUEST_BODY_WRITE_VERBS: tuple[str, ...] = _request(BODY_WRITES)  # a patch may create (server-side apply)
REQUEST_DELETE_VERBS: tuple[str, ...] = _request(frozenset({Operation.DELETE}))

# Action verbs (the action grammar and the engine's effects).
ACTION_VERBS: frozenset[str] = frozenset(v.name for v in VERBS if v.action)
ACTION_WRITE_VERBS: frozenset[str] = _action(WRITES)
ACTION_BODY_WRITE_VERBS: frozenset[str] = _action(BODY_WRITES)
ACTION_MODIFY_VERBS: frozenset[str] = _action(frozenset({Operation.MODIFY}))
