"""The table's journal: durable, append-only, hash-chained, typed (docs/journal.md is the contract).

The names below load on first use (PEP 562): ``import controller.journal.chain`` or ``.render`` must
not bring in the SQLite store, msgspec and structlog, which the fast commands (``flushtable config``,
``settle --text``) never need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.journal.chain import GENESIS_HASH, canonical_json, entry_hash
    from controller.journal.store import Journal, JournalEntry, JournalError, PendingEntry

_HOMES = {
    "GENESIS_HASH": "controller.journal.chain",
    "canonical_json": "controller.journal.chain",
    "entry_hash": "controller.journal.chain",
    "Journal": "controller.journal.store",
    "JournalEntry": "controller.journal.store",
    "JournalError": "controller.journal.store",
    "PendingEntry": "controller.journal.store",
}

__all__ = [
    "GENESIS_HASH",
    "Journal",
    "JournalEntry",
    "JournalError",
    "PendingEntry",
    "canonical_json",
    "entry_hash",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
