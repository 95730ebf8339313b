"""Execution step 2: who the agent is and how it is configured, asked once per run and recorded."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pydantic import ValidationError

from oasis_operator.agents.adapters import AgentAdapter, AgentUnreachableError
from oasis_operator.agents.protocol import IdentityDocument
from oasis_operator.evaluation.agent_config import ConfigurationError, validate_configuration
from oasis_operator.evaluation.plan import RunStopped
from oasis_operator.evaluation.store import DocumentStore
from oasis_operator.models.agent_identity import AgentIdentity
from oasis_operator.models.crd import AgentStatus, ConditionStatus, EvaluationRef
from oasis_operator.models.errors import describe_validation_error
from oasis_operator.models.profile import Profile
from oasis_operator.status.writer import StatusWriter

IDENTITY_TIMEOUT = 60.0
log = logging.getLogger(__name__)


async def identify(
    store: DocumentStore,
    profile: Profile,
    owner: EvaluationRef,
    fallback_name: str | None,
    adapter: AgentAdapter,
    writer: StatusWriter,
    notify: Callable[[str, str, str], None],
) -> IdentityDocument:
    """The agent's identity and effective configuration; a resumed run reuses what was recorded.

    An agent that cannot be reached at all stops the run before any scenario (`AgentUnreachable`): there
    would be nothing to judge. One that answers, but not with a usable identity document, is not fatal:
    the run goes on under the spec's name with the profile's defaults and a `Degraded` condition whose
    message names each wrong field (a declared field of the wrong type is such a protocol error; keys
    the project does not know are kept, never refused). A configuration the profile's schema does not
    allow stops the run.
    """
    namespace, uid = owner.namespace, owner.uid
    recorded = await asyncio.to_thread(store.read, namespace, uid, "agent")
    if "identity.json" in recorded:
        return IdentityDocument.model_validate_json(recorded["identity.json"])
    degraded = None
    try:
        doc = await asyncio.wait_for(adapter.identity(), IDENTITY_TIMEOUT)
    except (AgentUnreachableError, TimeoutError) as exc:
        raise RunStopped(
            "AgentUnreachable",
            f"spec.agent: the agent did not answer identity-and-configuration ({exc or 'timed out'}); "
            "no scenario was run. Start the agent or fix its address; an edit of the spec judges the "
            "evaluation again",
        ) from exc
    except ValidationError as exc:  # the agent answered, but a field of its document is wrong
        problems = describe_validation_error(exc, prefix="identity-and-configuration")
        degraded = f"the agent's identity document is not valid (protocol error): {problems}"
        doc = IdentityDocument(identity=AgentIdentity(name=fallback_name or "unknown"))
    except ValueError as exc:  # not UTF-8, not JSON
        degraded = f"the agent's identity document is not valid (protocol error): {exc}"
        doc = IdentityDocument(identity=AgentIdentity(name=fallback_name or "unknown"))
    except Exception as exc:  # noqa: BLE001 - any failure to reach the agent is recorded, not fatal
        degraded = f"the agent did not answer identity-and-configuration: {type(exc).__name__}: {exc}"
        doc = IdentityDocument(identity=AgentIdentity(name=fallback_name or "unknown"))
    try:
        effective = validate_configuration(profile, dict(doc.configuration))
    except ConfigurationError as exc:
        raise RunStopped("InvalidAgentConfiguration", f"the agent reported {exc}") from exc
    if degraded:
        log.warning("agent identity unavailable: %s", degraded)  # the agent's fault: no traceback
        message = degraded + "; the profile's defaults are used"
        writer.set_condition("Degraded", ConditionStatus.TRUE, "AgentIdentityUnavailable", message)
        notify("Warning", "AgentIdentityUnavailable", degraded)
    doc = IdentityDocument(identity=doc.identity, configuration=effective)
    await asyncio.to_thread(store.write, owner, "agent", {"identity.json": doc.model_dump_json()})
    writer.set_agent(AgentStatus.of(doc.identity, effective))
    await writer.write()
    return doc
