"""Configuration refusals (docs/configuration.md "Refused on purpose"): a key shared by two devices, and a
paytable that pays a better hand less than a worse one unless the configuration says so, in which case
`flushtable math` shows it."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from controller.config import ConfigError, load_config, parse_config
from controller.gamemath.cache import CACHE_ENV
from controller.rules.paytables import PRESETS
from tests.config.test_config import KEY_A, KEY_B, edit

TOP_FLUSH = """
[table]
id = "TF1"
game = "top-flush"

[limits]
min_ante_cents = 500
max_ante_cents = 50000

[devices.shuffler]
kind = "shuffler"
url = "sim+pty://shuffler"

[devices.sensors]
kind = "bet_sensors"
url = "sim+pty://sensors"

[devices.display]
kind = "dealer_display"
url = "sim+pty://display"
"""


def parse(text: str, base_dir: Path = Path("/srv/table")) -> object:
    return parse_config(text, source="table.toml", base_dir=base_dir)


def test_a_key_shared_by_two_devices_is_refused_naming_the_second() -> None:
    shared = edit(
        f'url = "socket://127.0.0.1:5020"\nkey = "{KEY_B}"',
        f'url = "socket://127.0.0.1:5020"\nkey = "{KEY_A}"',
    )
    with pytest.raises(ConfigError) as refused:
        parse(shared)
    assert str(refused.value) == (
        "table.toml: devices.display.key: the same key as devices.shuffler: every device has its own key "
        "(generate one per device with `openssl rand -hex 32`)"
    )


def test_a_key_file_holding_another_devices_key_is_refused(tmp_path: Path) -> None:
    """The same key reached through a file (upper case, a newline) is the same key."""
    (tmp_path / "display.hex").write_text(KEY_A.upper() + "\n")
    text = edit(
        f'url = "socket://127.0.0.1:5020"\nkey = "{KEY_B}"',
        'url = "socket://127.0.0.1:5020"\nkey_file = "display.hex"',
    )
    (tmp_path / "table.toml").write_text(text)
    with pytest.raises(
        ConfigError, match=r"^table.toml: devices.display.key_file: the same key as devices.shuffler"
    ):
        load_config(tmp_path / "table.toml")
    (tmp_path / "display.hex").write_text(KEY_B + "\n")
    assert load_config(tmp_path / "table.toml").devices["display"].key == bytes.fromhex(KEY_B)


def test_simulated_devices_without_keys_share_nothing() -> None:
    config = parse_config(TOP_FLUSH, source="t.toml", base_dir=Path("/srv"))
    assert all(device.key is None for device in config.devices.values())  # each gets its own at run time


INVERTED = TOP_FLUSH + "\n[paytables]\ntop_flush_bonus = { 7 = 300, 6 = 400, 5 = 10, 4 = 1 }\n"


def test_an_inverted_paytable_is_refused_saying_where() -> None:
    with pytest.raises(ConfigError) as refused:
        parse(INVERTED)
    assert str(refused.value) == (
        "table.toml: paytables.top_flush_bonus: inverted: line 7 pays 300 to 1, less than line 6 (400 to 1); "
        "a better hand must not pay less than a worse one "
        "(if the house means it, say so: allow_inverted = true in this paytable)"
    )


def test_every_inversion_is_named() -> None:
    text = TOP_FLUSH + "\n[paytables]\ntop_flush_bonus = { 7 = 5, 6 = 100, 5 = 10 }\n"
    with pytest.raises(
        ConfigError,
        match=r"line 7 pays 5 to 1, less than line 6 \(100 to 1\); line 7 pays 5 to 1, less than line 5",
    ):
        parse(text)


def test_equal_lines_are_not_inverted_and_no_preset_is() -> None:
    parse(TOP_FLUSH + "\n[paytables]\ntop_flush_bonus = { 7 = 100, 6 = 100, 5 = 10 }\n")
    assert {name: table.inversions() for name, table in PRESETS.items() if table.inversions()} == {}


def test_allow_inverted_keeps_the_table_marks_it_and_changes_the_digest() -> None:
    allowed = INVERTED.replace("4 = 1 }", "4 = 1, allow_inverted = true }")
    config = parse_config(allowed, source="t.toml", base_dir=Path("/srv"))
    table = config.paytables["top_flush_bonus"]
    assert table.allow_inverted
    assert (table.odds_for(7), table.odds_for(6)) == (300, 400)
    assert config.to_json()["paytables"]["top_flush_bonus"]["allow_inverted"] is True
    assert config.paytables_json()["top_flush_bonus"] == {
        "7": 300,
        "6": 400,
        "5": 10,
        "4": 1,
    }  # settle's shape
    straight = TOP_FLUSH + "\n[paytables]\ntop_flush_bonus = { 7 = 400, 6 = 300, 5 = 10, 4 = 1 }\n"
    assert parse_config(straight, source="t.toml", base_dir=Path("/srv")).to_json()["paytables"][
        "top_flush_bonus"
    ] == {
        "name": "custom",
        "lines": {"7": 400, "6": 300, "5": 10, "4": 1},
    }


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("allow_inverted = 1", "paytables.top_flush_bonus.allow_inverted: must be true or false, not 1"),
        (
            "allow_inverted = true",
            "paytables.top_flush_bonus.allow_inverted: the table is not inverted; leave the flag out",
        ),
    ],
)
def test_allow_inverted_is_a_boolean_and_only_where_it_is_needed(flag: str, message: str) -> None:
    text = TOP_FLUSH + f"\n[paytables]\ntop_flush_bonus = {{ 7 = 300, 6 = 100, {flag} }}\n"
    with pytest.raises(ConfigError) as refused:
        parse(text)
    assert str(refused.value) == f"table.toml: {message}"


def test_the_par_sheet_of_a_configuration_shows_the_inverted_paytable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The par sheet kept in a cache of this test's own, not the user's ~/.cache (shared by every run and
    # by both pytest-xdist workers).
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "par-sheets"))
    config_file = tmp_path / "table.toml"
    config_file.write_text(INVERTED.replace("4 = 1 }", "4 = 1, allow_inverted = true }"))
    assert main(["math", "--config", str(config_file)]) == 0
    report, progress = capsys.readouterr()
    assert f"kept in the cache {tmp_path / 'par-sheets'}/" in progress
    assert "Par sheet: top-flush (house-banked)" in report
    assert (
        "Side bet top_flush_bonus (custom)\n"
        "  INVERTED paytable (allow_inverted = true): line 7 pays 300 to 1, less than line 6 (400 to 1)\n"
    ) in report
    assert "INVERTED" not in report.split("Side bet straight_flush_jackpot")[1]
    # Without the flag neither the table nor the par sheet is accepted; the same for --paytable.
    config_file.write_text(INVERTED)
    assert main(["math", "--config", str(config_file)]) == 2
    assert "paytables.top_flush_bonus: inverted: line 7 pays 300" in capsys.readouterr().err
    option = 'top_flush_bonus={"7": 300, "6": 400}'
    assert main(["math", "--game", "top-flush", "--paytable", option]) == 2
    assert capsys.readouterr().err.startswith(
        "flushtable math: --paytable top_flush_bonus: inverted: line 7 pays 300"
    )
