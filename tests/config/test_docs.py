"""docs/configuration.md: every TOML example on the page is a valid configuration."""

from __future__ import annotations

import re
from pathlib import Path

from controller.config import load_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def examples() -> list[str]:
    """The page's table files in page order, the progressive table's left out (tested on its own), and
    a floor file's fragment (the pit map's) too."""
    return [
        example
        for example in all_examples()
        if 'id = "TFP1"' not in example and example.lstrip().startswith("[table]")
    ]


def all_examples() -> list[str]:
    return re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_stand_alone_progressive_example_loads(tmp_path: Path) -> None:
    (progressive,) = [example for example in all_examples() if 'id = "TFP1"' in example]
    (tmp_path / "table.toml").write_text(progressive)
    config = load_config(tmp_path / "table.toml")
    assert config.game == "top-flush"
    assert config.progressive is not None
    assert (config.progressive.unit_cents, config.progressive.base_cents) == (100, 100_000)


def test_the_complete_example_loads(tmp_path: Path) -> None:
    complete, minimal, _designated = examples()
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "sensors.hex").write_text("1f" * 31 + "2e\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "nats-table.pw").write_text("table-password\n")
    (tmp_path / "secrets" / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "table.toml").write_text(complete)
    config = load_config(tmp_path / "table.toml")
    assert config.table_id == "HCF3"
    assert config.banking.mode == "designated-player"
    assert config.rake_json() == {"method": "ii", "amount": 100}
    assert config.limits.aggregate_bonus_cap_cents == 5_000_000
    assert {device.kind for device in config.devices.values()} == {
        "shuffler",
        "bet_sensors",
        "dealer_display",
    }
    assert not any(device.simulated for device in config.devices.values())
    assert [user.role for user in config.panel.users] == ["supervisor", "viewer"]
    assert config.uplink is not None
    assert (config.uplink.site, config.uplink.user) == ("main", "table-HCF3")
    assert config.uplink.password == "table-password"
    assert config.uplink.ca_file == tmp_path / "secrets" / "floor-ca.pem"
    (tmp_path / "ctf.toml").write_text(minimal)
    small = load_config(tmp_path / "ctf.toml")
    assert (small.game, small.seats) == ("chase-the-flush", 7)


def test_every_key_in_the_complete_example_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    complete = examples()[0]
    for key in re.findall(r"^(\w+) =", complete, flags=re.MULTILINE):
        assert f"`{key}`" in text, key


def test_the_designated_player_example_plays_with_simulated_players(tmp_path: Path) -> None:
    """`flushtable run --config dp.toml` with simulated players: the real daemon and devices over
    pseudo-terminals, three rounds, every recalled round re-settled identically."""
    from tests.daemon.harness import check_recall_settles, run_daemon

    _complete, _minimal, designated = examples()
    (tmp_path / "dp.toml").write_text(designated)
    config = load_config(tmp_path / "dp.toml")
    assert (config.banking.mode, config.min_bank_cents) == ("designated-player", 20_000)
    assert config.limits.max_bonus_cents == {"flush": 2500, "straight_flush": 1000}
    journal_path = tmp_path / "var" / "dp-journal.sqlite"
    run_daemon(config, journal_path, rounds=3, seed=7, autoplay=True, timeout_s=90.0)
    records = check_recall_settles(journal_path)
    assert len(records) >= 3
    assert {record["round"]["banking"]["mode"] for record in records} == {"designated-player"}
