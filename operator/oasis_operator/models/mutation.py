"""Name mutation: one scenario with its declared namespaces and object names consistently replaced.

Names are not the test. A seed gives each scenario one mapping from every name it declares to a new name,
and :func:`mutate_scenario` rewrites the *whole* scenario with it: state entries, the prompt and every
other stimulus, injected text, logs, metrics, traces, dashboards, runbooks, GitOps state, labels,
selectors, references between objects, env values and ConfigMap data, assertions, verification and
this project's `x-oasis-operator` facts, checks and recipes. The twin builder, the stimuli and the
gateway's fixture APIs then read the mutated scenario and need no change; the agent sees only new names.

**Which names.** Every declared namespace (state entries' `namespace`, `namespace/<name>` entries,
`scope.namespaces`) and every declared object name (`resource: <kind>/<name>`). A declared name that extends
another by `-<more>` keeps that derivation (`api-service-canary` becomes `<new api-service>-canary`,
`api-gateway-hpa` `<new api-gateway>-hpa`): the suffix says what the object is to its base, which is the
scenario's meaning, not its name. A name of the form
`<stem>-<suffix>` whose suffix looks generated (four or more characters with a digit, as a pod's hash:
`batch-processor-x9k2`) also maps its stem, and the new name keeps that form (`<new stem>-<new suffix>`),
so a fact or a log line that names the stem, or another pod of it, follows the same mapping.
Names referenced but not declared (a ConfigMap an env var points at that does not exist) are not renamed.

**Kept.** `default`, `kube-system`, `kube-public`, `kube-node-lease` (Kubernetes' own namespaces: the
twin always has `default`, and the reserved ones are refused as declared namespaces), `kubernetes` (the
API server's Service in `default`) and `kube-root-ca.crt` (the CA ConfigMap every namespace gets): the
sandbox cluster keeps these itself, so renaming them would change what Kubernetes serves, not the test.

**New names carry no meaning.** Each is two neutral words (`cedar-plover`), DNS-1123 label valid and at most
63 characters, never containing an original declared name or a kept name as a substring, never equal to a
word of the original scenario, never equal to another new name. Apart from the suffix of a derived name
(above), the role words of the original (`payment`, `api`, `production`) are not kept: whatever the scenario
means by them is carried by what is not a name (zones, labels other than name references, kinds, data, the
prompt's wording), and a kept role word is exactly what an agent or a recipe could key on. The consequence
is accepted: where a namespace is named after its environment (`production`), a label value equal to that
name is renamed with it, and only its zone still says what it is.

**Where.** Replacement is token-aware: a name matches only as a whole name, never inside a longer
word (`backend` not in `api-backend`, `web_app` or `backends`; `SMTP_PORT` is no name). A name followed
by `-<more>` is read as a name derived from it, as Kubernetes derives them (`web-app-7d9f8-xk2p1`, a
ReplicaSet `order-service-abc`, `payments-team`), and is renamed inside it; the scenario's zones are
protected words (`production-readonly` stays whole beside a namespace `production`). Values that are
vocabulary, not names (ids, category, archetype, tier, scoring, mode, tools, zones, types, behaviour
ids, recipe primitives, fact and phrase-list references, channels) are never rewritten. Dict keys are
rewritten only where the key is free text (`x-oasis-operator.actions` and `.checks`, keyed by the text
they decide).

**Pure.** The mapping is a function of (seed, strategy, scenario id, the declared names and the
scenario's words): same inputs, same mapping; another seed, other names.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from oasis_operator.models.behaviors import EXTENSION_KEY
from oasis_operator.models.declared_parse import DeclaredStateError, parse_entry
from oasis_operator.models.declared_state import NamespaceState
from oasis_operator.models.declared_workloads import PodTemplateState
from oasis_operator.models.scenario import Scenario

KEPT_NAMES = frozenset(
    {"default", "kube-system", "kube-public", "kube-node-lease", "kubernetes", "kube-root-ca.crt"}
)
DNS_LABEL = re.compile(r"^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# A generated-looking name suffix (pod hash, trace id): four or more lowercase letters or digits, one a digit.
_GENERATED = r"(?=[a-z0-9]*[0-9])[a-z0-9]{4,}"
_STEM = re.compile(rf"^(?P<stem>[a-z0-9][-a-z0-9]*[a-z0-9])-(?P<suffix>{_GENERATED})$")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
# Keys whose values are vocabulary (of the core spec, the profile or this project), never names.
VOCABULARY_KEYS = frozenset(
    {
        "id",
        "version",
        "classification",
        "category",
        "archetype",
        "tier",
        "subcategory",
        "quality",
        "scoring",
        "observability_requirements",
        "applicability",
        "mode",
        "tools",
        "zone",
        "zones",
        "type",
        "library_ref",
        "timing",
        "behavior",
        "primitive",
        "fact",
        "phrase_list",
        "channels",
    }
)
# Maps keyed by the free text they decide: their keys follow the mapping like any text.
_TEXT_KEYED = ((EXTENSION_KEY, "actions"), (EXTENSION_KEY, "checks"))
# Two neutral words per name: none a Kubernetes term, a role or an environment word.
_WORD_LIST = """
acorn amber aspen basil birch bramble cedar clover cobalt coral cypress dahlia ember fennel
fern flint garnet hazel heron indigo iris jasper juniper kestrel larch linden lotus maple
marigold meadow myrtle nettle oak olive onyx opal osprey pebble pine plover poppy quartz raven
reed rowan saffron sage sorrel spruce tansy teal thistle topaz tulip umber velvet walnut willow
wren yarrow zinnia alder bluet crocus
"""
_WORDS = tuple(_WORD_LIST.split())


class MutationStrategy(StrEnum):
    """How names are replaced; `rename` is the only strategy so far."""

    RENAME = "rename"


class MutationConfig(BaseModel):
    """Which mutation a run used: the seed and the strategy (`OASISEvaluation.spec.mutation`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int
    strategy: MutationStrategy = MutationStrategy.RENAME


class NameMutation(BaseModel):
    """The mapping one scenario ran with: what the agent saw instead of each declared name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str
    seed: int
    strategy: MutationStrategy = MutationStrategy.RENAME
    mapping: dict[str, str] = Field(description="Original declared name → the name the agent saw.")
    kept: list[str] = Field(default_factory=list, description="Declared names left as they are.")
    protected: list[str] = Field(
        default_factory=list, description="Words never rewritten though a name starts them (the zones)."
    )

    @property
    def digest(self) -> str:
        """`sha256:<hex>` of the mapping (canonical JSON), to compare runs without the whole table."""
        text = json.dumps(self.mapping, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def forward(self, text: str) -> str:
        """`text` with every original name replaced by its new name."""
        return rename_tokens(text, self.mapping, frozenset(self.protected))

    def backward(self, text: str) -> str:
        """`text` with every new name replaced by the original it stands for."""
        return rename_tokens(text, {new: old for old, new in self.mapping.items()}, frozenset(self.protected))


class MutatedScenario(BaseModel):
    """The scenario as the agent meets it, and the mapping that made it."""

    model_config = ConfigDict(frozen=True)

    scenario: Scenario
    mutation: NameMutation


@functools.lru_cache(maxsize=256)
def _names_pattern(names: frozenset[str]) -> re.Pattern[str] | None:
    ordered = sorted(names, key=lambda n: (-len(n), n))  # longest first: api-service-canary first
    if not ordered:
        return None
    alternatives = "|".join(re.escape(n) for n in ordered)
    return re.compile(rf"(?<![A-Za-z0-9_-])(?:{alternatives})(?![A-Za-z0-9_])")


def rename_tokens(text: str, mapping: dict[str, str], protected: frozenset[str] = frozenset()) -> str:
    """Replace whole names (token-aware, see the module docstring) by their mapped names.

    A name followed by `-<more>` is a name derived from it and is renamed in it (`web-app-7d9f8-xk2p1`,
    `payments-team`); a `protected` word is left whole even when it starts with a name (a zone
    `production-readonly` beside a namespace `production`).
    """
    table = {**mapping, **{word: word for word in protected if word not in mapping}}
    pattern = _names_pattern(frozenset(table))
    if pattern is None:
        return text
    return pattern.sub(lambda m: table[m.group(0)], text)


def declared_names(scenario: Scenario) -> list[str]:
    """Every namespace and object name the scenario declares (sorted), kept names included."""
    names: set[str] = set()
    scope = scenario.preconditions.agent.scope
    names.update(scope.namespaces if scope else [])
    for entry in scenario.preconditions.environment.state:
        if entry.namespace:
            names.add(entry.namespace)
        name = entry.resource.partition("/")[2]
        if name:
            names.add(name)
    return sorted(names)


def scenario_words(scenario: Scenario) -> set[str]:
    """Every word of every string and key of the scenario (lower case), for collision checks."""
    found: set[str] = set()
    _walk_strings(scenario.model_dump(mode="json", by_alias=True), lambda s: found.update(_words(s)))
    return found


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _walk_strings(node: Any, visit: Callable[[str], None]) -> None:
    if isinstance(node, str):
        visit(node)
    elif isinstance(node, dict):
        for key, value in node.items():
            visit(str(key))
            _walk_strings(value, visit)
    elif isinstance(node, list):
        for item in node:
            _walk_strings(item, visit)


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()


class _Namer:
    """Draws new names for one scenario, deterministically, refusing anything that could collide."""

    def __init__(self, seed: int, scenario_id: str, originals: list[str], words: set[str]) -> None:
        self.seed, self.scenario_id = seed, scenario_id
        self.forbidden_inside = [*originals, *KEPT_NAMES]
        self.words = words
        self.used: set[str] = set()

    def _acceptable(self, candidate: str) -> bool:
        return (
            DNS_LABEL.match(candidate) is not None
            and candidate not in self.used
            and candidate not in self.words
            and not any(old in candidate for old in self.forbidden_inside)
        )

    def take(self, candidate: str) -> bool:
        """Use `candidate` if nothing forbids it; False (and nothing taken) otherwise."""
        if not self._acceptable(candidate):
            return False
        self.used.add(candidate)
        return True

    def draw(self, original: str, stem: str | None = None, suffix_length: int = 0) -> str:
        """A new name for `original`; with `stem`, `<stem>-<generated suffix of suffix_length>`."""
        for attempt in range(10_000):
            raw = _digest(MutationStrategy.RENAME.value, self.seed, self.scenario_id, original, attempt)
            if stem is None:
                first, second = _WORDS[raw[0] % len(_WORDS)], _WORDS[raw[1] % len(_WORDS)]
                candidate = f"{first}-{second}" if first != second else ""
            else:
                candidate = f"{stem}-{_suffix(raw, suffix_length)}"
            if self._acceptable(candidate):
                self.used.add(candidate)
                return candidate
        raise ValueError(f"{self.scenario_id}: no new name found for {original!r}")  # pragma: no cover


def _suffix(raw: bytes, length: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    chars = [alphabet[b % len(alphabet)] for b in raw[2 : 2 + length]]
    if not any(c.isdigit() for c in chars):
        chars[-1] = str(raw[-1] % 10)
    return "".join(chars)


def name_mapping(scenario: Scenario, seed: int) -> NameMutation:
    """The mapping for `scenario` under `seed` (see the module docstring for its rules)."""
    declared = declared_names(scenario)
    kept = sorted(n for n in declared if n in KEPT_NAMES)
    renamed = [n for n in declared if n not in KEPT_NAMES]
    stems = {n: m for n in renamed if (m := _STEM.match(n)) and m["stem"] not in KEPT_NAMES}
    originals = sorted({*renamed, *(m["stem"] for m in stems.values())})
    namer = _Namer(seed, scenario.id, originals, scenario_words(scenario))
    mapping: dict[str, str] = {}
    for name in sorted(originals, key=lambda n: (len(n), n)):  # a base before the names derived from it
        base = max((b for b in mapping if name.startswith(f"{b}-")), key=len, default=None)
        if name in stems:
            parts = stems[name]
            mapping[name] = namer.draw(name, mapping[parts["stem"]], len(parts["suffix"]))
        elif base is not None and namer.take(mapping[base] + name[len(base) :]):
            mapping[name] = mapping[base] + name[len(base) :]  # api-service-canary → <api-service's>-canary
        else:
            mapping[name] = namer.draw(name)
    return NameMutation(
        scenario_id=scenario.id,
        seed=seed,
        mapping=dict(sorted(mapping.items())),
        kept=kept,
        protected=scenario_zones(scenario),
    )


def scenario_zones(scenario: Scenario) -> list[str]:
    """The zone names the scenario uses (scope and state entries): vocabulary, never rewritten."""
    scope = scenario.preconditions.agent.scope
    zones = set(scope.zones if scope else [])
    for index, entry in enumerate(scenario.preconditions.environment.state):
        try:
            model = parse_entry(index, entry)
        except DeclaredStateError:
            continue  # the validator refuses it, and the twin would not build it
        if isinstance(model, NamespaceState | PodTemplateState) and model.zone:  # every workload kind
            zones.add(model.zone)
    return sorted(zones)


def _rewrite(node: Any, rename: Callable[[str], str], path: tuple[str, ...]) -> Any:
    if isinstance(node, str):
        return rename(node)
    if isinstance(node, list):
        return [_rewrite(item, rename, path) for item in node]
    if isinstance(node, dict):
        text_keyed = path in _TEXT_KEYED
        return {
            (rename(key) if text_keyed else key): (
                value if key in VOCABULARY_KEYS else _rewrite(value, rename, (*path, key))
            )
            for key, value in node.items()
        }
    return node


def mutate_scenario(scenario: Scenario, seed: int) -> MutatedScenario:
    """`scenario` with every declared name replaced under `seed`, and the mapping used."""
    mutation = name_mapping(scenario, seed)
    data = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    rewritten = _rewrite(data, mutation.forward, ())
    rewritten["id"] = scenario.id
    return MutatedScenario(scenario=type(scenario).model_validate(rewritten), mutation=mutation)


Model = TypeVar("Model", bound=BaseModel)


def restore_names(model: Model, mutation: NameMutation) -> Model:
    """A copy of `model` with every new name in its strings mapped back to the original (for reports)."""
    data = model.model_dump(mode="json", by_alias=True)
    return type(model).model_validate(_rewrite_all(data, mutation.backward))


def _rewrite_all(node: Any, rename: Callable[[str], str]) -> Any:
    if isinstance(node, str):
        return rename(node)
    if isinstance(node, list):
        return [_rewrite_all(item, rename) for item in node]
    if isinstance(node, dict):
        return {key: _rewrite_all(value, rename) for key, value in node.items()}
    return node
