"""The bound on what one scenario stores (pure): evidence beyond it is trimmed, with a note saying so.

An agent controls the size of much of a scenario's evidence (its answer, the bodies of its requests, how
many requests it makes), so the stored evidence bundle is bounded at `MAX_EVIDENCE_BYTES` of JSON. A
bundle over the bound is stored with long strings cut (each cut ends in a `…[trimmed N characters]`
marker) and, if that is not enough, long lists and mappings shortened (the first entries kept); the row's
message and a `trimmed.txt` file beside the bundle say what was done. Nesting so deep that even that does
not fit (an agent can nest its answer) leaves the head of the JSON text, wrapped as
`{"truncated": {"bytes", "kept"}, "text"}` like an over-long recorded body, so the bound always holds.
The scenario's result is always computed from the whole evidence before anything is trimmed; a replay of
a trimmed bundle may therefore differ, which the note states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from oasis_operator.models.results import ScenarioResult

MAX_EVIDENCE_BYTES = 4 * 1024 * 1024
_MIN_STRING = 256
_MIN_LIST = 16


@dataclass(frozen=True)
class Bounded:
    text: str
    note: str | None  # None when nothing was trimmed


def _cut(value: Any, strings: int, lists: int | None) -> tuple[Any, int]:
    """`value` with strings longer than `strings` and lists longer than `lists` cut; how many cuts."""
    if isinstance(value, str):
        if len(value) <= strings:
            return value, 0
        return f"{value[:strings]}…[trimmed {len(value) - strings} characters]", 1
    if isinstance(value, list):
        cuts = 0
        items = value
        if lists is not None and len(items) > lists:
            items, cuts = items[:lists], 1
        out = []
        for item in items:
            cut, n = _cut(item, strings, lists)
            out.append(cut)
            cuts += n
        return out, cuts
    if isinstance(value, dict):
        cuts = 0
        pairs = list(value.items())
        if lists is not None and len(pairs) > lists:
            pairs, cuts = pairs[:lists], 1
        result = {}
        for key, item in pairs:
            result[key], n = _cut(item, strings, lists)
            cuts += n
        return result, cuts
    return value, 0


def bounded_json(document: Any, limit: int = MAX_EVIDENCE_BYTES) -> Bounded:
    """The document as JSON of at most `limit` bytes (cut as the module says), and a note if it was cut."""
    text = json.dumps(document, ensure_ascii=False)
    size = len(text.encode())
    if size <= limit:
        return Bounded(text, None)
    strings, lists = max(_MIN_STRING, limit // 8), None
    while True:
        cut, cuts = _cut(document, strings, lists)
        text = json.dumps(cut, ensure_ascii=False)
        if len(text.encode()) <= limit or (strings <= _MIN_STRING and lists == _MIN_LIST):
            break
        if strings > _MIN_STRING:
            strings = max(_MIN_STRING, strings // 2)
        else:
            lists = max(_MIN_LIST, (lists or 4096) // 2)
    note = (
        f"evidence trimmed: the bundle was {size} bytes, over the {limit}-byte bound; {cuts} strings, "
        f"lists or mappings were cut (strings to {strings} characters"
        + (f", lists and mappings to {lists} entries" if lists is not None else "")
        + "). The result was computed from the whole evidence before trimming."
    )
    if len(text.encode()) > limit:  # nesting so deep that even the smallest cuts do not fit: the head
        head = _head(text, limit - _TRUNCATED_OVERHEAD)
        wrapped = {"truncated": {"bytes": size, "kept": len(head.encode())}, "text": head}
        text = json.dumps(wrapped, ensure_ascii=False)
        note += (
            f" Even so it was over the bound: the bundle is stored as the first {len(head.encode())} bytes "
            'of its JSON text, as {"truncated": {"bytes", "kept"}, "text"}; it cannot be replayed.'
        )
    return Bounded(text, note)


_TRUNCATED_OVERHEAD = 4096  # the wrapper and the escaping of the head's text, generously


def _head(text: str, budget: int) -> str:
    """The longest start of `text` whose JSON string form fits in `budget` bytes."""
    # A byte escapes to at most six (`\u001f`), so a sixth of the budget always fits.
    return text.encode()[: max(budget // 6, 0)].decode(errors="ignore")


def scenario_files(result: ScenarioResult, bundle_json: str | None, trimmed: str | None) -> dict[str, str]:
    """A judged scenario's (or run's) document set: the result, the bundle and any trimming note."""
    files = {"result.json": result.model_dump_json()}
    if bundle_json is not None:
        files["bundle.json"] = bundle_json
    if trimmed is not None:
        files["trimmed.txt"] = trimmed
    return files
