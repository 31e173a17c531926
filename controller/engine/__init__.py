"""The table engine: round machines (``machine``), the synchronous table core (``engine``), the
outputs it hands the shell (``outputs``) and the state it starts from (``state``). docs/engine.md."""

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
