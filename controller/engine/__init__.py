"""The table engine: ``TableEngine.handle(item, now_s)`` fed the devices' events and the operators'
actions (``actions``), composed of parts (``flow``, ``deal``, ``bets``, ``decisions``, ``bank``,
``faults``, ``settings``) over the round machines (``machine``); what it hands the shell
(``outputs``) and the state it starts from (``state``). docs/engine.md."""

from controller.engine.engine import TableEngine
from controller.engine.outputs import Alert, JournalRecord, Output, Refused
from controller.engine.state import LatchedFault, RecoveredState, TableConfig

__all__ = [
    "Alert",
    "JournalRecord",
    "LatchedFault",
    "Output",
    "RecoveredState",
    "Refused",
    "TableConfig",
    "TableEngine",
]
