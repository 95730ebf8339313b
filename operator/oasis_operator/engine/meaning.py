"""Facts by meaning: when a phrase or fact term occurs in the agent's words, compared as what it says.

The text primitives (`mentions_any`, `mentions_all`) and the grounding rule ask whether a term occurs in
normalised (lower-cased, whitespace-collapsed) text. A term occurs when its text does, and also when
the text says the same thing in another spelling:

* **Quantities compare as quantities.** A term with a Kubernetes quantity suffix (``2Gi``, ``500m``,
  ``1.5G``; also ``GiB``/``MiB`` as people write them) matches any quantity in the text with the same
  value, as the Kubernetes client parses it (`kubernetes.utils.quantity.parse_quantity`): ``2Gi`` =
  ``2.00Gi`` = ``2048Mi`` = ``2 GiB``; a plain number is a quantity without suffix (``500m`` =
  ``0.5``). Text is lower-cased before matching, so ``m`` is read as milli (``500m`` = ``0.5``), the
  form Kubernetes uses for CPU; suffixes are otherwise case-blind.
* **Percentages.** A term ``80%`` matches ``80 %``, ``80.0%``, ``80 percent`` and a decimal fraction
  written with a point (``0.8``, ``0.80``); a fraction term (``0.8``) matches those percentages too.
* **Plain numbers** match by value: thousands separators and trailing zeros do not matter
  (``1,500`` = ``1500`` = ``1500.0``). A number inside a longer number or a version (``15000``,
  ``v4.2.0``) is not that number; written as is it still counts inside a word (``503`` in ``503s``).
* **Names with or without their kind.** A term written with a kind (``deployment/api``, ``deploy api``,
  ``api deployment``) matches text naming the object with or without it, so ``api`` alone counts; a
  bare name already occurs inside every kind-qualified spelling.

Matching stays deterministic: it depends only on the term and the text.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from kubernetes.utils.quantity import parse_quantity

from oasis_operator.models.kinds import by_kind, by_type

# Suffixes as written in lower-cased text → the Kubernetes spelling the client parses.
_SUFFIXES = {
    "kib": "Ki",
    "mib": "Mi",
    "gib": "Gi",
    "tib": "Ti",
    "pib": "Pi",
    "ki": "Ki",
    "mi": "Mi",
    "gi": "Gi",
    "ti": "Ti",
    "pi": "Pi",
    "k": "k",
    "m": "m",
    "g": "G",
    "t": "T",
    "p": "P",
}
_PERCENT = ("%", "percent")
_UNIT = "|".join(sorted([*_SUFFIXES, *_PERCENT], key=len, reverse=True))
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# A whole term that is a number, a quantity or a percentage.
_TERM = re.compile(rf"^(?P<num>{_NUM})\s?(?P<unit>{_UNIT})?$")
# Numbers in running text: not part of a word, a version or a longer number.
_IN_TEXT = re.compile(rf"(?<![\w.,-])(?P<num>{_NUM})(?:\s?(?P<unit>{_UNIT}))?(?![\w%]|[.,]\d)")
# Short names kubectl accepts besides the kinds, types and plurals of the kinds table.
_SHORT_KINDS = ("deploy", "cm", "svc", "ns", "po", "sts", "ds", "rs", "sa", "pv", "netpol", "ing", "cj", "no")


def _kind_words() -> frozenset[str]:
    words = set(_SHORT_KINDS)
    for kind, row in by_kind().items():
        words.add(kind.lower())
        words.update(row.resources)
    for type_, row in by_type().items():
        words.add(type_)
        words.update(row.resources)
    return frozenset(w for w in words if w)


KIND_WORDS = _kind_words()


def _decimal(number: str) -> Decimal:
    return Decimal(number.replace(",", ""))


def _value(number: str, unit: str | None) -> tuple[str, Decimal] | None:
    """(dimension, value) of one number: 'quantity', 'percent' or 'number'."""
    try:
        if unit in _PERCENT:
            return "percent", _decimal(number) / 100
        if unit:
            return "quantity", Decimal(parse_quantity(number.replace(",", "") + _SUFFIXES[unit]))  # type: ignore[no-untyped-call]
        return "number", _decimal(number)
    except (InvalidOperation, ValueError):
        return None


def term_value(term: str) -> tuple[str, Decimal] | None:
    """The value of a term that is a number, quantity or percentage (normalised text), else None."""
    found = _TERM.match(term.strip())
    return _value(found["num"], found["unit"]) if found else None


@lru_cache(maxsize=256)
def text_values(text: str) -> tuple[tuple[str, Decimal, bool], ...]:
    """Every number in a normalised text: (dimension, value, written with a decimal point)."""
    values = []
    for found in _IN_TEXT.finditer(text):
        value = _value(found["num"], found["unit"])
        if value is not None:
            values.append((*value, "." in found["num"]))
    return tuple(values)


def _same(wanted: tuple[str, Decimal], found: tuple[str, Decimal, bool]) -> bool:
    want_dim, want = wanted
    dim, value, pointed = found
    if value != want:
        return False
    dims = {want_dim, dim}
    if len(dims) == 1 or dims == {"quantity", "number"}:  # 500m = 0.5: a plain number is a quantity
        return True
    # A percentage and a fraction written with a point say the same (80% = 0.8).
    return dims == {"percent", "number"} and 0 < value <= 1 and (pointed if dim == "number" else True)


def _name_of(term: str) -> str | None:
    """The name in a kind-qualified term (`deployment/api`, `deploy api`, `api deployment`), else None."""
    if "/" in term:
        kind, _, name = term.partition("/")
        return name if kind in KIND_WORDS and name and " " not in name else None
    words = term.split()
    if len(words) == 2:
        if words[0] in KIND_WORDS and words[1] not in KIND_WORDS:
            return words[1]
        if words[1] in KIND_WORDS and words[0] not in KIND_WORDS:
            return words[0]
    return None


def option_in(option: str, text: str) -> bool:
    """One spelling of a term occurs in normalised text, literally or by meaning (see module doc)."""
    term = " ".join(option.lower().split())
    if not term:
        return False
    wanted = term_value(term)
    if wanted is None and term in text:
        return True
    if wanted is not None:
        if re.search(rf"(?<![\d.,]){re.escape(term)}(?!\d|[.,]\d)", text):  # as written (503 in 503s)
            return True
        if wanted[0] == "number" and "." not in term:  # a whole number is never a fraction
            return any(f[0] != "percent" and f[1] == wanted[1] for f in text_values(text))
        return any(_same(wanted, found) for found in text_values(text))
    name = _name_of(term)
    return name is not None and name in text


def term_in(term: object, text: str) -> bool:
    """A term (one spelling, or a list of alternatives) occurs in normalised text."""
    options = term if isinstance(term, list) else [term]
    return any(option_in(str(option), text) for option in options if str(option).strip())


def matching_options(term: object, text: str) -> list[str]:
    """The spellings of a term that occur in normalised text (normalised)."""
    options = term if isinstance(term, list) else [term]
    return [" ".join(str(o).lower().split()) for o in options if str(o).strip() and option_in(str(o), text)]
