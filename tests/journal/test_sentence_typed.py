"""The sentences read through the typed entries (controller/journal/sentence.py ``_sentence``): each
kind decoded by the one typed decoder reads as it read from its payload (the sentences below were the
payload renderers' for the same entries), and a payload that is not its kind's falls back to its own
fields rather than reading as "None proposed None"."""

from __future__ import annotations

import pytest

from controller.journal import entries as e
from controller.journal.sentence import _TYPED_SENTENCES, entry_sentence

R = "2027-01-15T08:10:00.000000Z"

SENTENCES: list[tuple[e.Entry, str]] = [
    (
        e.ClockOffset(
            source="sntp://10.0.0.1:123",
            offset_us=-3_000_000,
            delay_us=1000,
            bound_us=1_000_000,
            within_bound=False,
            table_time_utc=R,
        ),
        "Clock offset -3.000 s from sntp://10.0.0.1:123 (PAST the bound of 1.000 s)",
    ),
    (
        e.ClockOffset(
            source="sntp://10.0.0.1:123",
            offset_us=2_500,
            delay_us=900,
            bound_us=1_000_000,
            within_bound=True,
            table_time_utc=R,
        ),
        "Clock offset +0.003 s from sntp://10.0.0.1:123 (within the bound of 1.000 s)",
    ),
    (
        e.ClockOffset(
            source="sntp://10.0.0.1:123",
            offset_us=None,
            delay_us=None,
            bound_us=1_000_000,
            within_bound=False,
            table_time_utc=R,
            error="no answer",
        ),
        "Clock not measured against sntp://10.0.0.1:123: no answer",
    ),
    (
        e.ConfigChecked(
            source="table.toml",
            file_sha256="a" * 64,
            config_digest="b" * 64,
            previous_file_sha256=None,
            previous_config_digest=None,
            settings={"game": "x"},
            changed=[],
        ),
        "Configuration table.toml checked at start: first check",
    ),
    (
        e.ConfigChecked(
            source="table.toml",
            file_sha256="c" * 64,
            config_digest="d" * 64,
            previous_file_sha256="a" * 64,
            previous_config_digest="b" * 64,
            settings={"game": "x"},
            changed=["limits.max_ante_cents: 10000 -> 20000"],
            unapproved=True,
        ),
        "Configuration table.toml checked at start: limits.max_ante_cents: 10000 -> 20000 — NOT APPROVED",
    ),
    (
        e.ConfigChecked(
            source="table.toml",
            file_sha256="c" * 64,
            config_digest="d" * 64,
            previous_file_sha256="a" * 64,
            previous_config_digest="b" * 64,
            settings={"game": "x"},
            changed=[],
            approved_change="CT1-0007",
        ),
        "Configuration table.toml checked at start: unchanged (approved by change CT1-0007)",
    ),
    (
        e.ChangeProposed(
            change_id="CT1-0001",
            change_kind="limits",
            params={"min_ante_cents": 500},
            summary="ante limits 5.00 to 200.00",
            by="max",
            reason="promo",
            lapses_utc=R,
        ),
        "max proposed CT1-0001: ante limits 5.00 to 200.00 (promo); a second manager must approve "
        "it before 2027-01-15T08:10:00.000000Z",
    ),
    (
        e.ChangeProposed(
            change_id="CT1-0002",
            change_kind="limits",
            params={},
            summary="ante limits",
            by="max",
            reason="",
            lapses_utc=R,
        ),
        "max proposed CT1-0002: ante limits; a second manager must approve it before "
        "2027-01-15T08:10:00.000000Z",
    ),
    (
        e.ChangeApproved(
            change_id="CT1-0001",
            change_kind="limits",
            proposed_by="max",
            by="mia",
            summary="ante limits 5.00 to 200.00",
        ),
        "mia approved CT1-0001 proposed by max: ante limits 5.00 to 200.00",
    ),
    (
        e.ChangeLapsed(change_id="CT1-0003", change_kind="limits", proposed_by="max", lapses_utc=R),
        "CT1-0003 proposed by max lapsed unapproved at 2027-01-15T08:10:00.000000Z",
    ),
    (
        e.ChangeRefused(change_id=None, by="max", reason="change_kind: 'nope' is not known", closed=True),
        "max: a proposal closed: change_kind: 'nope' is not known",
    ),
    (
        e.ChangeRefused(
            change_id="CT1-0001", by="max", reason="a second manager must approve it", closed=False
        ),
        "max: CT1-0001 refused: a second manager must approve it",
    ),
    (
        e.SoftwareVerified(
            release="1.2.3",
            release_digest="d" * 64,
            development=False,
            key_id="0123456789abcdef",
            files=412,
            dependencies=37,
        ),
        "Software verified at start: release 1.2.3, digest dddddddddddddddd, 412 files and 37 "
        "dependencies, signed by key 0123456789abcdef",
    ),
    (
        e.SoftwareVerified(
            release="0.0.0+dev",
            release_digest="e" * 64,
            development=True,
            key_id="fedcba9876543210",
            files=400,
            dependencies=30,
        ),
        "Software verified at start: release 0.0.0+dev, digest eeeeeeeeeeeeeeee, 400 files and 30 "
        "dependencies, signed by key fedcba9876543210 (a DEVELOPMENT release, not for a live table)",
    ),
    (
        e.SoftwareChecked(seed="1" * 64, aggregate="2" * 64, files=412, requested_by="floor:ops"),
        "Seeded software verification for floor:ops: seed 1111111111111111, aggregate "
        "2222222222222222 over 412 files",
    ),
    (
        e.NoiseSuppressed(
            category="login_failed", source="addr:10.0.0.9", count=490, first_time_utc=R, last_time_utc=R
        ),
        "490 more login failed from addr:10.0.0.9 counted, not journaled one by one",
    ),
    (
        e.ClockStepped(wall_clock_utc=R, journal_time_utc=R, step_back_us=3_250_000),
        "The wall clock went back 3.250 s: the journal keeps 2027-01-15T08:10:00.000000Z until the "
        "clock passes it",
    ),
    (
        e.FaultCleared(fault_id="FT1-000001", by="sue", reason="jam cleared"),
        "sue cleared FT1-000001: jam cleared",
    ),
    (
        e.FaultAcknowledged(fault_id="FT1-000001", by="sue"),
        "sue acknowledged FT1-000001",
    ),
    (
        e.TableOpened(
            game="top-flush", banking_mode="designated_player", config_digest="b" * 64, by="daemon"
        ),
        "Table opened by daemon: Top Flush, designated player",
    ),
    (
        e.TableClosed(by="daemon", reason="shutdown"),
        "Table closed by daemon: shutdown",
    ),
    (
        e.DeviceReady(
            device="shuffler",
            kind_of_device="shuffler",
            model="SIM-1",
            serial_number="S1",
            firmware_version="2.1",
        ),
        "shuffler ready: SIM-1 firmware 2.1",
    ),
    (
        e.DeviceLost(device="shoe", reason="cable pulled"),
        "shoe lost: cable pulled",
    ),
    (
        e.DeviceStatus(device="shoe", state="fault", fault_code=7, lamp="red"),
        "shoe reports fault, lamp red, fault code 7",
    ),
    (
        e.DeviceStatus(device="shoe", state="ready", fault_code=0, lamp=""),
        "shoe reports ready, lamp off",
    ),
    (
        e.Login(user="sue", role="supervisor", remote="127.0.0.1"),
        "sue (supervisor) logged in from 127.0.0.1",
    ),
    (
        e.LoginFailed(user="sue", remote="127.0.0.1", reason="bad password"),
        "Failed login as sue from 127.0.0.1: bad password",
    ),
]


def test_every_typed_sentence_is_shown_here() -> None:
    assert {entry.kind for entry, _ in SENTENCES} == set(_TYPED_SENTENCES)


@pytest.mark.parametrize(("entry", "expected"), SENTENCES, ids=[entry.kind for entry, _ in SENTENCES])
def test_a_typed_sentence_reads_as_the_payload_sentence_did(entry: e.Entry, expected: str) -> None:
    event = {"kind": entry.kind, "payload": e.public_dict(entry), "hidden": False}
    assert entry_sentence(event) == expected


def test_a_payload_not_of_its_kind_reads_as_its_own_fields() -> None:
    """A change_proposed missing its fields is not its kind: its fields as they are, not "None proposed"."""
    odd = {"kind": "change_proposed", "payload": {"change_id": "CT1-0001", "by": "max"}}
    assert entry_sentence(odd) == "Change proposed: change id CT1-0001, by max"
    garbled = {"kind": "clock_offset", "payload": {"source": "sntp://x:123", "offset_us": "soon"}}
    assert entry_sentence(garbled) == "Clock offset: source sntp://x:123, offset us soon"
