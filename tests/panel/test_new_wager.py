"""A wager added through the catalogue alone (controller/rules/catalogue.py), as docs/engine.md "Adding
a wager" says: a rule function registered by name and one catalogue line. The fixture adds "Lucky
Flush", a High Card Flush bonus that pays on the player's flush length only while the seat is in action
(a fold loses it, unlike the flush bonus). It then settles, the configuration checks it (its preset
accepted at High Card Flush, an unknown preset and another game refused) and the table panel, served by
its real server, shows it with its words and its result."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from controller.config import ConfigError, TableConfig, parse_config
from controller.rules import catalogue, settle
from controller.rules.catalogue import BANKER, BONUS, Paytable, Wager
from controller.rules.settle import LOSE, BonusBet, Owed, paytable_win, register_wager_rule
from tests.config.test_config import BASE
from tests.config.test_refusals import TOP_FLUSH
from tests.panel.conftest import PASSWORDS, PanelRig
from tests.panel.table_script import ScriptedRound
from tests.rules.builders import round_json, seat, settled, wagers_of

LUCKY = "lucky_flush"
LUCKY_PRESET = Paytable.from_lines("lucky-flush", {7: 500, 6: 50, 5: 5})


def lucky_flush(bet: BonusBet) -> Owed:
    """Paid on the player's flush length by the paytable, only while the seat is in action."""
    if bet.folded:
        return Owed(bet.wager, bet.stake, LOSE, -bet.stake)
    return paytable_win(bet.wager, bet.stake, bet.paytable, bet.hand.flush_length)


@pytest.fixture
def lucky() -> Iterator[None]:
    register_wager_rule(LUCKY, lucky_flush)
    catalogue.add_wager(
        Wager(
            LUCKY,
            "Lucky Flush bonus",
            {"high-card-flush": 4},
            BANKER,
            BONUS,
            LUCKY,
            presets={("high-card-flush", "house"): LUCKY_PRESET.name},
        ),
        presets={LUCKY_PRESET.name: LUCKY_PRESET},
    )
    yield
    catalogue.remove_wager(LUCKY, presets=(LUCKY_PRESET.name,))
    del settle.WAGER_RULES[LUCKY]


DEALER = "As Ks Qs 2d 3c 4h 5c"  # a 3-card spade flush: qualifies
FIVE_CLUBS = "Jc Qc 9c 8c 7c 2s 3s"
FOUR_HEARTS = "Ah Kh Qh Jh 2c 3d 4s"


@pytest.mark.usefixtures("lucky")
def test_the_new_wager_settles_by_its_rule() -> None:
    result = settled(
        round_json(
            "high-card-flush",
            DEALER,
            seat(1, FOUR_HEARTS, folded=True, ante=1000, lucky_flush=500),
            seat(3, FIVE_CLUBS, ante=1000, raise_=2000, lucky_flush=500),
        )
    )
    assert wagers_of(result, 3)[LUCKY] == ("win", 2500)  # a 5-card flush: 5 to 1
    assert wagers_of(result, 1)[LUCKY] == ("lose", -500)  # folded: lost, where the flush bonus pays
    assert list(result["seats"][1]["wagers"]) == ["ante", "raise", LUCKY]  # its spot, after the bonuses


@pytest.mark.usefixtures("lucky")
def test_the_configuration_checks_the_new_wager() -> None:
    def parse(text: str) -> TableConfig:
        return parse_config(text, source="table.toml", base_dir=Path("/srv/table"))

    assert parse(BASE).paytables[LUCKY].name == "lucky-flush"
    chosen = parse(BASE + f"\n[paytables]\n{LUCKY} = {{ 7 = 400, 6 = 40, 5 = 4 }}\n")
    assert chosen.paytables[LUCKY].odds_for(5) == 4
    with pytest.raises(ConfigError) as unknown:
        parse(BASE + f'\n[paytables]\n{LUCKY} = "lucky-flsh"\n')
    assert str(unknown.value).startswith(
        "table.toml: paytables.lucky_flush: unknown paytable preset 'lucky-flsh' (known: "
    )
    assert "lucky-flush" in str(unknown.value)
    with pytest.raises(ConfigError, match=r"^table.toml: paytables.lucky_flush: "):
        parse(TOP_FLUSH + f'\n[paytables]\n{LUCKY} = "lucky-flush"\n')  # Top Flush does not offer it


@pytest.mark.usefixtures("lucky")
def test_the_table_panel_shows_the_new_wager(live: PanelRig) -> None:
    ScriptedRound(live.journal, bonuses={3: {LUCKY: 500}}).play_all()
    with httpx.Client(base_url=live.url, timeout=10) as client:
        client.get("/login")
        answer = client.post(
            "/login",
            data={
                "user": "vera",
                "password": PASSWORDS["vera"],
                "csrf_token": client.cookies["ft_login_csrf"],
            },
        )
        assert answer.status_code in (200, 303), answer.text
        # The backend follows the journal on its own poll: wait for the round, bounded by a deadline
        # (only a failing test waits it out), not by a count of short sleeps a loaded machine can eat.
        deadline = time.monotonic() + 120.0
        page = client.get("/").text
        while f'data-wager="{LUCKY}"' not in page and time.monotonic() < deadline:
            time.sleep(0.05)
            page = client.get("/").text
    row = page[page.index(f'data-wager="{LUCKY}"') :].split("</div>", 1)[0]
    assert "<dt>Lucky Flush</dt>" in row  # its catalogue words (a seat card drops "bonus"), not its name
    assert "5.00" in row
    assert "res-win" in row
