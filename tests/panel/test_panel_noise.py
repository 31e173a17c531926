"""Noise at the panel (controller/journal/noise.py): failed logins from one address and a viewer's refused
actions are journaled within a budget per source; past it, noise_suppressed summaries carry the count.
The journal grows by a bounded number of entries, and no attempt goes uncounted. The budget's clock is
the rig's FakeClock, moved by the test."""

from __future__ import annotations

import math
from collections.abc import Iterable

import httpx
from fastapi.testclient import TestClient

from controller.journal.noise import DEFAULT_NOISE_POLICY, LOGIN_FAILED, REFUSED_ACTION
from controller.journal.store import JournalEntry
from tests.panel.conftest import LiveServer, PanelRig, login

POLICY = DEFAULT_NOISE_POLICY


def _counted(entries: Iterable[JournalEntry], kind: str, category: str) -> tuple[int, int, int]:
    """(entries of ``kind`` journaled one by one, summaries of ``category``, the summaries' counts)."""
    one_by_one = summaries = summarized = 0
    for entry in entries:
        if entry.kind == kind:
            one_by_one += 1
        elif entry.kind == "noise_suppressed" and entry.payload["category"] == category:
            summaries += 1
            summarized += int(entry.payload["count"])
    return one_by_one, summaries, summarized


def _bound(span_s: float) -> int:
    """The most entries one source may add in ``span_s`` (the module's promise), with the final flush."""
    return math.floor(POLICY.burst + POLICY.rate_per_s * span_s + span_s / POLICY.summary_after_s + 2)


def test_500_failed_logins_from_one_address_grow_the_journal_a_bounded_amount_and_all_are_counted(
    live: PanelRig,
) -> None:
    before = live.journal.last_entry()
    start_seq = 0 if before is None else before.seq
    attempts, step_s = 500, 1.0  # one a second on the panel's clock: 500 s of attack
    statuses = []
    with httpx.Client(base_url=live.url) as client:
        client.get("/login")
        for _ in range(attempts):
            token = client.cookies.get("ft_login_csrf") or ""
            answer = client.post("/login", data={"user": "sam", "password": "guess", "csrf_token": token})
            statuses.append(answer.status_code)
            live.clock.now_s += step_s
    assert set(statuses) <= {401, 429}
    new = list(live.journal.entries(since_seq=start_seq))
    assert {e.kind for e in new} <= {"login_failed", "noise_suppressed"}
    assert len(new) <= _bound(attempts * step_s)
    server = live.extra["server"]
    assert isinstance(server, LiveServer)
    server.stop()  # the panel's shutdown journals the summary still pending
    new = list(live.journal.entries(since_seq=start_seq))
    one_by_one, summaries, summarized = _counted(new, "login_failed", LOGIN_FAILED)
    print(
        f"\n{attempts} failed logins: {len(new)} journal entries "
        f"({one_by_one} login_failed + {summaries} noise_suppressed counting {summarized}); "
        f"bound {_bound(attempts * step_s)}"
    )
    assert one_by_one + summarized == attempts
    assert len(new) <= _bound(attempts * step_s)
    summary = next(e for e in new if e.kind == "noise_suppressed")
    assert summary.source == "panel"
    assert summary.payload["source"] == "127.0.0.1"
    assert {"category", "source", "count", "first_time_utc", "last_time_utc"} <= set(summary.payload)
    assert summary.payload.get("distinct_sources") is None  # only the other sources' summary has it
    assert summary.payload["first_time_utc"] <= summary.payload["last_time_utc"]


def test_a_burst_of_failed_logins_at_one_moment_is_its_budget_and_one_summary(
    rig: PanelRig, client: TestClient
) -> None:
    client.get("/login")
    for _ in range(200):
        token = client.cookies.get("ft_login_csrf") or ""
        client.post("/login", data={"user": "nobody", "password": "x", "csrf_token": token})
    journaled = list(rig.journal.entries(kinds=["login_failed", "noise_suppressed"]))
    assert len(journaled) == POLICY.burst  # the summary waits for its minute, or for the shutdown
    rig.clock.now_s += POLICY.summary_after_s
    token = client.cookies.get("ft_login_csrf") or ""
    client.post("/login", data={"user": "nobody", "password": "x", "csrf_token": token})
    entries = list(rig.journal.entries(kinds=["login_failed", "noise_suppressed"]))
    assert [e.kind for e in entries[POLICY.burst :]] == ["noise_suppressed", "login_failed"]
    assert entries[POLICY.burst].payload["count"] == 200 - POLICY.burst


def test_a_viewers_refused_actions_are_journaled_within_her_budget_and_all_counted(
    rig: PanelRig,
) -> None:
    attempts = 300
    with TestClient(rig.app, base_url="http://127.0.0.1") as client:
        csrf = login(client, "vera")
        start = rig.journal.last_entry()
        assert start is not None
        for n in range(attempts):
            answer = client.post(
                "/api/actions/void_round", json={"reason": f"try {n}"}, headers={"X-CSRF-Token": csrf}
            )
            assert answer.status_code == 403
            rig.clock.now_s += 0.5
        during = list(rig.journal.entries(since_seq=start.seq))
        assert len(during) <= _bound(attempts * 0.5)
    new = list(rig.journal.entries(since_seq=start.seq))  # after the shutdown's flush
    one_by_one, summaries, summarized = _counted(new, "panel_request", REFUSED_ACTION)
    print(
        f"\n{attempts} refused actions: {len(new)} journal entries "
        f"({one_by_one} panel_request + {summaries} noise_suppressed counting {summarized})"
    )
    assert one_by_one + summarized == attempts
    assert len(new) <= _bound(attempts * 0.5)
    assert all(e.source == "operator:vera" for e in new)
    assert all(e.payload["source"] == "vera" for e in new if e.kind == "noise_suppressed")


def test_the_device_view_counts_the_forged_frames_of_a_summary(rig: PanelRig) -> None:
    for _ in range(3):
        rig.journal.append(
            "security_event",
            {"device": "display", "reason": "bad_tag", "detail": ""},
            round_id=None,
            source="display",
        )
    summary = {
        "category": "forged_frame",
        "source": "display",
        "count": 40,
        "first_time_utc": "2026-12-01T10:00:00.000000Z",
        "last_time_utc": "2026-12-01T10:00:01.000000Z",
    }
    rig.journal.append("noise_suppressed", summary, round_id=None, source="display")
    other = {**summary, "source": "(other sources)", "distinct_sources": 2, "distinct_sources_capped": False}
    rig.journal.append("noise_suppressed", other, round_id=None, source="engine")
    rig.backend.refresh()
    [display] = [d for d in rig.backend.devices() if d["device"] == "display"]
    assert display["security_events"] == 43
