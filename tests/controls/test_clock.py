"""The table's clock against the floor's time source (docs/operations.md "Clocks"): a real SNTP
exchange over UDP with a tiny server on 127.0.0.1 (tests/controls/sntp_server.py), the real daemon on
its simulated devices, a real SQLite journal. Only clocks are injected: the table's clock set 3 s ahead
of the server's, and the journal's wall clock stepped back when the clock is corrected."""

from __future__ import annotations

import asyncio
import struct
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.clocks import ClockReading, ClockSourceError, ClockWatch, read_reply, sntp_query, sntp_request
from controller.config import ClockSection, load_config
from controller.daemon import TableClock
from controller.journal.entries import ClockOffset
from controller.journal.state import TableState
from controller.journal.store import Journal, parse_time_utc
from controller.panel.view import TableView
from controller.simulation.table import SimulatedTable
from table_names import records
from tests.controls.harness import journal_entries, with_table
from tests.controls.sntp_server import sntp_server


def test_a_table_clock_3_s_ahead_reads_minus_3_s_from_a_real_sntp_exchange() -> None:
    with sntp_server() as server:
        reading = sntp_query("127.0.0.1", server.port, now_s=lambda: time.time() + 3.0, timeout_s=5.0)
    assert reading.offset_s == pytest.approx(-3.0, abs=0.05)  # the table is ahead: the source says less
    assert 0 <= reading.delay_s < 1.0


def test_a_server_that_is_not_synchronised_or_refuses_or_does_not_answer_is_one_line() -> None:
    with sntp_server(leap=3) as server, pytest.raises(ClockSourceError, match="not synchronised"):
        sntp_query("127.0.0.1", server.port, now_s=time.time, timeout_s=5.0)
    with sntp_server(stratum=0) as server, pytest.raises(ClockSourceError, match="kiss-of-death"):
        sntp_query("127.0.0.1", server.port, now_s=time.time, timeout_s=5.0)
    with sntp_server() as server:
        port = server.port
    with pytest.raises(ClockSourceError) as refused:  # nobody listens there any more
        sntp_query("127.0.0.1", port, now_s=time.time, timeout_s=0.5)
    assert "\n" not in str(refused.value)
    assert f"sntp://127.0.0.1:{port}" in str(refused.value)


def test_a_reply_that_does_not_echo_the_request_is_refused() -> None:
    request = sntp_request(1000.0)
    reply = bytearray(48)
    reply[0], reply[1] = (4 << 3) | 4, 2
    reply[24:32] = struct.pack("!II", 1, 2)  # not our transmit time
    with pytest.raises(ClockSourceError, match="does not answer our request"):
        read_reply(bytes(reply), request, 1000.0, 1000.1, "sntp://x:1")


def test_the_alert_is_raised_once_per_excursion_and_every_check_is_journaled() -> None:
    async def report(_check: object) -> None:
        return None

    watch = ClockWatch(ClockSection(ntp_server="127.0.0.1:9"), now_s=time.time, report=report)
    off = ClockReading("s", -3.0, 0.001, 1000.0)
    ok = ClockReading("s", 0.002, 0.001, 1001.0)
    first, second = watch.judge(off, None), watch.judge(off, None)
    assert first.alert is not None
    assert "3.000 s ahead of" in first.alert
    assert "bound 1000 ms" in first.alert
    assert second.alert is None  # the same drift: journaled, not alerted again
    assert first.entry.offset_us == -3_000_000
    assert first.entry.within_bound is False
    back = watch.judge(ok, None)
    assert back.alert is None
    assert back.entry.within_bound is True
    assert watch.judge(None, "no answer").alert == "the time source cannot be read: no answer"
    # Exactly at the bound is within it; a microsecond past it is not.
    watch.out_of_bound = False
    assert watch.judge(ClockReading("s", 1.0, 0, 0), None).alert is None
    assert watch.judge(ClockReading("s", 1.000001, 0, 0), None).alert is not None


def test_journal_times_never_go_backwards_when_the_wall_clock_steps_back(tmp_path: Path) -> None:
    wall = [datetime(2026, 12, 5, 4, 0, 0, tzinfo=UTC)]
    with Journal.open(tmp_path / "j.sqlite", "T1", clock=lambda: wall[0]) as journal:
        journal.append("dp_waived", {"seat": 1}, round_id=None, source="x")
        wall[0] -= timedelta(seconds=3)  # the clock is corrected: 3 s back
        (second,) = journal.append_many([("dp_waived", {"seat": 2}, None, "x")])
        journal.append("dp_waived", {"seat": 3}, round_id=None, source="x")
        wall[0] += timedelta(seconds=4)  # past the last time again
        journal.append("dp_waived", {"seat": 4}, round_id=None, source="x")
        wall[0] -= timedelta(seconds=2)  # a second step: journaled again
        journal.append("dp_waived", {"seat": 5}, round_id=None, source="x")
        stored = list(journal.entries())
    assert second.kind == "dp_waived"  # the caller gets its own entries; the step is the journal's
    times = [parse_time_utc(entry.time_utc) for entry in stored]
    assert times == sorted(times)
    steps = [entry.payload for entry in stored if entry.kind == "clock_stepped"]
    assert [step["step_back_us"] for step in steps] == [3_000_000, 2_000_000]
    assert steps[0]["wall_clock_utc"] == "2026-12-05T03:59:57.000000Z"
    assert [entry.kind for entry in stored].count("clock_stepped") == 2
    assert stored[1].kind == "clock_stepped"
    assert stored[2].payload == {"seat": 2}  # one commit, step first


def test_a_table_3_s_off_alerts_and_its_journal_never_goes_backwards_across_the_correction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "journal.sqlite"
    shift = [timedelta(seconds=3)]  # the table's wall clock, 3 s ahead of the floor's time source

    def ahead(table: SimulatedTable) -> None:
        table.daemon.clock = TableClock(origin_wall_s=time.time() + 3.0)
        table.daemon.ledger.wall_clock = lambda: datetime.now(UTC) + shift[0]

    async def correct_the_clock(table: SimulatedTable) -> tuple[ClockOffset, bool]:
        daemon = table.daemon
        watch = daemon.controls.clock_watch
        assert watch is not None
        async with asyncio.timeout(30):  # the start's measurement, journaled
            while watch.last is None:
                await asyncio.sleep(0.01)
        first = watch.last.entry
        # An operator sets the clock from the time source: it steps 3 s back.
        daemon.clock = TableClock()
        shift[0] = timedelta(0)
        await watch.check()
        return first, daemon.engine.view().held

    with sntp_server() as server:
        config = records.replace(load_config(None), clock=ClockSection(ntp_server=server.address))
        first, held = with_table(config, path, correct_the_clock, before=ahead)
    assert first.within_bound is False
    assert first.offset_us == pytest.approx(-3_000_000, abs=50_000)
    assert not held  # an alert, not a hold: the table plays on
    stored = journal_entries(path)
    times = [parse_time_utc(entry.time_utc) for entry in stored]
    assert times == sorted(times), "a journal time went backwards"
    offsets = [entry.payload for entry in stored if entry.kind == "clock_offset"]
    assert [o["within_bound"] for o in offsets] == [False, True]
    assert abs(int(offsets[1]["offset_us"])) < 200_000
    assert offsets[0]["source"] == f"sntp://{server.address}"
    assert offsets[0]["bound_us"] == 1_000_000
    (step,) = [entry.payload for entry in stored if entry.kind == "clock_stepped"]
    assert int(step["step_back_us"]) == pytest.approx(3_000_000, abs=500_000)
    (fault,) = [entry for entry in stored if entry.kind == "fault_raised"]
    assert fault.payload["kind"] == "clock"
    assert fault.payload["severity"] == "alert"
    assert fault.payload["reason"]["code"] == "clock_offset"
    assert "ahead of the floor's time source" in fault.payload["reason"]["message"]
    # The table panel's view of the journal: the open clock alert and the last offset.
    view = TableView()
    for entry in stored:
        view.apply(entry)
    (alert,) = [a for a in view.state.alerts.values() if a.kind == "clock"]
    assert alert.state == "active"
    state: TableState = view.state
    assert state.clock is not None
    assert state.clock.within_bound
