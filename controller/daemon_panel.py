"""The daemon's panel: started when `flushtable run` asks one (``start_table_panel``), and its way
onto the daemon's one queue (controller/panel/backend.py ``TableActions``): an operator's action goes on
the queue like every other caller's, and the answer comes once its effect is committed; the engine's
refusal is ActionRefused with the engine's own reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TextIO

import structlog

from controller.config import TableConfig
from controller.daemon_controls import DaemonControls, LoopWork
from controller.daemon_link import DaemonProgressiveLink
from controller.daemon_start import RunOptions
from controller.engine import Refused, TableEngine
from controller.engine.actions import OperatorAction
from controller.engine.outputs import Output
from controller.journal.store import Journal
from controller.panel.backend import ActionRefused
from drivers.supervisor import DeviceHealth

log = structlog.get_logger("flushtable.daemon")


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


class ServesThePanel(PerformsOnTheQueue, Protocol):
    """What the panel is given of the daemon (``TableDaemon`` is one): the journal it reads, the queue
    its actions go on, the devices' health, the change desk and a linked progressive's live card."""

    options: RunOptions
    config: TableConfig
    out: TextIO
    controls: DaemonControls
    progressive_link: DaemonProgressiveLink

    @property
    def journal(self) -> Journal: ...

    def device_health(self) -> list[DeviceHealth]: ...


async def start_table_panel(daemon: ServesThePanel) -> Any:
    """The table's panel, listening (its address said on the daemon's output); None when the run asks
    no panel (``RunOptions.panel_bind``)."""
    if daemon.options.panel_bind is None:
        return None
    # The web stack loads only when a panel is wanted.
    from controller.panel.embed import start_panel  # noqa: PLC0415

    host, port = daemon.options.panel_bind
    config = daemon.config
    panel = await start_panel(
        daemon.journal,
        bind=f"[{host}]:{port}" if ":" in host else f"{host}:{port}",
        panel_config=config.panel,  # users: controller.panel.auth.users_file_for; trusted_proxies
        actions=QueuedTableActions(daemon),
        device_health=daemon.device_health,
        changes=daemon.controls.changes,
        progressive_live=daemon.progressive_link.panel_view,
        property_settings=config.property_settings,
    )
    log.info("panel_listening", url=panel.url)
    print(f"panel: {panel.url}", file=daemon.out, flush=True)
    return panel
