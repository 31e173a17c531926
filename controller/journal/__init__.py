"""The table's journal: durable, append-only, hash-chained, typed (docs/journal.md is the contract)."""

from controller.journal.chain import GENESIS_HASH, canonical_json, entry_hash
from controller.journal.store import Journal, JournalEntry, JournalError, PendingEntry

__all__ = [
    "GENESIS_HASH",
    "Journal",
    "JournalEntry",
    "JournalError",
    "PendingEntry",
    "canonical_json",
    "entry_hash",
]
