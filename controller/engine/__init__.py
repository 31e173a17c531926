"""The table engine: ``TableEngine.handle(item, now_s)`` fed the devices' events and the operators'
actions (``actions``), composed of parts (``flow``, ``deal``, ``bets``, ``decisions``, ``bank``,
``faults``, ``settings``) over the round machines (``machine``); what it hands the shell
(``outputs``) and the state it starts from (``state``). docs/engine.md.

The names below load on first use (PEP 562): a reader of the journal that needs only the machine's
state names (``controller.engine.machine``) does not load the whole engine and its libraries with it
(issue 28: `flushtable recall` starts in about a bare interpreter's time)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from controller.engine.engine import TableEngine, TableView
    from controller.engine.outputs import Alert, JournalRecord, Output, Refused
    from controller.engine.state import LatchedFault, RecoveredState, TableConfig

_MODULE_OF: dict[str, str] = {
    "TableEngine": "controller.engine.engine",
    "TableView": "controller.engine.engine",
    "Alert": "controller.engine.outputs",
    "JournalRecord": "controller.engine.outputs",
    "Output": "controller.engine.outputs",
    "Refused": "controller.engine.outputs",
    "LatchedFault": "controller.engine.state",
    "RecoveredState": "controller.engine.state",
    "TableConfig": "controller.engine.state",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Alert",
    "JournalRecord",
    "LatchedFault",
    "Output",
    "RecoveredState",
    "Refused",
    "TableConfig",
    "TableEngine",
    "TableView",
]
