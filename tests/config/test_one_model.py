"""One model for the three readers of a table's settings: the configuration file, the engine's
TableConfig and `flushtable settle`'s input share the seat rule and the rake (controller/settings.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import parse_config
from controller.daemon import engine_config_for
from controller.engine import TableConfig as EngineConfig
from controller.errors import UserError
from controller.names import DESIGNATED_PLAYER, RakeMethod
from controller.rules.settle import parse_round
from tests.config.test_config import BASE, edit

SEVEN = (1, 2, 3, 4, 5, 6, 7)


def test_the_engine_takes_the_configurations_seat_rule() -> None:
    """docs/rules.md: one deck serves six 7-card hands and the banker's. A designated-player table may have 7
    seats (the banker sits at one), but not when the house may bank a round: then 7 players and the
    house would need 56 cards. The engine used to allow that; now both refuse it the same way."""
    assert EngineConfig(banking_mode=DESIGNATED_PLAYER, seats=SEVEN).seats == SEVEN
    with pytest.raises(UserError, match=r"^seats: 7 is out of range 1..6 \(one deck serves"):
        EngineConfig(banking_mode=DESIGNATED_PLAYER, seats=SEVEN, house_may_bank=True)
    with pytest.raises(UserError, match=r"^seats: 7 is out of range 1..6"):
        EngineConfig(seats=SEVEN)
    assert EngineConfig(game="chase-the-flush", seats=SEVEN).seats == SEVEN
    with pytest.raises(UserError, match=r"^seats: a designated-player table needs at least 2 seats"):
        EngineConfig(banking_mode=DESIGNATED_PLAYER, seats=(3,))
    with pytest.raises(UserError, match=r"^seats: give each seat number once"):
        EngineConfig(seats=(1, 1))
    with pytest.raises(UserError, match=r"^seats: seat numbers are 1..7, not 8"):
        EngineConfig(seats=(8,))


def test_the_engine_refuses_its_fields_in_one_line() -> None:
    for fields, message in [
        ({"game": "poker"}, r"^game: unknown game 'poker'"),
        ({"banking_mode": "player"}, r"^banking_mode: must be 'house' or 'designated-player'"),
        (
            {"game": "top-flush", "banking_mode": DESIGNATED_PLAYER},
            r"^banking_mode: top-flush is house-banked only",
        ),
        (
            {"min_ante_cents": 500, "max_ante_cents": 100},
            r"^min_ante_cents: must be positive and at most max_ante",
        ),
        ({"min_ante_cents": 5.0}, r"^min_ante_cents: must be a whole number of cents"),
        (
            {"rake": {"method": "ii", "amount": 50}},
            r"^rake: a rake is taken only in the designated-player mode",
        ),
        (
            {"banking_mode": DESIGNATED_PLAYER, "rake": {"method": "iv", "amount": 50}},
            r"^rake.method: must be 'i'",
        ),
        ({"banking_mode": DESIGNATED_PLAYER, "rake": {"method": "i"}}, r"^rake.amount: missing"),
        (
            {"banking_mode": DESIGNATED_PLAYER, "rake": {"method": "i", "amount": 5, "x": 1}},
            r"^rake.x: unknown",
        ),
        ({"decision_timeout_s": 0}, r"^decision_timeout_s: must be positive"),
    ]:
        with pytest.raises(UserError, match=message):
            EngineConfig(**fields)  # type: ignore[arg-type]


def test_the_rake_is_one_model_spelled_by_each_contract() -> None:
    """The file's word and settle's numeral are the names and values of one RakeMethod."""
    text = (
        edit('mode = "house"', 'mode = "designated-player"').replace("seats = 6", "seats = 7")
        + '\n[rake]\nmethod = "players_not_dp"\namount_cents = 50\n'
    )
    config = parse_config(text, source="t.toml", base_dir=Path("/srv"))
    assert config.rake is not None
    assert config.rake.method is RakeMethod.PLAYERS_NOT_DP
    assert config.rake_json() == {"method": "ii", "amount": 50}
    engine = engine_config_for(config)
    assert engine.rake == {"method": "ii", "amount": 50}
    assert engine.seats == SEVEN
    settle_rake = parse_round(
        {
            **config.settle_base(dp_seat=1, dp_funds_cents=100_000),
            "dealer": ["As", "Ks", "Qs", "2d", "3d", "4h", "5h"],
            "seats": [
                {
                    "seat": 2,
                    "cards": ["2c", "3c", "4c", "5c", "9d", "Jh", "Kc"],
                    "wagers": {"ante": 500},
                    "folded": True,
                }
            ],
        }
    ).rake
    assert settle_rake is not None
    assert (settle_rake.method, settle_rake.amount_cents) == ("ii", 50)
    assert [method.word for method in RakeMethod] == ["all_players", "players_not_dp", "dp_only"]


def test_the_house_config_and_its_engine_agree_on_seats() -> None:
    config = parse_config(BASE, source="t.toml", base_dir=Path("/srv"))
    assert engine_config_for(config).seats == (1, 2, 3, 4, 5, 6)
