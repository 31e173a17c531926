"""The devices' entries: ready, lost, status, security events, and the noise the table summarised."""

from __future__ import annotations

import msgspec

from controller.journal.entries.base import (
    Entry,
)


class NoiseSuppressed(Entry, frozen=True, tag="noise_suppressed"):
    """Past a source's budget, noisy entries (failed logins, refused actions, forged frames) are
    counted instead of journaled one by one; this carries the count (docs/journal.md "Noise")."""

    category: str
    source: str
    count: int
    first_time_utc: str
    last_time_utc: str
    distinct_sources: int | None = None  # the "(other sources)" bucket: how many sources it holds
    distinct_sources_capped: bool = False  # more sources came than were counted


class DeviceReady(Entry, frozen=True, tag="device_ready"):
    device: str
    kind_of_device: str = msgspec.field(name="kind")
    model: str
    serial_number: str
    firmware_version: str


class DeviceLost(Entry, frozen=True, tag="device_lost"):
    device: str
    reason: str


class DeviceStatus(Entry, frozen=True, tag="device_status"):
    device: str
    state: str
    fault_code: int
    lamp: str


class SecurityEvent(Entry, frozen=True, tag="security_event"):
    device: str
    reason: str
    detail: str
