"""Registered values never leave the engine: every form of each one is masked in a scenario's result.

A run's *registered values* are the bundle's containment values (resolved at setup) and every value a
``verification.value_containment`` entry of its scenario names (falling back to the declared precondition
state, as the containment check does). They are what the scenario says must not be emitted, so no report
may show them either: a result is the only way evidence reaches the verdict, the report and every format
rendered from them (YAML, JSON, HTML, JUnit, SARIF, Markdown), so masking the result once, where the
values are known, masks every channel of every format: tool-call arguments and results, the reasoning
and final answer, check findings and their evidence, the timeline's labels, an agent failure's cause.

A value is found with the rules of :mod:`oasis_operator.engine.valuematch` (as registered, its base64
encodings, its decoding when it is base64 text; a short value or a common word only as a whole token) and
replaced by :func:`marker` (``[masked: <value_ref>]``): the reader learns which value was there, never the
value nor its length. Free text is masked before it is shortened to an excerpt, and a shortened excerpt
that ends in a leading part of a value (``…``, ``...``) has that part masked too, so a cut cannot show
half a secret. Structured tool arguments are masked leaf by leaf before they become JSON text, so JSON
escaping cannot hide a value from the mask.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from oasis_operator.engine.containment import registered_value
from oasis_operator.engine.valuematch import ValueMatcher
from oasis_operator.models.evidence import EvidenceBundle
from oasis_operator.models.results import ScenarioResult

MARKER = "[masked: {ref}]"
# The shortest leading part of a value masked where an excerpt was cut (shorter is noise, not a secret).
MIN_CUT_PREFIX = 4
_CUT = re.compile(r"(?P<before>.*?)(?P<cut>…|\.\.\.)", re.DOTALL)


def marker(value_ref: str) -> str:
    """What stands in the text where a registered value was."""
    return MARKER.format(ref=value_ref)


def registered_values(bundle: EvidenceBundle) -> dict[str, str]:
    """value_ref → value for every value the run registered or its scenario declares contained."""
    out: dict[str, str] = {}
    if bundle.containment is not None:
        out.update({v.value_ref: v.value for v in bundle.containment.values if v.value})
    for entry in bundle.scenario.verification.value_containment:
        if entry.value_ref not in out:
            value = registered_value(bundle, bundle.scenario, entry.value_ref)
            if value:
                out[entry.value_ref] = value
    return out


class Redactor:
    """Masks every form of each registered value in texts and in JSON-shaped data."""

    def __init__(self, values: Mapping[str, str]) -> None:
        alternatives: list[tuple[int, str, str]] = []  # (length, pattern, ref)
        self._forms: list[tuple[str, str]] = []  # (form, ref), for the leading parts before a cut
        for ref, value in sorted(values.items()):
            if not value:
                continue
            matcher = ValueMatcher(value)
            for pattern, form in zip(matcher.forms(), matcher.literal_forms(), strict=True):
                alternatives.append((len(form), pattern, ref))
                self._forms.append((form, ref))
        self._refs: list[str] = []
        groups = []
        for _, pattern, ref in sorted(alternatives, key=lambda a: -a[0]):  # the longest form wins
            groups.append(f"(?P<v{len(self._refs)}>{pattern})")
            self._refs.append(ref)
        self._pattern = re.compile("|".join(groups)) if groups else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        """The text with every form of every value, and a value's leading part before a cut, masked."""
        if self._pattern is None:
            return text
        refs = self._refs
        text = self._pattern.sub(lambda m: marker(refs[int(str(m.lastgroup)[1:])]), text)
        return _CUT.sub(self._cut_part, text)

    def _cut_part(self, cut: re.Match[str]) -> str:
        """The text before a cut (``…``/``...``) and the cut, with a value's leading part that ends the
        text before the cut masked."""
        before, sign = cut.group("before"), cut.group("cut")
        for form, ref in self._forms:
            for size in range(min(len(form) - 1, len(before)), MIN_CUT_PREFIX - 1, -1):
                if before.endswith(form[:size]):
                    return before[:-size] + marker(ref) + sign
        return before + sign

    def data(self, value: Any) -> Any:
        """JSON-shaped data with every string (keys too) masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value

    def result(self, result: ScenarioResult) -> ScenarioResult:
        """The result with every string in it masked (itself when nothing needed masking)."""
        if self._pattern is None:
            return result
        dumped = result.model_dump(mode="json")
        masked = self.data(dumped)
        return result if masked == dumped else ScenarioResult.model_validate(masked)
