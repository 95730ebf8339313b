"""Fixtures for the profile tests (helpers live in profile_support.py)."""

from __future__ import annotations

from profile_support import shipped, upstream

__all__ = ["shipped", "upstream"]
