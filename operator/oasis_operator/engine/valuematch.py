"""Finding a registered value in agent output without false alarms (issue 13 point 6).

A value is searched in each of its forms: as registered, its base64 encodings (standard and URL-safe,
padded or not: what ``kubectl get secret -o yaml`` shows) and, when the registered value is itself base64
text, its printable decoding of at least 4 characters.

* A **short** value (fewer than :data:`SHORT_VALUE` characters) or a **common word** (:data:`COMMON_WORDS`,
  compared case-insensitively) matches only as a whole token, in every form: the characters on both sides
  must not continue a token (letters, digits, ``-``, ``_``; and ``+``, ``/``, ``=`` for base64 forms).
  So ``admin`` is found in ``password: admin`` but not in ``cluster-admin``.
* A longer value matches as a substring in every form (a secret glued into other text is still out).

Matching is case-sensitive (secrets are). A match is reported with the form that matched and the matched
text masked (:func:`mask`), never the value itself.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass

from oasis_operator.profiles.text import value_forms as profile_value_forms

SHORT_VALUE = 8
# Words people and tools write for other reasons; a value equal to one is matched only as a whole token.
COMMON_WORDS = frozenset(
    {
        "admin",
        "administrator",
        "changeme",
        "default",
        "guest",
        "letmein",
        "master",
        "operator",
        "password",
        "postgres",
        "production",
        "qwerty",
        "root",
        "secret",
        "staging",
        "system",
        "test",
        "testing",
        "user",
        "welcome",
    }
)
_TEXT_WORD_CHARS = "A-Za-z0-9_-"
_BASE64_WORD_CHARS = "A-Za-z0-9_+/=-"


@dataclass(frozen=True)
class ValueMatch:
    """Where one form of a value was found."""

    form: str  # "raw", "base64", "decoded"
    masked: str
    position: int


def mask(text: str) -> str:
    """The matched text with every character hidden; only its length shows."""
    return "*" * len(text)


def _forms(value: str) -> list[tuple[str, str]]:
    raw = value.encode()
    encodings = {
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }
    decoded = profile_value_forms(value) - {value} - encodings
    forms = [("raw", value)]
    forms += [("base64", form) for form in sorted(encodings) if form and form != value]
    forms += [("decoded", form) for form in sorted(decoded) if form]
    return forms


def is_token_value(value: str) -> bool:
    """True when the value is matched only as a whole token (short, or a common word)."""
    return len(value) < SHORT_VALUE or value.lower() in COMMON_WORDS


class ValueMatcher:
    """Finds one registered value in texts."""

    def __init__(self, value: str) -> None:
        self.value = value
        self.token = is_token_value(value)
        self._patterns: list[tuple[str, re.Pattern[str]]] = []
        self._forms = _forms(value)
        for kind, form in self._forms:
            escaped = re.escape(form)
            if self.token or (kind == "decoded" and is_token_value(form)):
                chars = _TEXT_WORD_CHARS if kind != "base64" else _BASE64_WORD_CHARS
                escaped = f"(?<![{chars}]){escaped}(?![{chars}])"
            self._patterns.append((kind, re.compile(escaped)))

    def find(self, text: str) -> ValueMatch | None:
        """The first form found in the text (forms in a fixed order), or None."""
        for kind, pattern in self._patterns:
            found = pattern.search(text)
            if found is not None:
                return ValueMatch(kind, mask(found.group(0)), found.start())
        return None

    def forms(self) -> list[str]:
        """Every form searched, as its pattern, in a fixed order."""
        return [pattern.pattern for _, pattern in self._patterns]

    def literal_forms(self) -> list[str]:
        """Every form searched, as text, in the order of :meth:`forms`."""
        return [form for _, form in self._forms]
