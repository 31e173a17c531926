"""One connected spell of the floor service (docs/floor.md "The floor service"): its NATS client, its
PostgreSQL connection and its surveillance publisher's task, closed together when the spell ends (an
outage, a fence, a stop), and the publisher's loop itself. controller/floor/service.py runs the spells.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

import psycopg
import structlog
from nats.js.client import JetStreamContext

from controller.floor.intake import FloorClient
from controller.floor.store import Connection
from controller.locale import PropertySettings
from controller.waits import close_quietly, wait_event

__all__ = ["Session", "SurveillanceCounters", "SurveillanceSettings", "surveillance_loop"]

log = structlog.get_logger("flushtable.floor")


class Session:
    """What one spell opened; ``close`` ends each that was opened, quietly (the spell's error is the one
    reported)."""

    def __init__(self) -> None:
        self.client: FloorClient | None = None
        self.connection: Connection | None = None
        self.surveillance_task: asyncio.Task[None] | None = None

    async def close(self) -> None:
        if self.surveillance_task is not None:
            self.surveillance_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.surveillance_task
            self.surveillance_task = None
        connection, client = self.connection, self.client
        await close_quietly(connection.close() if connection else None, client.close() if client else None)


class SurveillanceSettings(Protocol):
    """The floor service's settings the publisher reads (FloorConfig's fields)."""

    @property
    def dsn(self) -> str: ...
    @property
    def surveillance_big_win_cents(self) -> int: ...
    @property
    def surveillance_poll_interval_s(self) -> float: ...
    @property
    def property_settings(self) -> PropertySettings: ...


class SurveillanceCounters(Protocol):
    """The floor service's status figures the publisher moves."""

    surveillance_events: int
    surveillance_error: str


async def surveillance_loop(
    stop: asyncio.Event, js: JetStreamContext, settings: SurveillanceSettings, status: SurveillanceCounters
) -> None:
    """Every ``surveillance_poll_interval_s``, publish the surveillance events of what the floor
    took since the last pass (controller/floor/surveillance.py), on its own PostgreSQL connection.
    Any error (no SURVEILLANCE stream yet: `ensure_stream` creates it; the broker or PostgreSQL
    away) is logged and tried again next pass: the marks move only after the acks."""
    from controller.floor.surveillance import publish_pending  # noqa: PLC0415

    connection: Connection | None = None
    try:
        while not stop.is_set():
            try:
                if connection is None or connection.closed:
                    connection = await psycopg.AsyncConnection.connect(settings.dsn, autocommit=True)
                status.surveillance_events += await publish_pending(
                    connection,
                    js,
                    settings.surveillance_big_win_cents,
                    settings.property_settings.money,
                )
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the intake's task owns the connection's fate, not this one
                status.surveillance_error = f"{type(error).__name__}: {error}"[:300]
                log.warning("floor_surveillance_retry", error=status.surveillance_error)
                if connection is not None:
                    with contextlib.suppress(Exception):
                        await connection.close()
                    connection = None
            await wait_event(stop, settings.surveillance_poll_interval_s)
    finally:
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()
