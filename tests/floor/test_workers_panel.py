"""The floor panel's Workers page in Chromium (docs/floor.md "Partitioned floor workers"): which worker
holds which partition (epoch, last renewal) and the three NATS nodes; after a node is SIGKILLed the page
(it reads PostgreSQL) still answers and shows that node no longer current."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from datetime import UTC, datetime
from typing import Any

from jinja2 import ChoiceLoader, DictLoader, Environment, FileSystemLoader, select_autoescape
from playwright.sync_api import Browser, expect

from controller.floor.panel import HERE, FloorPanelSettings, FloorUser, serve_panel
from controller.floor.workers import FloorWorker, WorkerSettings
from controller.locale import property_settings
from tests.floor.conftest import MakeFloor
from tests.floor.test_floor_panel import PASSWORDS, _login
from tests.floor.test_workers import LEASE_TTL_S, _ensure_partitions

PARTITIONS = 2


def test_the_workers_page_shows_partitions_and_nodes(make_floor: MakeFloor, browser: Browser) -> None:
    floor = make_floor(["T1", "T2"], nodes=3)
    assert floor.cluster is not None
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stop = asyncio.Event()

    def call(work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, loop).result(timeout=60)

    async def start() -> tuple[Any, list[asyncio.Task[None]]]:
        await _ensure_partitions(floor, PARTITIONS)
        settings = WorkerSettings("A", PARTITIONS, lease_ttl_s=LEASE_TTL_S, renew_interval_s=LEASE_TTL_S / 3)
        tasks = [asyncio.create_task(FloorWorker(floor.floor_config(), settings).run(stop))]
        users = {"sam": FloorUser.with_password("sam", "surveillance", PASSWORDS["sam"])}
        server = await serve_panel(FloorPanelSettings(floor.reporting_dsn, None, users), port=0)
        return server, tasks

    async def close(server: Any, tasks: list[asyncio.Task[None]]) -> None:
        stop.set()
        await server.stop()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)

    server, tasks = call(start())
    try:
        page = _login(browser, server.url, "sam")
        page.click("#nav-workers")
        expect(page.locator("h1")).to_have_text("Floor workers")
        rows = page.locator("#partitions tbody tr")
        states = page.locator("#nodes .state")

        def settled() -> bool:
            """Both leases, and the three nodes reported current with one leader. The page shows what
            PostgreSQL held at its load: a replica catching up just after the cluster's start, seen then,
            stays so on the page until it is loaded again."""
            return bool(
                rows.count() == PARTITIONS
                and states.all_text_contents() == ["current", "current", "current"]
                and page.locator("#nodes .role", has_text="leader").count() == 1
            )

        deadline = time.monotonic() + 60
        while not settled():
            assert time.monotonic() < deadline, "the leases and three current nodes did not show"
            page.wait_for_timeout(500)  # the page is read anew: a poll of PostgreSQL, bounded above
            page.reload()
        for index in range(PARTITIONS):
            row = page.locator(f"#partitions tr[data-partition='{index}']")
            expect(row.locator(".worker")).to_have_text("A")
            expect(row.locator(".epoch")).to_have_text(re.compile(r"^\d+$"))
        expect(page.locator("#nodes .role", has_text="leader")).to_have_count(1)
        expect(states).to_have_text(["current", "current", "current"])
        # A node killed (not the leader: the test waits on the replicas' report of it).
        leader = page.locator("#nodes tr", has=page.locator(".role", has_text="leader")).get_attribute(
            "data-node"
        )
        victim = next(i for i in range(3) if f"flushtable-n{i + 1}" != leader)
        floor.cluster.kill(victim)
        victim_row = page.locator(f"#nodes tr[data-node='flushtable-n{victim + 1}'] .state")
        deadline = time.monotonic() + 90
        while victim_row.text_content() == "current":
            assert time.monotonic() < deadline, "the killed node still shown current"
            page.wait_for_timeout(500)
            page.reload()
        expect(victim_row).to_have_text(re.compile("offline|catching up"))
        page.context.close()
    finally:
        call(close(server, tasks))
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


def test_the_workers_page_writes_its_times_in_the_propertys_zone() -> None:
    # The page's own template rendered with the panel's `when` filter (base.html stubbed: no server or
    # browser needed for what this checks): the times in the property's zone, the zone named.
    settings = FloorPanelSettings(
        "", None, {}, property_settings=property_settings(time_zone="Europe/Berlin")
    )
    environment = Environment(
        loader=ChoiceLoader([DictLoader({"base.html": "{% block main %}{% endblock %}"}),
                             FileSystemLoader(HERE / "templates")]),
        autoescape=select_autoescape(),
    )  # fmt: skip
    environment.filters["when"] = lambda moment: settings.time_text(moment, with_date=True)
    at = datetime(2026, 12, 5, 13, 5, 31, tzinfo=UTC)
    lease = {
        "partition": 0,
        "partitions": 2,
        "worker": "w1",
        "epoch": 3,
        "acquired_utc": at,
        "renewed_utc": at,
        "renewed_ago_s": 1.0,
    }
    node = {"node": "n1", "role": "leader", "current": True, "offline": False, "lag": 0, "seen_by": "w1",
            "seen_utc": at, "seen_ago_s": 1.0}  # fmt: skip
    html = environment.get_template("workers.html").render(leases=[lease], nodes=[node])
    assert html.count("2026-12-05 14:05:31 CET") == 3
    assert "UTC" not in html
