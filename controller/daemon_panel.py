"""The panel's way onto the daemon's one queue (controller/panel/backend.py ``TableActions``): an
operator's action goes on the queue like every other caller's, and the answer comes once its effect is
committed; the engine's refusal is ActionRefused with the engine's own reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from controller.daemon_controls import LoopWork
from controller.engine import Refused, TableEngine
from controller.engine.actions import OperatorAction
from controller.engine.outputs import Output
from controller.panel.backend import ActionRefused


class PerformsOnTheQueue(Protocol):
    """The one door the panel's actions need: the daemon's ``perform`` (queued, answered once
    committed)."""

    async def perform(self, item: OperatorAction | LoopWork) -> list[Output]: ...


class QueuedTableActions:
    """The panel's TableActions on the daemon's queue."""

    def __init__(self, daemon: PerformsOnTheQueue) -> None:
        self._daemon = daemon

    async def perform(self, action: OperatorAction) -> None:
        outputs = await self._daemon.perform(action)
        refused = [output for output in outputs if isinstance(output, Refused)]
        if refused:
            raise ActionRefused(refused[0].reason)

    async def run(self, work: Callable[[TableEngine, float], list[Output]]) -> list[Output]:
        """A step of the daemon's own on the queue (controller/daemon_controls.py LoopWork)."""
        return await self._daemon.perform(LoopWork(getattr(work, "__name__", "work"), work))
