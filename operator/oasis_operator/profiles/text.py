"""The literal forms of a bounded value (RECIPES.md §4): what the engine's value matcher
(`engine/valuematch.py`) searches agent output for, besides the value's other encodings.
"""

from __future__ import annotations

import base64
import binascii

# A base64 decoding shorter than this, or not printable, is noise rather than a secret's plain form.
MIN_DECODED_LENGTH = 4


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
