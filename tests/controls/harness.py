"""The real daemon on its simulated devices for the regulatory controls' tests (nobody playing unless
asked): ``with_table`` runs it on a configuration, hands the harness to the test's work once it runs,
then stops it as SIGTERM would."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from controller.config import TableConfig
from controller.journal.store import Journal, JournalEntry
from controller.simulation.table import SimulatedTable
from tests.daemon.harness import simulated_table
from tests.device_harness.leaks import run_async

T = TypeVar("T")


def with_table(
    config: TableConfig,
    path: Path,
    work: Callable[[SimulatedTable], Awaitable[T]],
    *,
    before: Callable[[SimulatedTable], None] | None = None,
    timeout_s: float = 60.0,
    **options: Any,
) -> T:
    """``before``: called on the harness before the daemon runs (a test's clocks go in here)."""
    outcome: dict[str, Any] = {}

    async def companion(table: SimulatedTable) -> None:
        try:
            outcome["result"] = await work(table)
        except BaseException as error:  # handed to the test below, not to the daemon
            outcome["error"] = error
        table.daemon.request_stop()

    options.setdefault("autoplay", False)
    options.setdefault("print_rounds", False)
    table = simulated_table(config, path, companions=[companion], **options)
    if before is not None:
        before(table)
    run_async(table.run, timeout_s=timeout_s)
    if "error" in outcome:
        raise outcome["error"]
    return cast(T, outcome["result"])


def journal_entries(path: Path, kinds: list[str] | None = None) -> list[JournalEntry]:
    with Journal.open_existing(path) as journal:
        return list(journal.entries(kinds=kinds))
