"""Issue 26 item 2, end to end over NATS: a table (a child process running a copy of the product, its
signed release verified at start) answers the floor's seeded verification; `flushtable floor
verify-software` computes the same from the approved release it holds and records the outcome in
PostgreSQL: a match for the clean table; after a byte of a product file changes on the table's disk, a
mismatch with an alert; with the floor's PostgreSQL out of reach, the answer is not recorded and the
command says so in one line. The table journals each answer with the floor's seed. Real nats-server and
PostgreSQL (tests/floor/conftest.py). The floor panel's map then shows, in real Chromium, the release
the table verified at start (learnt from its stream) and the last check's outcome.

Checked to fail: with the table's answer computed over a seed of its own (the daemon's
answer_software_check hashing with b"x" * 16), the clean table's check recorded a mismatch."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller import software
from controller.cli import main
from controller.config import DEFAULT_CONFIG_TOML
from controller.floor.config import write_floor_config
from controller.floor.panel import FloorPanelSettings, FloorUser, serve_panel
from controller.floor.service import FloorService
from controller.floor.software_check import ask_table
from controller.journal.store import Journal
from controller.simulation.floor.embedded import EmbeddedFloor
from tests.cli.test_floor_postgresql_unreachable import NO_POSTGRES_DSN, refused_line
from tests.floor.conftest import MakeFloor
from tests.software.conftest import copy_product

ANSWER_WAIT_S = 180.0  # the child's start and its uplink's TLS connect, on a loaded machine


def test_seeded_verification_matches_a_clean_table_and_not_a_changed_one(
    tmp_path: Path, make_floor: MakeFloor, capsys: pytest.CaptureFixture[str]
) -> None:
    floor = make_floor(["SIM1"])
    assert floor.tls is not None
    assert floor.nats is not None
    # The approved release the floor holds, and the table's own installed copy of it.
    approved = tmp_path / "approved"
    copy_product(approved)
    table_site = tmp_path / "table-site"
    copy_product(table_site)
    key = tmp_path / "maker.key"
    public = software.generate_key(key)
    manifest = software.build_manifest(
        approved, release="0.1.0", development=False, search_path=[str(approved), *sys.path]
    )
    signed_path = tmp_path / "release.json"
    signed_path.write_text(json.dumps(software.sign_manifest(manifest, software.load_private_key(key))))
    journal_path = tmp_path / "var" / "journal.sqlite"
    (tmp_path / "nats.pw").write_text(floor.passwords["nats:table:SIM1"] + "\n")
    config_path = tmp_path / "table.toml"
    config_path.write_text(
        DEFAULT_CONFIG_TOML.replace('path = "var/journal.sqlite"', f'path = "{journal_path}"')
        + "\n[uplink]\n"
        f'servers = ["{floor.nats.url}"]\n'
        'site = "main"\n'
        'user = "table-SIM1"\n'
        'password_file = "nats.pw"\n'
        f'ca_file = "{floor.tls.ca_cert}"\n'
        f'\n[software]\nmanifest = "release.json"\npublic_key = "{public}"\n'
    )
    floor_file = write_floor_config(tmp_path / "floor", floor.floor_config())
    floor_config = floor.floor_config()
    code = "import sys; from controller.cli import main; sys.exit(main())"
    table = subprocess.Popen(
        [sys.executable, "-c", code, "run", "--config", str(config_path), "--no-panel", "--seed", "4",
         "--log-level", "warning"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(table_site)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Ready when it answers at all (its uplink connected and subscribed): a bounded wait.
        async def answered() -> None:
            deadline = time.monotonic() + ANSWER_WAIT_S
            while True:
                answer = await ask_table(
                    floor_config,
                    site="main",
                    table_id="SIM1",
                    seed=b"\x01" * 16,
                    requested_by="floor:test",
                    timeout_s=30,
                )
                if answer is not None:
                    return
                assert table.poll() is None, (
                    f"the table stopped: {table.stderr.read() if table.stderr else ''}"
                )
                assert time.monotonic() < deadline, "the table never answered"
                await asyncio.sleep(0.2)

        asyncio.run(answered())

        def verify() -> tuple[int, str]:
            status = main(
                ["floor", "verify-software", "SIM1", "--config", str(floor_file), "--release", str(approved),
                 "--manifest", str(signed_path), "--public-key", public, "--by", "alice"]
            )  # fmt: skip
            return status, capsys.readouterr().out

        status, out = verify()
        assert status == 0, out
        assert "match" in out
        assert "mismatch" not in out
        # A byte of a product file changes on the running table's disk.
        target = table_site / "controller" / "engine" / "bank.py"
        data = bytearray(target.read_bytes())
        data[10] ^= 0x20
        target.write_bytes(bytes(data))
        status, out = verify()
        assert status == 1
        assert "mismatch" in out
        # The table answers, but the floor's PostgreSQL cannot be reached to record it: one line, exit 2.
        unreachable = write_floor_config(
            tmp_path / "floor-no-postgresql", dataclasses.replace(floor_config, dsn=NO_POSTGRES_DSN)
        )
        status = main(
            ["floor", "verify-software", "SIM1", "--config", str(unreachable), "--release", str(approved),
             "--manifest", str(signed_path), "--public-key", public, "--by", "bob"]
        )  # fmt: skip
        out, err = capsys.readouterr()
        assert (status, out) == (2, "")
        assert err == f"flushtable floor: PostgreSQL: {refused_line()}\n"
    finally:
        table.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            table.wait(timeout=120)
        if table.poll() is None:
            table.kill()
            table.wait()
    with psycopg.connect(floor.owner_dsn) as connection:
        rows = connection.execute(
            "SELECT outcome, seed, expected, answered, requested_by, table_release_digest "
            "FROM floor_software_checks WHERE table_id = 'SIM1' ORDER BY check_id"
        ).fetchall()
        alerts = connection.execute(
            "SELECT kind, message FROM floor_alerts WHERE table_id = 'SIM1' AND kind LIKE 'software_%'"
        ).fetchall()
    assert [row[0] for row in rows] == ["match", "mismatch"]
    assert rows[0][2] == rows[0][3]  # the table's aggregate is the approved release's
    assert rows[1][2] != rows[1][3]
    assert rows[0][5] == software.release_digest(manifest)  # the release the table verified at start
    assert len(alerts) == 1
    assert alerts[0][0] == "software_mismatch"
    # The table journaled both of the floor's requests, with the floor's seeds and its answers.
    with Journal.open_existing(journal_path) as journal:
        checked = [entry.payload for entry in journal.entries() if entry.kind == "software_checked"]
        first_kinds = [entry.kind for entry in journal.entries()][:2]
    assert first_kinds == ["software_verified", "table_opened"]
    floor_seeds = [(row[1], row[3]) for row in rows]
    assert [(p["seed"], p["aggregate"]) for p in checked if p["requested_by"] == "floor:alice"] == floor_seeds
    show_on_the_floor_map(floor, software.release_digest(manifest))


def show_on_the_floor_map(floor: EmbeddedFloor, digest: str) -> None:
    """The floor service takes the table's stream (its software_verified among it); the floor panel's
    map, in real Chromium, shows the release's digest and the last check's outcome."""
    from playwright.sync_api import expect, sync_playwright

    from tests.chromium import launch_chromium
    from tests.floor.conftest import EXPECT_TIMEOUT_MS

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()

    async def start() -> tuple[Any, Any]:
        service = asyncio.create_task(FloorService(floor.floor_config()).run(stop))
        users = {"sam": FloorUser.with_password("sam", "surveillance", "surveillance-pw")}
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, floor.writer_dsn, users), port=0)
        return service, server

    service, server = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=60)
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            page = browser.new_page(base_url=str(server.url))
            page.set_default_timeout(EXPECT_TIMEOUT_MS)
            page.goto("/login")
            page.fill("input[name=user]", "sam")
            page.fill("input[name=password]", "surveillance-pw")
            page.click("button[type=submit]")
            tile = page.locator('[data-table="SIM1"] .software')
            expect(tile).to_contain_text(digest[:16], timeout=EXPECT_TIMEOUT_MS * 4)
            expect(tile).to_contain_text("check: mismatch")
            browser.close()
    finally:

        async def close() -> None:
            stop.set()
            await server.stop()
            await asyncio.wait_for(asyncio.gather(service, return_exceptions=True), 30)

        asyncio.run_coroutine_threadsafe(close(), loop).result(timeout=60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
