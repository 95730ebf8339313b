"""Structured logs: every line says which evaluation, scenario and sandbox environment it concerns.

The ids live in a context variable, set where they become known (`log_context`): the evaluation service
binds the evaluation, and the scenario around each scenario's run; an environment session its environment
id. The evaluation controller's teardown binds the evaluation too. asyncio
tasks and `asyncio.to_thread` copy the context, so the work they start logs with the same ids.
`ContextFilter`, installed on the process's log handlers (`install`), copies the ids onto each record as
attributes: kopf's JSON format (`oasis operator --log-format json`) then writes them as fields of the
line's one JSON object, and the text formats append them as ``key=value`` pairs.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Mapping
from types import MappingProxyType

# The keys a log line may carry, in the order the text formats print them.
KEYS = ("evaluation", "scenario", "environment")

_IDS: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "oasis_log_ids", default=MappingProxyType({})
)


@contextlib.contextmanager
def log_context(**ids: str | None) -> Iterator[None]:
    """Within the block (and the tasks and threads it starts), log lines carry these ids too."""
    unknown = set(ids) - set(KEYS)
    if unknown:
        raise ValueError(f"log_context: unknown keys {sorted(unknown)}; use {', '.join(KEYS)}")
    merged = {**_IDS.get(), **{k: v for k, v in ids.items() if v}}
    token = _IDS.set(merged)
    try:
        yield
    finally:
        _IDS.reset(token)


def current_ids() -> Mapping[str, str]:
    """The ids bound here (empty outside any `log_context`)."""
    return dict(_IDS.get())


class ContextFilter(logging.Filter):
    """Adds the bound ids to each record; never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        ids = _IDS.get()
        for key in KEYS:
            if key in ids and not hasattr(record, key):
                setattr(record, key, ids[key])
        return True


class TextContextFormatter(logging.Formatter):
    """Wraps a text formatter: the line, then `` evaluation=… scenario=… environment=…`` when bound."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        pairs = [f"{k}={getattr(record, k)}" for k in KEYS if hasattr(record, k)]
        return f"{line} {' '.join(pairs)}" if pairs else line


def install(json_lines: bool, logger: logging.Logger | None = None) -> None:
    """Put the ids on every line the handlers of `logger` (default: the root logger) write.

    With `json_lines` the handlers' formatter is a JSON one (kopf's) and writes the ids as fields; else
    each text formatter is wrapped so that the ids follow the message. Idempotent.
    """
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())
        formatter = handler.formatter
        if not json_lines and not isinstance(formatter, TextContextFormatter):
            handler.setFormatter(TextContextFormatter(formatter or logging.Formatter()))
