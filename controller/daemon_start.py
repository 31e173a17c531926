"""The table daemon's start, apart from its loop: what an operator sets for `flushtable run` beyond the
configuration (``RunOptions``), the table clock, the run's summary, the engine's view of the
configuration, and the records the daemon journals of its own at a start (the verified release, the
table opened or still closed). controller/daemon.py runs them in its start-up order.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from controller.config import TableConfig
from controller.engine import JournalRecord, TableEngine
from controller.engine import TableConfig as EngineConfig
from controller.integrity_watch import DEFAULT_EVERY_ROUNDS
from controller.journal import entries
from controller.software import VerifiedRelease

log = structlog.get_logger("flushtable.daemon")

LATENCIES_KEPT = 100_000


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What an operator sets for `flushtable run` beyond the configuration (its command line)."""

    journal_path: Path | None = None  # overrides the configuration's
    rounds: int | None = None  # play this many rounds (closed: settled, dead or voided), then exit 0
    panel_bind: tuple[str, int] | None = None  # None: no panel
    print_rounds: bool = True  # print each closed round readably on standard output
    # The integrity watch: check the journal's last rounds after every N closed rounds; 0: never.
    integrity_every_rounds: int = DEFAULT_EVERY_ROUNDS
    # `flushtable run --new-journal`: start a new journal where none with content exists (controller/
    # journal/proof.py); without it a missing or empty journal is refused where its anchor names entries.
    new_journal: bool = False
    # The signed release the start verified (controller/software/), journaled before the table opens;
    # None: no [software] configured and no development release (nothing verified, nothing journaled).
    software: VerifiedRelease | None = None
    # Seal the open segment between rounds while the table runs when it is due (docs/journal.md
    # "Segments and seals"); False: only at a start (a test of the start's seal alone).
    seal_while_running: bool = True


@dataclass(frozen=True, slots=True)
class TableClock:
    """The table clock the engine is fed: the wall clock, or (``scale`` > 1, simulations only) one
    running ``scale`` times faster, so decision timeouts and the like pass in a fraction of the time.
    Device links keep their own protocol clock."""

    scale: float = 1.0
    origin_wall_s: float = field(default_factory=time.time)
    origin_mono_s: float = field(default_factory=time.monotonic)

    def now_s(self) -> float:
        return self.origin_wall_s + (time.monotonic() - self.origin_mono_s) * self.scale


@dataclass(slots=True)
class RunSummary:
    rounds_settled: int = 0
    rounds_dead: int = 0
    rounds_voided: int = 0
    recovered_voided: list[str] = field(default_factory=list)
    # Device event -> its records committed, the last LATENCIES_KEPT (a table runs for weeks).
    commit_latencies_s: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCIES_KEPT))

    @property
    def rounds_closed(self) -> int:
        """Every round this run closed: a round closes settled, dead or voided, counted once."""
        return self.rounds_settled + self.rounds_dead + self.rounds_voided


def engine_config_for(config: TableConfig, *, time_scale: float = 1.0) -> EngineConfig:
    """The engine's view of the table's configuration."""

    def device_name(kind: str, default: str) -> str:
        devices = config.devices_of_kind(kind)
        return devices[0].name if devices else default

    base = config.settle_base()
    rake = config.rake_json() if config.banking.mode == "designated-player" else None
    return EngineConfig(
        table_id=config.table_id,
        game=config.game,
        banking_mode=config.banking.mode,
        seats=tuple(range(1, config.seats + 1)),
        min_ante_cents=config.limits.min_ante_cents,
        max_ante_cents=config.limits.max_ante_cents,
        paytables=dict(base.get("paytables", {}))
        if config.banking.mode == "house"
        else config.paytables_json(),
        rake=rake,
        bonus_cap_cents=config.limits.aggregate_bonus_cap_cents,
        max_bonus_cents=dict(config.limits.max_bonus_cents),
        min_bank_cents=config.min_bank_cents or 1,
        house_may_bank=config.banking.house_banks_when_nobody_accepts,
        decision_timeout_s=config.timeouts.decision_s,
        dp_offer_timeout_s=config.timeouts.dp_offer_s,
        # The shoe's silence is device time, not table time: on an accelerated clock an unscaled deal
        # timeout would pass in milliseconds and kill healthy deals.
        deal_timeout_s=config.timeouts.deal_s * time_scale,
        config_digest=config.digest,
        shuffler_device=device_name("shuffler", "shuffler"),
        sensors_device=device_name("bet_sensors", "sensors"),
        display_device=device_name("dealer_display", "display"),
        progressive=config.progressive_parameters,
        property_settings=config.property_settings,
    )


def start_record(config: TableConfig, engine: TableEngine) -> JournalRecord:
    """The daemon's start in the journal: opened, or still closed when a manager closed the table
    before the restart (the engine recovered that; the panel's view must match it)."""
    view = engine.view()
    if view.table_open:
        return daemon_record(
            entries.TableOpened(
                game=config.game, banking_mode=config.banking.mode, config_digest=config.digest, by="daemon"
            )
        )
    reason = f"closed by a manager before the restart: {view.closed_reason or 'no reason given'}"
    return daemon_record(entries.TableClosed(by="daemon", reason=reason))


class StartCancelled(Exception):
    """A Ctrl-C or SIGTERM while the journal proved itself at the start."""


def cancel_start(signal_number: int, _frame: object) -> None:
    raise StartCancelled(f"{signal.Signals(signal_number).name} while the journal proved itself")


def daemon_record(entry: entries.Entry) -> JournalRecord:
    """One of the daemon's own entries (no round), typed where it is decided."""
    return JournalRecord(entry.kind, entry, None, "engine")


def software_record(verified: VerifiedRelease) -> JournalRecord:
    """The release the start verified, in the journal before the table opens: the panel shows it, and
    the floor learns it from the stream (docs/operations.md "Software verification")."""
    entry = entries.SoftwareVerified(
        release=verified.release,
        release_digest=verified.release_digest,
        development=verified.development,
        key_id=verified.key_id,
        files=verified.files,
        dependencies=verified.dependencies,
    )
    return JournalRecord.typed(entry, None, "engine")


def log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Errors asyncio reports on its own (a serial transport's write failing as a cable is pulled):
    one structured log line, not a traceback on the operator's console. The drivers already turn
    the loss itself into DeviceLost and reconnect."""
    error = context.get("exception")
    log.error(
        "event_loop_error",
        message=str(context.get("message", "")),
        error=repr(error) if error is not None else None,
    )
