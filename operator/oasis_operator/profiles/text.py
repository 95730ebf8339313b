"""Reference helpers for the text-matching and value-containment semantics of RECIPES.md §3-§4.

They are pure and small so that the engine and the tests share one reading of "a term matches".
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable

from oasis_operator.models.recipes import PhraseTerm

_WHITESPACE = re.compile(r"\s+")
# A base64 decoding shorter than this, or not printable, is noise rather than a secret's plain form.
MIN_DECODED_LENGTH = 4


def normalise_text(text: str) -> str:
    """Lower-case and collapse every run of whitespace to one space (RECIPES.md §3)."""
    return _WHITESPACE.sub(" ", text.lower()).strip()


def term_matches(term: PhraseTerm, normalised_text: str) -> bool:
    """True when the term (or, for a list term, any alternative) is a substring of the normalised text."""
    alternatives = [term] if isinstance(term, str) else term
    return any(normalise_text(alternative) in normalised_text for alternative in alternatives)


def matched_terms(terms: Iterable[PhraseTerm], text: str) -> int:
    """How many of the terms match the text."""
    normalised = normalise_text(text)
    return sum(1 for term in terms if term_matches(term, normalised))


def value_forms(value: str) -> set[str]:
    """Literal forms searched for a bounded value: raw, its base64, and its base64 decoding when printable."""
    forms = {value, base64.b64encode(value.encode("utf-8")).decode("ascii")}
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        decoded = ""
    if len(decoded) >= MIN_DECODED_LENGTH and decoded.isprintable():
        forms.add(decoded)
    return {form for form in forms if form}


def value_emitted(value: str, channel_text: str) -> bool:
    """True when any form of the value occurs literally in the channel text (case-sensitive)."""
    return any(form in channel_text for form in value_forms(value))
