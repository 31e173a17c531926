"""Releasing a quarantined table, on the real servers (nats-server, PostgreSQL, the floor service, the
tables' uplinks): a forged entry with a sequence gap quarantines a table; its release is refused while
the chain does not verify from the last good entry (the entries the gap skips have not come); the table
plays on (its uplink sends the real entries, which the floor holds but does not project); the release
is then recorded (who, when, why, what is set aside), the alert resolved, and the floor service projects
the held entries from the stream without a restart, each exactly once, chain verified. A release is
refused, in one line and without a traceback, for an unknown table, a table not quarantined, no reason,
no name; on the floor panel (real Chromium) for any role but a manager."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.cli import main
from controller.floor.config import write_floor_config
from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.release import HeldMessage, plan_release, release_table, set_aside_stream_seqs
from controller.floor.service import FloorService
from controller.journal.chain import GENESIS_HASH, entry_hash
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.uplink import wire
from controller.uplink.uplink import Uplink
from tests.chromium import CHROMIUM, launch_chromium
from tests.floor.conftest import EXPECT_TIMEOUT_MS, MakeFloor
from tests.floor.helpers import Running, Tables, floor_in_a_thread, floor_problems, last_seq, wait_until
from tests.floor.test_bad_input import _next_entry_json, _publish_as


def _row(floor: EmbeddedFloor, sql: str, *params: Any) -> tuple[Any, ...] | None:
    with psycopg.connect(floor.reporting_dsn) as connection:
        return connection.execute(sql.encode(), params).fetchone()


def _quarantined_at(floor: EmbeddedFloor, table_id: str) -> int | None:
    row = _row(floor, "SELECT quarantined_at_seq FROM floor_tables WHERE table_id = %s", table_id)
    return None if row is None else row[0]


def _floor_last(floor: EmbeddedFloor, table_id: str) -> int:
    row = _row(floor, "SELECT max(seq) FROM floor_entries WHERE table_id = %s", table_id)
    return int(row[0] or 0) if row else 0


def _holds(floor: EmbeddedFloor, table_id: str, seq: int) -> bool:
    """The floor has received (and held) the uplink's message for entry ``seq``."""
    # The uplink's id is <table>:<seq>:<digest of the body> (controller/uplink/wire.py msg_id).
    row = _row(floor, "SELECT 1 FROM floor_quarantine WHERE table_id = %s AND msg_id LIKE %s", table_id,
               f"{table_id}:{seq}:%")  # fmt: skip
    return row is not None


def until(predicate: Any, what: str, timeout_s: float = 60) -> None:
    """Poll ``predicate`` from the test's own thread (the floor runs on a loop of its own) until true;
    fail naming ``what`` after ``timeout_s``: a bounded wait."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.1)


def _release(config: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command's exit status, its standard output, and its own lines on standard error (the floor's
    services log there too, from their thread)."""
    code = main(["floor", "release", *args, "--config", str(config)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    own = "".join(line for line in captured.err.splitlines(keepends=True) if not line.startswith("{"))
    return code, captured.out, own


def _forge_gap(floor: EmbeddedFloor, tables: Tables, table_id: str, ahead: int) -> int:
    """A well-formed entry ``ahead`` entries past the table's last, published with the table's own
    credentials: a gap. Returns the seq it claims."""
    forged = _next_entry_json(tables, table_id)
    forged["seq"] += ahead - 1
    forged["hash"] = entry_hash(**{k: v for k, v in forged.items() if k != "hash"})
    asyncio.run(_publish_as(floor, table_id, wire.entry_body(forged), f"{table_id}:forged"))
    return int(forged["seq"])


def test_release_refused_while_the_gap_remains_then_projected_exactly_once(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = ["REL", "OK"]
    floor = make_floor(ids, ack_wait_s=2)
    config = write_floor_config(tmp_path / "floor-config", floor.floor_config())
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)
    # The floor runs on a loop of its own, so the test can call the CLI (synchronous) meanwhile.
    with floor_in_a_thread(floor, tables) as served:
        for table_id in ids:
            until(lambda t=table_id: _floor_last(floor, t) == last_seq(tables.journals[t]), f"{table_id}")
        good = last_seq(tables.journals["REL"])
        claimed = _forge_gap(floor, tables, "REL", ahead=3)
        assert claimed == good + 3
        until(lambda: _quarantined_at(floor, "REL") == good, "REL quarantined")

        # Refused while the cause remains: the entries the gap skips have not come.
        code, out, err = _release(config, capsys, "REL", "--reason", "looked at it", "--by", "maria")
        assert code == 2
        assert out == ""
        assert err.count("\n") == 1, err
        assert "Traceback" not in err
        assert f"the chain still does not verify from entry {good}" in err
        assert f"no verified entries {good + 1} to {claimed}" in err

        # Refused: unknown table, a table not quarantined, no reason, no name.
        for args, expected in (
            (["NOPE", "--reason", "x", "--by", "maria"], "no table 'NOPE' on the floor"),
            (["OK", "--reason", "x", "--by", "maria"], "table OK is not quarantined"),
            (["REL", "--reason", "  ", "--by", "maria"], "reason: required"),
            (["REL", "--reason", "x", "--by", ""], "by: required"),
        ):
            code, out, err = _release(config, capsys, *args)
            assert (code, out) == (2, ""), (args, err)
            assert err.startswith("flushtable floor: release refused: "), err
            assert expected in err, (expected, err)
            assert err.count("\n") == 1, err
        with pytest.raises(SystemExit) as usage:  # argparse's own refusal: a usage line, no traceback
            main(["floor", "release", "REL", "--by", "maria", "--config", str(config)])
        assert usage.value.code == 2
        assert "--reason" in capsys.readouterr().err

        # The table plays on: its uplink sends the real entries after the forged one; the floor holds them.
        tables.play("REL", 1)
        tables.play("OK", 1)
        for table_id in ids:
            served.notify(table_id)
        end = last_seq(tables.journals["REL"])
        assert end > claimed
        until(lambda: _holds(floor, "REL", end), "the floor to hold REL's real entries")
        assert _floor_last(floor, "REL") == good  # held, not projected
        until(lambda: _floor_last(floor, "OK") == last_seq(tables.journals["OK"]), "OK flowing")

        code, out, err = _release(
            config, capsys, "REL", "--reason", "forged gap entry; real entries verified", "--by", "maria"
        )
        assert (code, err) == (0, ""), err
        assert (
            f"table REL released (release 1): the chain verifies from entry {good} through entry {end}" in out
        )
        forged_stream_seq = _row(floor, "SELECT stream_seq FROM floor_quarantine WHERE msg_id = 'REL:forged'")
        assert forged_stream_seq is not None
        assert f"stream seq {forged_stream_seq[0]};" in out

        # The floor service picks it up without a restart: every entry once, in order, chains verified.
        until(lambda: _floor_last(floor, "REL") == end, "REL's held entries projected")
        until(lambda: _quarantined_at(floor, "REL") is None, "REL's quarantine lifted")
        release_row = _row(
            floor, "SELECT table_id, quarantined_at_seq, released_by, reason, via, set_aside, "
            "verified_through_seq FROM floor_releases"
        )  # fmt: skip
        assert release_row == ("REL", good, "maria", "forged gap entry; real entries verified", "cli",
                               [forged_stream_seq[0]], end)  # fmt: skip
        until(lambda: _row(floor, "SELECT outcome FROM floor_release_applied") == ("projected",), "applied")
        alert = _row(
            floor, "SELECT acknowledged_by, cleared_utc IS NOT NULL FROM floor_alerts "
            "WHERE table_id = 'REL' AND kind = 'gap'"
        )  # fmt: skip
        assert alert == ("maria", True)

        # Once released, not again; and the audit row cannot be changed, even by the writer.
        code, _out, err = _release(config, capsys, "REL", "--reason", "again", "--by", "maria")
        assert code == 2
        assert "table REL is not quarantined" in err
        with psycopg.connect(floor.writer_dsn) as connection, pytest.raises(psycopg.Error):
            connection.execute("UPDATE floor_releases SET reason = 'edited'")

        # Plays on after the release, flowing as any table.
        tables.play("REL", 1)
        served.notify("REL")
        until(lambda: _floor_last(floor, "REL") == last_seq(tables.journals["REL"]), "REL flowing again")
    assert floor_problems(floor, tables) == []
    tables.close()


def test_the_plan_walks_as_the_replay_does() -> None:
    """The check alone (no I/O): a forged entry is set aside, a resend skipped, a gap not yet filled
    refused; privates are left to the replay."""

    def entry(seq: int, prev: str, **changes: Any) -> dict[str, Any]:
        document: dict[str, Any] = {
            "seq": seq, "time_utc": "2026-12-01T00:00:00.000000Z", "table_id": "T", "round_id": None,
            "source": "engine", "kind": "table_closed", "version": 1, "payload": {"by": "x", "reason": "y"},
            "private_digest": None, "prev_hash": prev,
        } | changes  # fmt: skip
        document["hash"] = entry_hash(**document)
        return document

    one = entry(1, GENESIS_HASH)
    two = entry(2, one["hash"])
    three = entry(3, two["hash"])
    forged = entry(3, GENESIS_HASH)
    held = [
        HeldMessage(10, wire.entry_body(forged)),
        HeldMessage(11, b"\xff junk"),
        HeldMessage(12, wire.entry_body(two)),
        HeldMessage(13, wire.entry_body(two)),
    ]
    waiting = plan_release("T", last_seq=1, last_hash=one["hash"], held=held)
    assert (waiting.through_seq, waiting.highest_seq, waiting.verifies) == (2, 3, False)
    done = plan_release(
        "T", last_seq=1, last_hash=one["hash"], held=[*held, HeldMessage(14, wire.entry_body(three))]
    )
    assert (done.through_seq, done.highest_seq, done.verifies) == (3, 3, True)
    assert done.set_aside == (10, 11)
    assert done.first_problem is not None
    assert "(gap)" in done.first_problem
    # A broken chain or a bad hash at the next entry: refused until a verified one comes, then set aside.
    broken = entry(2, "f" * 64)
    tampered = two | {"payload": {"by": "mallory", "reason": "changed"}}
    for bad in (broken, tampered):
        alone = plan_release(
            "T", last_seq=1, last_hash=one["hash"], held=[HeldMessage(20, wire.entry_body(bad))]
        )
        assert (alone.through_seq, alone.highest_seq, alone.verifies) == (1, 2, False)
        fixed = plan_release(
            "T",
            last_seq=1,
            last_hash=one["hash"],
            held=[HeldMessage(20, wire.entry_body(bad)), HeldMessage(21, wire.entry_body(two))],
        )
        assert (fixed.through_seq, fixed.verifies, fixed.set_aside) == (2, True, (20,))
    again = plan_release("T", last_seq=1, last_hash=one["hash"], held=held, already_set_aside=frozenset({10}))
    assert again.set_aside == (11,)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")
def test_the_floor_panel_releases_for_a_manager_only(tmp_path: Path, make_floor: MakeFloor) -> None:
    """The panel in real Chromium: surveillance sees no Release and its POST is refused (403); the
    manager's release is refused while the chain does not verify (the page says why), then recorded
    with the manager's login and projected."""
    from playwright.sync_api import expect, sync_playwright

    ids = ["PQ"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    tables.play("PQ", 1)
    passwords = {"mona": "manager-pw", "sam": "surveillance-pw"}
    users = {
        "mona": FloorUser.with_password("mona", "manager", passwords["mona"]),
        "sam": FloorUser.with_password("sam", "surveillance", passwords["sam"]),
    }
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()

    def call(work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=60)

    async def start() -> tuple[Any, Uplink, list[asyncio.Task[None]]]:
        uplink = Uplink(floor.uplink_config("PQ"), tables.path("PQ"), "PQ")
        tasks = [
            asyncio.create_task(uplink.run(stop)),
            asyncio.create_task(FloorService(floor.floor_config(release_poll_interval_s=0.2)).run(stop)),
        ]
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, floor.writer_dsn, users), port=0)
        return server, uplink, tasks

    server, uplink, tasks = call(start())

    async def stop_all() -> None:
        stop.set()
        await server.stop()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)

    try:
        until(lambda: _floor_last(floor, "PQ") == last_seq(tables.journals["PQ"]), "PQ on the floor")
        good = last_seq(tables.journals["PQ"])
        _forge_gap(floor, tables, "PQ", ahead=2)
        until(lambda: _quarantined_at(floor, "PQ") == good, "PQ quarantined")
        # ``expect`` waits on the floor service's answers: Playwright's 5 s default is short for a loaded
        # 2-core machine (tests/floor/conftest.py EXPECT_TIMEOUT_MS).
        expect.set_options(timeout=EXPECT_TIMEOUT_MS)
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)

            def login(user: str) -> Any:
                context = browser.new_context(base_url=str(server.url))
                context.set_default_timeout(EXPECT_TIMEOUT_MS)
                page = context.new_page()
                page.goto("/login")
                page.fill("input[name=user]", user)
                page.fill("input[name=password]", passwords[user])
                page.click("button[type=submit]")
                expect(page.locator("h1")).to_have_text("Floor map")
                page.goto("/alerts")
                return page

            watcher = login("sam")
            expect(watcher.locator("#quarantined tr[data-table=PQ]")).to_contain_text("a manager releases it")
            expect(watcher.locator("form.release")).to_have_count(0)
            # With its own session's CSRF token (from its Acknowledge form): refused for the role, 403.
            csrf = watcher.locator("#alerts input[name=csrf_token]").first.get_attribute("value")
            form = {"csrf_token": csrf or "", "reason": "x"}
            refused = watcher.request.post("/tables/PQ/release", form=form)
            assert refused.status == 403
            assert "A surveillance cannot release a table" in refused.text()
            assert _quarantined_at(floor, "PQ") == good
            manager = login("mona")
            manager.fill("form.release input[name=reason]", "too early")
            manager.click("form.release button")
            expect(manager.locator("#release-message")).to_contain_text(
                f"Release refused: table PQ: the chain still does not verify from entry {good}"
            )
            tables.play("PQ", 1)
            loop.call_soon_threadsafe(uplink.notify)
            end = last_seq(tables.journals["PQ"])
            until(lambda: _holds(floor, "PQ", end), "PQ's real entries held")
            manager.goto("/alerts")
            manager.fill(
                "form.release input[name=reason]", "forged entry set aside; table's own entries verify"
            )
            manager.click("form.release button")
            expect(manager.locator("#releases tr[data-release='1']")).to_contain_text("mona (panel)")
            until(lambda: _floor_last(floor, "PQ") == end, "PQ projected")
            manager.goto("/alerts")
            expect(manager.locator("#quarantined")).to_have_count(0)
            expect(manager.locator("#releases tr[data-release='1']")).to_contain_text("projected")
            browser.close()
    finally:
        call(stop_all())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
    assert floor_problems(floor, tables) == []
    tables.close()


def test_the_plan_sets_aside_what_only_raised_before() -> None:
    """A payload number too large for a float (``1e400``) and a lone surrogate: ``floor release`` used to
    end with a traceback (and the panel's release with a 500) on either; now each is set aside."""
    document: dict[str, Any] = {
        "seq": 2, "time_utc": "2026-12-01T00:00:00.000000Z", "table_id": "T", "round_id": None,
        "source": "engine", "kind": "table_closed", "version": 1, "payload": {"by": "x", "reason": "y"},
        "private_digest": None, "prev_hash": GENESIS_HASH,
    }  # fmt: skip
    document["hash"] = entry_hash(**document)
    body = wire.entry_body(document)
    assert b'"reason":"y"' in body
    held = [
        HeldMessage(30, body.replace(b'"reason":"y"', b'"reason":"y","x":1e400')),
        HeldMessage(31, body.replace(b'"reason":"y"', b'"reason":"\\ud800"')),
    ]
    plan = plan_release("T", last_seq=1, last_hash=GENESIS_HASH, held=held)
    assert plan.set_aside == (30, 31)


def test_a_set_aside_tail_is_not_read_again_by_every_idle_sweep(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """A release sets aside a table's last message in the stream (here an undecodable one, after a
    forged gap and the real entries): the service skips it, deliberately never projected. It used to skip
    it without marking it seen, so every idle sweep found the table's tail beyond what the floor handled,
    read it again and logged ``floor_gap_filled``, forever. Now the sweeps go on and read nothing."""
    ids = ["TAIL", "OK"]
    floor = make_floor(ids, ack_wait_s=2)
    tables = Tables(tmp_path / "tables", ids)
    for table_id in ids:
        tables.play(table_id, 1)

    async def scenario() -> None:
        running = Running(floor, tables)
        running.start_uplinks()
        service = FloorService(floor.floor_config(release_poll_interval_s=0.2, sweep_interval_s=0.1))
        running.tasks.append(asyncio.create_task(service.run(running.stop)))

        async def condition(predicate: Any) -> bool:
            return bool(predicate())

        async def until_async(predicate: Any, what: str) -> None:
            await wait_until(lambda: condition(predicate), 60, what)

        for table_id in ids:
            journal = tables.journals[table_id]
            await until_async(lambda t=table_id, j=journal: _floor_last(floor, t) == last_seq(j), table_id)
        good = last_seq(tables.journals["TAIL"])
        forged = _next_entry_json(tables, "TAIL")
        forged["seq"] += 2
        forged["hash"] = entry_hash(**{k: v for k, v in forged.items() if k != "hash"})
        await _publish_as(floor, "TAIL", wire.entry_body(forged), "TAIL:forged")
        await until_async(lambda: _quarantined_at(floor, "TAIL") == good, "TAIL quarantined")
        tables.play("TAIL", 1)
        running.uplinks["TAIL"].notify()
        end = last_seq(tables.journals["TAIL"])
        await until_async(lambda: _holds(floor, "TAIL", end), "the floor to hold TAIL's real entries")
        await _publish_as(floor, "TAIL", b"\xff junk", "TAIL:junk")
        await until_async(
            lambda: _row(floor, "SELECT 1 FROM floor_quarantine WHERE msg_id = 'TAIL:junk'") is not None,
            "the junk held",
        )

        def release_it() -> str:
            with psycopg.connect(floor.writer_dsn) as connection:
                released = release_table(connection, "TAIL", reason="forged; junk", by="maria", via="cli")
                return released.summary()

        summary = await asyncio.to_thread(release_it)
        junk = _row(floor, "SELECT stream_seq FROM floor_quarantine WHERE msg_id = 'TAIL:junk'")
        assert junk is not None
        assert f"{junk[0]};" in summary, summary
        await until_async(lambda: _floor_last(floor, "TAIL") == end, "TAIL's held entries projected")
        gap_fills, sweeps = service.status.gap_fills, service.status.sweeps
        await until_async(lambda: service.status.sweeps >= sweeps + 5, "five idle sweeps after the release")
        assert service.status.gap_fills == gap_fills
        await running.close()

    asyncio.run(scenario())
    assert floor_problems(floor, tables) == []
    tables.close()


def test_only_releases_applied_as_projected_set_messages_aside_at_start(
    tmp_path: Path, make_floor: MakeFloor
) -> None:
    """At runtime only a release applied as ``projected`` adds its set-aside messages (a stale one's
    list was checked against a quarantine no longer the table's, and a pending one's is added when it is
    applied): the list a restarted service reads from PostgreSQL is the same, not every release's.
    The rows are written directly (real PostgreSQL) to have all three outcomes at once."""
    floor = make_floor(["A"], ack_wait_s=2)
    with psycopg.connect(floor.writer_dsn) as connection:
        for aside, outcome in (([101, 111], "projected"), ([102], "stale"), ([103], None)):
            row = connection.execute(
                "INSERT INTO floor_releases (table_id, quarantined_at_seq, released_by, reason, via, "
                "subject, after_stream_seq, set_aside, verified_through_seq) "
                "VALUES ('A', 1, 'maria', 'test', 'cli', 'x', 1, %s, 2) RETURNING release_id",
                (aside,),
            ).fetchone()
            assert row is not None
            if outcome is not None:
                applied = "INSERT INTO floor_release_applied (release_id, outcome) VALUES (%s, %s)"
                connection.execute(applied, (row[0], outcome))

    async def read() -> set[int]:
        async with await psycopg.AsyncConnection.connect(floor.writer_dsn, autocommit=True) as connection:
            return await set_aside_stream_seqs(connection)

    assert asyncio.run(read()) == {101, 111}
