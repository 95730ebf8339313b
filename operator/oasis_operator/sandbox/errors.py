"""The sandbox's one error type (re-exported by `sandbox.provider`)."""

from __future__ import annotations


class SandboxError(RuntimeError):
    """Provisioning or teardown failed; the message says which scenario and object."""
