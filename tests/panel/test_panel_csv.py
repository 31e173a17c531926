"""The table panel's CSV downloads (docs/panel.md "CSV"): recall's and the meters' CSV over the real app
and a real journal played by the engine (tests/journal/scripted.py) — byte for byte the CLI's
(`flushtable recall --csv`, `flushtable meters --csv`) for the same journal, no card a viewer's recall
page does not show, and nothing for a request without a login. The browser's download is in
tests/panel/test_panel_browser.py."""

from __future__ import annotations

import csv
import io
import random
import re
import time
from collections import Counter

import pytest
from fastapi.testclient import TestClient

from controller.cli import main
from controller.journal.render_csv import RECALL_COLUMNS
from tests.journal.scripted import play_round
from tests.panel.conftest import PanelRig, login

CARD = re.compile(r"data-card='([2-9TJQKA][shdc])'|data-card=\"([2-9TJQKA][shdc])\"")
CSV_CARD = re.compile(r"(?<![A-Za-z0-9])[2-9TJQKA][shdc](?![A-Za-z0-9])")
GAMES = ("high-card-flush", "top-flush", "chase-the-flush")
CARD_COLUMNS = ("dealer_cards", "community", "cards")


@pytest.fixture
def played(rig: PanelRig) -> tuple[PanelRig, list[str]]:
    """Eight rounds: every game, a designated player, two dead rounds (the shoe's red light) and kills."""
    rng = random.Random(24)
    round_ids = []
    for number in range(8):
        game = GAMES[number % 3]
        round_ids.append(
            play_round(
                rig.journal,
                random.Random(rng.getrandbits(32)),
                game=game,
                banking_mode="designated-player" if game == "high-card-flush" and number % 2 else "house",
                outcome="dead" if number % 4 == 2 else "settled",
                kill_request=number % 3 == 1,
                players=3,
            )
        )
    return rig, round_ids


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    main(argv)  # meters exits 1 on an unbalanced journal: the output is what is compared
    return capsys.readouterr().out


def _caught_up(client: TestClient, rig: PanelRig) -> None:
    """The panel's view has folded every entry (the whole journal's meters are its reducer's)."""
    last = rig.journal.last_entry()
    assert last is not None
    for _ in range(600):  # 30 s at most
        if rig.backend.health()["last_seq"] >= last.seq:
            return
        time.sleep(0.05)
    raise AssertionError("the panel did not catch up with the journal")


def test_recall_and_meters_csv_are_the_clis(
    client: TestClient, played: tuple[PanelRig, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    rig, round_ids = played
    login(client, "vera")
    _caught_up(client, rig)
    journal = str(rig.journal.path)
    answer = client.get("/csv/recall?last=20")
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/csv; charset=utf-8"
    assert answer.headers["content-disposition"] == 'attachment; filename="recall-T1.csv"'
    assert answer.text == _cli(["recall", "--journal", journal, "--csv", "--last", "20"], capsys)
    rows = list(csv.DictReader(io.StringIO(answer.text)))
    assert tuple(rows[0]) == RECALL_COLUMNS
    assert [r["round_id"] for r in rows if r["round_id"]]
    assert {r["round_id"] for r in rows} == set(round_ids)
    # A killed seat is in the file, its cards not (nor its hand).
    killed = [r for r in rows if r["seat_status"] == "dead"]
    assert killed
    assert all(r["cards"] == "" and r["hand"] == "" for r in killed)

    for round_id in round_ids:
        one = client.get(f"/csv/recall/{round_id}")
        assert one.status_code == 200
        assert one.headers["content-disposition"] == f'attachment; filename="round-{round_id}.csv"'
        assert one.text == _cli(["recall", "--journal", journal, "--csv", "--round", round_id], capsys)

    meters = client.get("/csv/meters")
    assert meters.status_code == 200
    assert meters.headers["content-type"] == "text/csv; charset=utf-8"
    assert meters.text == _cli(["meters", "--journal", journal, "--csv"], capsys)
    # A shift's meters: the page's range (no CLI counterpart), same columns.
    day = rows[0]["started_utc"][:10]
    shift = client.get(f"/csv/meters?date={day}&shift=day")
    assert shift.status_code == 200
    assert shift.text.splitlines()[0] == "meter,key,value,amount"
    assert shift.headers["content-disposition"] == f'attachment; filename="meters-T1-{day}-day.csv"'
    # The listed rounds under a filter are the page's: the dead ones only.
    dead = client.get("/csv/recall?status=dead&last=20")
    assert {r["status"] for r in csv.DictReader(io.StringIO(dead.text))} == {"dead"}


def test_a_viewers_csv_holds_no_card_the_viewers_page_does_not_show(
    client: TestClient, played: tuple[PanelRig, list[str]]
) -> None:
    _rig, round_ids = played
    login(client, "vera")
    for round_id in round_ids:
        page = client.get(f"/recall/{round_id}")
        assert page.status_code == 200
        shown = Counter(a or b for a, b in CARD.findall(page.text))
        rows = list(csv.DictReader(io.StringIO(client.get(f"/csv/recall/{round_id}").text)))
        in_csv: set[str] = set()
        for row in rows:
            for column in CARD_COLUMNS:
                in_csv.update(CSV_CARD.findall(row[column]))
        assert in_csv <= set(shown), f"{round_id}: the CSV holds {in_csv - set(shown)} the page does not show"
        if rows[0]["status"] == "dead":
            assert not in_csv
            assert not shown
        else:
            assert in_csv
            assert in_csv == set(shown)


@pytest.mark.parametrize(
    "path", ["/csv/recall", "/csv/recall/R1", "/csv/meters", "/csv/meters?date=2026-12-04&shift=day"]
)
def test_an_anonymous_request_gets_no_csv(client: TestClient, path: str) -> None:
    answer = client.get(path, follow_redirects=False)
    assert answer.status_code in (303, 307, 401)
    assert "text/csv" not in answer.headers.get("content-type", "")
    assert "content-disposition" not in answer.headers


def test_the_pages_link_to_their_own_csv(client: TestClient, played: tuple[PanelRig, list[str]]) -> None:
    login(client, "vera")
    link = re.compile(r'<a class="ghost-link[^"]*csv-link" href="([^"]+)" download>Download CSV</a>')
    listed = client.get("/recall?status=dead&last=7")
    (href,) = link.findall(listed.text)
    href = href.replace("&amp;", "&")
    assert href.startswith("/csv/recall?")
    assert "status=dead" in href
    assert "last=7" in href
    assert client.get(href).text == client.get("/csv/recall?status=dead&last=7").text
    meters = client.get("/meters?date=2026-12-04&shift=swing")
    (href,) = link.findall(meters.text)
    answer = client.get(href.replace("&amp;", "&"))
    assert answer.headers["content-disposition"] == 'attachment; filename="meters-T1-2026-12-04-swing.csv"'
