"""Delay from journal commit to SSE delivery at 50 concurrent subscribers: p50/p99 as JSON.

The panel runs as in the daemon: uvicorn on the process's event loop, a JournalPanelBackend over a real
SQLite journal, entries appended on the same loop and ``backend.notify()`` called after each append.
The 50 subscribers are a second process (so the clients do not share the server's core), each an SSE
stream over loopback. Delay = the subscriber's arrival time - the writer's time right after the
append returned (durably committed), both CLOCK_MONOTONIC, which Linux shares between processes.

A second run measures a writer in another process with no notify: the panel's own poll picks entries
up (poll interval 20 ms), as `flushtable panel` does beside a running daemon.

Bounded: ENTRIES entries per run at RATE_HZ, every wait with a timeout; loopback only.
Target (issue 6): p99 <= 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import structlog

from controller.journal import Journal
from controller.panel import JournalPanelBackend, PanelServer, PanelSettings, UserStore, create_panel_app

SUBSCRIBERS = 50
ENTRIES = 200
RATE_HZ = 20.0
TIMEOUT_S = 60.0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


# --- the subscribers' process ----------------------------------------------------------------------
async def _subscribe(client: httpx.AsyncClient, since: int, last_seq: int, arrivals: dict[int, float]) -> int:
    got = 0
    async with client.stream("GET", "/api/events", params={"since": since}) as response:
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
                now = time.monotonic()
                arrivals.setdefault(seq, now)
                got += 1
                if seq >= last_seq:
                    return got
    return got


async def _subscribers(
    url: str, cookie: str, since: int, last_seq: int, *, count: int, ready_file: Path
) -> None:
    per_stream: list[dict[int, float]] = [{} for _ in range(count)]
    limits = httpx.Limits(max_connections=count + 5, max_keepalive_connections=count + 5)
    async with httpx.AsyncClient(
        base_url=url, cookies={"ft_session": cookie}, limits=limits, timeout=TIMEOUT_S
    ) as client:
        tasks = [
            asyncio.create_task(_subscribe(client, since, last_seq, per_stream[i])) for i in range(count)
        ]
        await asyncio.sleep(1.0)  # let every stream connect before the writer starts
        ready_file.write_text("ready")
        await asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT_S)
    print(json.dumps([{str(k): v for k, v in arrivals.items()} for arrivals in per_stream]))


# --- the server's process ---------------------------------------------------------------------------
async def _run(mode: str, workdir: Path) -> dict[str, Any]:
    journal = Journal.open(workdir / f"journal-{mode}.sqlite", "B1")
    users = UserStore(workdir / "users.json")
    if users.get("bench") is None:
        users.add("bench", "viewer", "bench-password-1")
    backend = JournalPanelBackend(journal)
    # All the subscribers share one login: the per-user stream cap (8 by default) is raised to them.
    settings = PanelSettings(max_streams_per_user=SUBSCRIBERS, max_connections=SUBSCRIBERS + 16)
    app = create_panel_app(backend, users=users, settings=settings)
    server = PanelServer(app, host="127.0.0.1", port=0)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            await http.get("/login")
            await http.post(
                "/login",
                data={
                    "user": "bench",
                    "password": "bench-password-1",
                    "csrf_token": http.cookies.get("ft_login_csrf") or "",
                },
            )
            cookie = http.cookies.get("ft_session") or ""
        start = journal.last_entry()
        since = start.seq if start is not None else 0
        last_seq = since + ENTRIES
        ready_file = workdir / f"ready-{mode}"
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--child",
            server.url,
            cookie,
            str(since),
            str(last_seq),
            str(SUBSCRIBERS),
            str(ready_file),
            stdout=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30
        while not ready_file.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("subscribers did not connect")
            await asyncio.sleep(0.05)
        connected = backend.subscriber_count
        commits: dict[int, float] = {}
        writer = None if mode == "notify" else Journal.open(journal.path, "B1")  # another connection
        for n in range(ENTRIES):
            if writer is None:
                entry = journal.append(
                    "dealer_key", {"key": "next", "seat": None, "n": n}, round_id=None, source="bench"
                )
                commits[entry.seq] = time.monotonic()
                backend.notify()
            else:
                # Another writer: the append blocks its thread, as it would in its own process.
                entry = await asyncio.to_thread(
                    writer.append,
                    "dealer_key",
                    {"key": "next", "seat": None, "n": n},
                    round_id=None,
                    source="bench",
                )
                commits[entry.seq] = time.monotonic()
            await asyncio.sleep(1 / RATE_HZ)
        out, _ = await asyncio.wait_for(child.communicate(), TIMEOUT_S)
        if writer is not None:
            writer.close()
    finally:
        await server.stop()
        journal.close()
    per_stream = json.loads(out)
    delays_ms = [
        (arrival - commits[int(seq)]) * 1000
        for arrivals in per_stream
        for seq, arrival in arrivals.items()
        if int(seq) in commits
    ]
    delivered = len(delays_ms)
    return {
        "mode": mode,
        "subscribers": SUBSCRIBERS,
        "subscribers_connected": connected,
        "entries": ENTRIES,
        "deliveries": delivered,
        "deliveries_expected": SUBSCRIBERS * ENTRIES,
        "p50_ms": round(statistics.median(delays_ms), 3),
        "p99_ms": round(percentile(delays_ms, 0.99), 3),
        "max_ms": round(max(delays_ms), 3),
        "target_p99_ms": 50,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", nargs=6, metavar=("URL", "COOKIE", "SINCE", "LAST", "COUNT", "READY"))
    parser.add_argument("--modes", default="notify,poll")
    args = parser.parse_args()
    if args.child:
        url, cookie, since, last_seq, count, ready = args.child
        asyncio.run(
            _subscribers(url, cookie, int(since), int(last_seq), count=int(count), ready_file=Path(ready))
        )
        return 0
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(40)
    )  # the journal logs each append
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        os.environ.pop(name, None)
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-panel-") as scratch:
        for mode in args.modes.split(","):
            results.append(asyncio.run(_run(mode, Path(scratch))))
    print(
        json.dumps(
            {"benchmark": "panel_sse_delivery", "cpu_count": os.cpu_count(), "runs": results}, indent=2
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
