"""The status of an evidence reader, carried by every observation of the evidence bundle (Reporting §1.1).

Only ``available`` (and this project's synonym ``healthy``) is usable; every other status is treated as
unreachable, so an empty record from a broken reader can never become a vacuous PASS.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SourceStatus(StrEnum):
    """Status of one evidence reader (Reporting §1.1 plus this project's `healthy`/`degraded`)."""

    AVAILABLE = "available"
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNREACHABLE = "unreachable"
    PARTIAL = "partial"
    EMPTY_WINDOW = "empty_window"


USABLE_STATUSES = frozenset({SourceStatus.AVAILABLE, SourceStatus.HEALTHY})


class EvidenceSource(_Model):
    """Where an observation came from and whether the reader worked."""

    type: str = Field(description="Reader kind, e.g. gateway_audit, audit_log_file, kube_api.")
    status: SourceStatus
    detail: str | None = Field(default=None, description="Cause when the reader failed.")

    @property
    def usable(self) -> bool:
        """True when the observation may be used as authoritative evidence."""
        return self.status in USABLE_STATUSES
