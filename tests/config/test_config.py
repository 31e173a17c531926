"""Configuration: the default, every key's refusal naming file and key, unknown keys, key files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.config import ConfigError, load_config, parse_config
from controller.passwords import check_password, hash_password, parse_password_hash

KEY_A = "6afe0dd9c71dea2ac7f7c12ec8c46ad031e80cbe1fad9486fdd2a327fdc8cee2"
KEY_B = "ed8df8ae7518ab244c534cf0cdcdb36f774aea4c4a28ce3778e134138f1f7ad6"
HASH = hash_password("s3cret", n=2**4)  # a small N keeps the test fast; the format is the same

BASE = f"""
[table]
id = "T1"
game = "high-card-flush"
seats = 6

[banking]
mode = "house"

[limits]
min_ante_cents = 500
max_ante_cents = 50000

[timeouts]
decision_s = 30

[journal]
path = "var/journal.sqlite"

[devices.shuffler]
kind = "shuffler"
url = "serial:///dev/ttyUSB0?baudrate=115200"
key = "{KEY_A}"

[devices.sensors]
kind = "bet_sensors"
url = "sim+pty://sensors"

[devices.display]
kind = "dealer_display"
url = "socket://127.0.0.1:5020"
key = "{KEY_B}"

[panel]
bind = "127.0.0.1:8080"

[[panel.users]]
name = "alice"
role = "supervisor"
password_hash = "{HASH}"
"""


def parse(text: str, base_dir: Path | None = None) -> object:
    return parse_config(text, source="table.toml", base_dir=base_dir or Path("/srv/table"))


def edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def test_the_base_is_valid() -> None:
    config = parse_config(BASE, source="table.toml", base_dir=Path("/srv/table"))
    assert config.table_id == "T1"
    assert config.journal_path == Path("/srv/table/var/journal.sqlite")
    assert config.devices["shuffler"].key == bytes.fromhex(KEY_A)
    assert config.devices["sensors"].key is None
    assert config.devices["sensors"].simulated
    assert config.paytables["flush"].name == "hcf-flush-house"
    assert config.panel.users[0].role == "supervisor"
    assert config.rake_json() is None
    assert [device.name for device in config.devices_of_kind("bet_sensors")] == ["sensors"]
    assert [device.name for device in config.devices_of_kind("dealer_display")] == ["display"]
    assert config.paytables_json() == {
        "flush": "hcf-flush-house",
        "straight_flush": "hcf-straight-flush-house",
    }


def test_the_embedded_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(None)
    assert (config.game, config.seats, config.banking.mode) == ("high-card-flush", 6, "house")
    assert config.journal_path == tmp_path / "var" / "journal.sqlite"
    assert {device.kind for device in config.devices.values()} == {
        "shuffler",
        "bet_sensors",
        "dealer_display",
    }
    assert all(
        device.url.startswith("sim+pty://") and device.key is None for device in config.devices.values()
    )


BAD = [
    # (the configuration text, the exact error after "table.toml: ")
    (BASE.replace("[table]", "[table"), "not valid TOML: "),
    (edit('id = "T1"', ""), "table.id: missing"),
    (edit('id = "T1"', 'id = "T-1"'), "table.id: 'T-1': 1 to 32 letters"),
    # A final line break is no letter: it would reach round ids, NATS subjects and log lines.
    (edit('id = "T1"', 'id = "T1\\n"'), "table.id: 'T1\\n': 1 to 32 letters"),
    (edit('id = "T1"', "id = 7"), "table.id: must be a string, not an integer"),
    (
        edit('game = "high-card-flush"', 'game = "high-card-flsh"'),
        "table.game: 'high-card-flsh' is not one of: high-card-flush, top-flush, chase-the-flush "
        "(did you mean 'high-card-flush'?)",
    ),
    (
        edit("seats = 6", "seats = 7"),
        "table.seats: 7 is out of range 1..6 (one deck serves that many hands and the banker's)",
    ),
    (edit("seats = 6", "seats = 0"), "table.seats: 0 is out of range 1..6"),
    (edit("seats = 6", "seats = 6.0"), "table.seats: must be a whole number, not a float 6.0"),
    (edit("seats = 6", "seat = 6"), "table.seat: unknown key (did you mean 'seats'?)"),
    (
        edit('mode = "house"', 'mode = "player"'),
        "banking.mode: 'player' is not one of: house, designated-player",
    ),
    (
        edit('game = "high-card-flush"', 'game = "top-flush"').replace(
            'mode = "house"', 'mode = "designated-player"'
        ),
        "banking.mode: top-flush is house-banked only",
    ),
    (
        edit('mode = "house"', 'mode = "house"\nhouse_banks_when_nobody_accepts = true'),
        "banking.house_banks_when_nobody_accepts: only a designated-player table has a bank to accept",
    ),
    (
        edit("min_ante_cents = 500", "min_ante_cents = 5.0"),
        "limits.min_ante_cents: must be a whole number, not a float 5.0 (amounts are whole cents)",
    ),
    (
        edit("min_ante_cents = 500", "min_ante_cents = -5"),
        "limits.min_ante_cents: -5 is out of range 1..10000000000",
    ),
    (
        edit("min_ante_cents = 500", 'min_ante_cents = "500"'),
        "limits.min_ante_cents: must be a whole number, not a string '500' (amounts are whole cents)",
    ),
    (
        edit("max_ante_cents = 50000", "max_ante_cents = 100"),
        "limits.max_ante_cents: 100 is below min_ante_cents 500",
    ),
    (edit("max_ante_cents = 50000", ""), "limits.max_ante_cents: missing"),
    (
        BASE.replace("[limits]\nmin_ante_cents = 500\nmax_ante_cents = 50000\n", ""),
        "limits: missing (a table like [limits])",
    ),
    (
        edit("max_ante_cents = 50000", "max_ante_cents = 50000\naggregate_bonus_cap_cents = 100"),
        "limits.aggregate_bonus_cap_cents: "
        "the aggregate bonus cap applies to designated-player tables (docs/rules.md)",
    ),
    (
        edit("max_ante_cents = 50000", "max_ante_cents = 50000\naggregate_bonus_cap = 100"),
        "limits.aggregate_bonus_cap: unknown key (did you mean 'aggregate_bonus_cap_cents'?)",
    ),
    (
        BASE + '\n[paytables]\nflush = "hcf-flush-nope"\n',
        "paytables.flush: unknown paytable preset 'hcf-flush-nope'",
    ),
    (BASE + "\n[paytables]\nflush = { 8 = 300 }\n", "paytables.flush: line '8' is not a length from 1 to 7"),
    (
        BASE + "\n[paytables]\nflush = { 7 = -3 }\n",
        "paytables.flush.7: odds must be a whole number",
    ),
    (
        BASE + '\n[paytables]\nxtra_bonus = "xtra-bonus"\n',
        "paytables.xtra_bonus: unknown key (known: flush, straight_flush)",
    ),
    (
        edit('game = "high-card-flush"', 'game = "top-flush"') + '\n[paytables]\nprogressive = "x"\n',
        "paytables.progressive: the Progressive wager's paytable is in its own [progressive] section",
    ),
    (
        BASE + '\n[rake]\nmethod = "all_players"\namount_cents = 100\n',
        "rake: only a designated-player table takes a rake (docs/rules.md)",
    ),
    (
        edit("decision_s = 30", "decision_s = 0"),
        "timeouts.decision_s: 0 is out of range: more than 0 and at most 3600 seconds",
    ),
    (
        edit("decision_s = 30", 'decision_s = "30s"'),
        "timeouts.decision_s: must be a number of seconds, not a string",
    ),
    (
        edit("decision_s = 30", "decision_s = 30\ndp_offer_s = 10"),
        "timeouts.dp_offer_s: only a designated-player table offers the bank",
    ),
    (edit('path = "var/journal.sqlite"', 'path = ""'), "journal.path: empty"),
    (
        edit('path = "var/journal.sqlite"', 'file = "x"'),
        "journal.file: unknown key (known: path, commit_delay_ms, anchor_key_file, segment_entries, "
        "segment_per_gaming_day, gaming_day_start_utc, archive_dir, retention_days)",
    ),
    (
        edit('path = "var/journal.sqlite"', 'path = "j.sqlite"\ncommit_delay_ms = 50'),
        "journal.commit_delay_ms: 50 is out of range 0..10",
    ),
    (
        edit('path = "var/journal.sqlite"', 'path = "j.sqlite"\ncommit_delay_ms = 1.5'),
        "journal.commit_delay_ms: must be a whole number, not a float 1.5",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "serail:///dev/ttyUSB0"'),
        "devices.shuffler.url: 'serail:///dev/ttyUSB0': "
        "the scheme must be one of serial, socket, usb, sim, sim+pty, sim+tcp, sim+usb (or a /dev/... path)",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "serial:///dev/ttyUSB0?baudrate=fast"'),
        "devices.shuffler.url: 'serial:///dev/ttyUSB0?baudrate=fast': "
        "baudrate 'fast' is not a rate from 300 to 4000000",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "serial://"'),
        "devices.shuffler.url: 'serial://': a serial URL names the port",
    ),
    (
        edit('url = "socket://127.0.0.1:5020"', 'url = "socket://127.0.0.1"'),
        "devices.display.url: 'socket://127.0.0.1': a TCP URL is socket://HOST:PORT",
    ),
    (
        edit('url = "socket://127.0.0.1:5020"', 'url = "socket://127.0.0.1:99999"'),
        "devices.display.url: 'socket://127.0.0.1:99999': bad port",
    ),
    (
        edit('url = "socket://127.0.0.1:5020"', 'url = "usb://1d50-6018"'),
        "devices.display.url: 'usb://1d50-6018': a USB URL is usb://VID:PID",
    ),
    # A control character (a final line break the most likely) in a device path or URL: refused before
    # it is parsed, since urlsplit drops a line break and would leave the config holding it.
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "COM3\\n"'),
        "devices.shuffler.url: 'COM3\\n': holds the control character '\\n'",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "/dev/ttyUSB0\\n"'),
        "devices.shuffler.url: '/dev/ttyUSB0\\n': holds the control character '\\n'",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "/dev/tty\\u007fUSB0"'),
        "devices.shuffler.url: '/dev/tty\\x7fUSB0': holds the control character '\\x7f'",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "devices/shuffler\\n"'),
        "devices.shuffler.url: 'devices/shuffler\\n': holds the control character '\\n'",
    ),
    (
        edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "serial:///dev/ttyUSB0\\r"'),
        "devices.shuffler.url: 'serial:///dev/ttyUSB0\\r': holds the control character '\\r'",
    ),
    (
        edit('url = "socket://127.0.0.1:5020"', 'url = "usb://1d50:6018\\n"'),
        "devices.display.url: 'usb://1d50:6018\\n': holds the control character '\\n'",
    ),
    (
        edit('url = "sim+pty://sensors"', 'url = "sim+pty://sensors\\n"'),
        "devices.sensors.url: 'sim+pty://sensors\\n': holds the control character '\\n'",
    ),
    (
        edit('url = "sim+pty://sensors"', 'url = "sim+pty://sen\\tsors"'),
        "devices.sensors.url: 'sim+pty://sen\\tsors': holds the control character '\\t'",
    ),
    (
        edit('url = "sim+pty://sensors"', 'url = "sim+tcp://10.0.0.5:4000"'),
        "devices.sensors.url: 'sim+tcp://10.0.0.5:4000': a simulated device listens on loopback only",
    ),
    (
        edit('url = "sim+pty://sensors"', 'url = "sim+pty://"'),
        "devices.sensors.url: 'sim+pty://': a simulated device URL names it",
    ),
    (edit('url = "sim+pty://sensors"', "url = 5"), "devices.sensors.url: must be a string, not an integer"),
    (
        edit('kind = "bet_sensors"', 'kind = "sensors"'),
        "devices.sensors.kind: 'sensors' is not one of: shuffler, bet_sensors, dealer_display",
    ),
    (edit('kind = "bet_sensors"', 'kind = "shuffler"'), "devices: 2 shuffler devices; a table has one"),
    (
        edit('kind = "dealer_display"', 'kind = "bet_sensors"'),
        "devices: no dealer_display device (every table has a shuffler, bet_sensors and a dealer_display)",
    ),
    (
        edit("[devices.sensors]", "[devices.Sensors]"),
        "devices.Sensors: a device name is 1 to 32 of a-z, 0-9 and '_', starting with a letter",
    ),
    (
        edit(
            f'kind = "shuffler"\nurl = "serial:///dev/ttyUSB0?baudrate=115200"\nkey = "{KEY_A}"',
            'kind = "shuffler"\nurl = "serial:///dev/ttyUSB0?baudrate=115200"',
        ),
        "devices.shuffler.key: missing: a real device needs its 32-byte key (key or key_file)",
    ),
    (
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', 'baudrate=115200"\nkey = "abc"'),
        "devices.shuffler.key: not hex digits",
    ),
    (
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', 'baudrate=115200"\nkey = "abcd"'),
        "devices.shuffler.key: 2 bytes; a device key is 32 bytes (64 hex digits)",
    ),
    (
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', f'baudrate=115200"\nkey = "{"00" * 32}"'),
        "devices.shuffler.key: every byte the same: not a real key",
    ),
    (
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', f'baudrate=115200"\nkey = "{KEY_A}"\nkey_file = "k"'),
        "devices.shuffler.key_file: give key or key_file, not both",
    ),
    (
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', 'baudrate=115200"\nkey_file = "keys/missing.hex"'),
        "devices.shuffler.key_file: /srv/table/keys/missing.hex: no such file",
    ),
    (
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', f'baudrate=115200"\nkey = "{KEY_A}"\nport = 3'),
        "devices.shuffler.port: unknown key (known: kind, url, key, key_file)",
    ),
    (
        BASE.split("[devices.shuffler]", maxsplit=1)[0] + "[panel]\n",
        "devices: missing (a table like [devices])",
    ),
    (
        edit('bind = "127.0.0.1:8080"', 'bind = "127.0.0.1"'),
        "panel.bind: '127.0.0.1' is not HOST:PORT with a port from 1 to 65535",
    ),
    (
        edit('role = "supervisor"', 'role = "admin"'),
        "panel.users[0].role: 'admin' is not one of: viewer, supervisor, manager",
    ),
    (
        edit('name = "alice"', 'name = "alice smith"'),
        "panel.users[0].name: 'alice smith': 1 to 64 letters, digits or . _ @ -",
    ),
    (
        edit('name = "alice"', 'name = "alice\\n"'),
        "panel.users[0].name: 'alice\\n': 1 to 64 letters, digits or . _ @ -",
    ),
    (
        edit(f'password_hash = "{HASH}"', 'password_hash = "hunter2"'),
        "panel.users[0].password_hash: not a scrypt hash of the form scrypt$N$r$p$SALT_HEX$KEY_HEX",
    ),
    (
        edit(
            f'password_hash = "{HASH}"',
            'password_hash = "scrypt$1000$8$1$00112233445566778899$00112233445566778899aabbccddeeff"',
        ),
        "panel.users[0].password_hash: scrypt hash: N must be a power of two from 2 to 1048576",
    ),
    (
        edit(f'password_hash = "{HASH}"', f'password_hash = "{HASH}"\npassword = "x"'),
        "panel.users[0].password: unknown key",
    ),
    (
        BASE + f'\n[[panel.users]]\nname = "alice"\nrole = "viewer"\npassword_hash = "{HASH}"\n',
        "panel.users[1].name: 'alice' appears twice",
    ),
    (
        BASE + '\n[logging]\nlevel = "loud"\n',
        "logging.level: 'loud' is not one of: debug, info, warning, error",
    ),
    (BASE + "\n[extras]\nx = 1\n", "extras: unknown key"),
    ("table = 5\n", "table: must be a table, not an integer"),
    # A number too long for Python to read (tomllib raised a ValueError: it was a traceback).
    (edit("seats = 6", "seats = " + "9" * 5000), "not valid TOML: a number of more than 4300 digits"),
    (edit("seats = 6", "seats = " + "9" * 4000), "table.seats: a many-digit number is out of range 0..1000"),
]


@pytest.mark.parametrize(
    ("text", "message"), BAD, ids=[message.split(":")[0] + f"-{i}" for i, (_, message) in enumerate(BAD)]
)
def test_a_bad_configuration_is_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(text)
    error = str(raised.value)
    assert error.startswith("table.toml: " + message), error
    assert "\n" not in error


def test_a_device_name_with_a_final_line_break_is_refused() -> None:
    # Not in BAD: the key path names the key as written, line break and all (the refusal is the point).
    with pytest.raises(ConfigError, match="a device name is 1 to 32 of a-z, 0-9 and '_'"):
        parse(edit("[devices.sensors]", '[devices."sensors\\n"]'))


def test_designated_player_table_with_rake_cap_and_a_custom_paytable() -> None:
    text = (
        edit('mode = "house"', 'mode = "designated-player"')
        .replace("seats = 6", "seats = 7")
        .replace("max_ante_cents = 50000", "max_ante_cents = 50000\naggregate_bonus_cap_cents = 2000000")
        + '\n[rake]\nmethod = "dp_only"\namount_cents = 50\n'
        + "[paytables]\nstraight_flush = { 7 = 900, 3 = 9 }\n"
    )
    config = parse_config(text, source="table.toml", base_dir=Path("/srv"))
    assert config.seats == 7
    assert config.rake_json() == {"method": "iii", "amount": 50}
    assert config.limits.aggregate_bonus_cap_cents == 2_000_000
    assert config.paytables["flush"].name == "hcf-flush-dp"
    assert config.paytables_json()["straight_flush"] == {"7": 900, "3": 9}
    # With the house allowed to bank a round, the house needs its own hand: one seat fewer.
    with pytest.raises(ConfigError, match=r"table.seats: 7 is out of range 1..6"):
        parse(
            text.replace(
                'mode = "designated-player"',
                'mode = "designated-player"\nhouse_banks_when_nobody_accepts = true',
            )
        )
    with pytest.raises(ConfigError, match=r"table.seats: a designated-player table needs at least 2 seats"):
        parse(text.replace("seats = 7", "seats = 1"))
    with pytest.raises(
        ConfigError, match=r"rake.method: 'i' is not one of: all_players, players_not_dp, dp_only"
    ):
        parse(text.replace('method = "dp_only"', 'method = "i"'))


def test_key_file_is_read_relative_to_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "shuffler.hex").write_text(KEY_A.upper() + "\n")
    config_file = tmp_path / "table.toml"
    config_file.write_text(
        edit(f'baudrate=115200"\nkey = "{KEY_A}"', 'baudrate=115200"\nkey_file = "keys/shuffler.hex"')
    )
    config = load_config(config_file)
    assert config.devices["shuffler"].key == bytes.fromhex(KEY_A)
    assert config.journal_path == tmp_path / "var" / "journal.sqlite"
    (tmp_path / "keys" / "shuffler.hex").write_text("not hex")
    with pytest.raises(ConfigError, match=r"^table.toml: devices.shuffler.key_file: not hex digits$"):
        load_config(config_file)


def test_missing_or_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope.toml: no such file"):
        load_config(tmp_path / "nope.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match=r"bin\.toml: not UTF-8 text"):
        load_config(tmp_path / "bin.toml")


def test_digest_follows_the_effective_configuration() -> None:
    one = parse_config(BASE, source="a.toml", base_dir=Path("/x"))
    same = parse_config(BASE.replace("seats = 6", "seats = 6  # same"), source="b.toml", base_dir=Path("/x"))
    other = parse_config(
        BASE.replace("max_ante_cents = 50000", "max_ante_cents = 60000"), source="a.toml", base_dir=Path("/x")
    )
    assert one.digest == same.digest != other.digest
    assert KEY_A not in json.dumps(one.to_json())  # keys only as fingerprints


def test_config_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "table.toml"
    good.write_text(BASE)
    assert main(["config", "--config", str(good)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["ok"] is True
    assert printed["config"]["table_id"] == "T1"
    bad = tmp_path / "table2.toml"
    bad.write_text(edit("seats = 6", "seats = 9"))
    assert main(["config", "--config", str(bad)]) == 2
    assert capsys.readouterr().err == (
        "flushtable config: table2.toml: table.seats: 9 is out of range 1..6 "
        "(one deck serves that many hands and the banker's)\n"
    )
    assert main(["config", "--default-toml"]) == 0
    assert "[devices.shuffler]" in capsys.readouterr().out


def test_passwords() -> None:
    stored = hash_password("correct horse", n=2**4)
    assert check_password("correct horse", stored)
    assert not check_password("correct hors", stored)
    assert parse_password_hash(stored).n == 16


def test_settle_base_feeds_the_rules_engine() -> None:
    from controller.rules.settle import settle_round_json

    dp_text = (
        edit('mode = "house"', 'mode = "designated-player"\nhouse_banks_when_nobody_accepts = true').replace(
            "max_ante_cents = 50000", "max_ante_cents = 50000\naggregate_bonus_cap_cents = 2000000"
        )
        + '\n[rake]\nmethod = "all_players"\namount_cents = 25\n'
    )
    config = parse_config(dp_text, source="table.toml", base_dir=Path("/srv"))
    seats = [
        {
            "seat": 2,
            "cards": ["2c", "3c", "4c", "5c", "9d", "Jh", "Kc"],
            "wagers": {"ante": 500, "raise": 500},
        }
    ]
    dealer = ["As", "Ks", "Qs", "2d", "3d", "4h", "5h"]
    dp_round = {**config.settle_base(dp_seat=4, dp_funds_cents=100_000), "dealer": dealer, "seats": seats}
    assert dp_round["banking"] == {
        "mode": "designated-player",
        "seat": 4,
        "funds": 100_000,
        "bonus_cap": 2_000_000,
    }
    assert dp_round["rake"] == {"method": "i", "amount": 25}
    settled = settle_round_json(dp_round)
    assert settled["rake"] == 50  # the player and the DP
    house_round = {**config.settle_base(), "dealer": dealer, "seats": seats}
    assert house_round == {
        "game": "high-card-flush",
        "banking": {"mode": "house"},
        "dealer": dealer,
        "seats": seats,
    }
    assert settle_round_json(house_round)["rake"] == 0
    house_config = parse_config(BASE, source="table.toml", base_dir=Path("/srv"))
    assert house_config.settle_base()["paytables"] == {
        "flush": "hcf-flush-house",
        "straight_flush": "hcf-straight-flush-house",
    }
    with pytest.raises(ValueError, match="house-banked"):
        house_config.settle_base(dp_seat=1, dp_funds_cents=1)


def test_a_relative_device_path_is_the_files_own(tmp_path: Path) -> None:
    """A device path such as ``devices/shuffler`` is taken from the configuration file's directory, as
    ``journal.path`` and ``key_file`` are; then parsed by the one device URL parser (a serial path)."""
    text = edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "devices/shuffler"')
    config = parse_config(text, source="table.toml", base_dir=tmp_path)
    assert config.devices["shuffler"].url == str(tmp_path / "devices" / "shuffler")
    assert not config.devices["shuffler"].simulated
    with pytest.raises(
        ConfigError, match=r"^table.toml: devices.shuffler.url: 'shuffler': the scheme must be"
    ):
        parse(edit('url = "serial:///dev/ttyUSB0?baudrate=115200"', 'url = "shuffler"'))


def test_bonus_maxima_and_the_minimum_bank() -> None:
    """Every wager has a posted limit (docs/rules.md "Paytables and limits"); a designated player's bank has a
    minimum; a bonus cap or a limit of 0 is refused in the words settle refuses it in."""
    limits = "max_ante_cents = 50000\nmax_bonus_cents = { flush = 10000, straight_flush = 2500 }"
    config = parse_config(edit("max_ante_cents = 50000", limits), source="table.toml", base_dir=Path("/"))
    assert config.limits.max_bonus_cents == {"flush": 10_000, "straight_flush": 2500}
    assert config.to_json()["limits"]["max_bonus_cents"] == {"flush": 10_000, "straight_flush": 2500}
    assert "max_bonus_cents" not in load_config().to_json()["limits"]  # the default's digest is unchanged
    with pytest.raises(ConfigError) as raised:
        parse(edit("max_ante_cents = 50000", "max_ante_cents = 50000\nmax_bonus_cents = { raise = 1 }"))
    assert str(raised.value) == (
        "table.toml: limits.max_bonus_cents.raise: not a bonus wager of high-card-flush "
        "(bonus wagers: flush, straight_flush)"
    )
    with pytest.raises(ConfigError, match=r"limits.max_bonus_cents.flush: must be at least 1 cent"):
        parse(edit("max_ante_cents = 50000", "max_ante_cents = 50000\nmax_bonus_cents = { flush = 0 }"))
    dp = edit('mode = "house"', 'mode = "designated-player"').replace("seats = 6", "seats = 7")
    assert parse_config(dp, source="t", base_dir=Path("/")).min_bank_cents == 2000  # 4 x min ante
    own = dp + "\n[designated_player]\nmin_bank_cents = 100000\n"
    assert parse_config(own, source="t", base_dir=Path("/")).min_bank_cents == 100_000
    with pytest.raises(ConfigError, match=r"designated_player: only a designated-player table has a bank"):
        parse(BASE + "\n[designated_player]\nmin_bank_cents = 100000\n")
    with pytest.raises(ConfigError) as raised:
        parse(dp.replace("max_ante_cents = 50000", "max_ante_cents = 50000\naggregate_bonus_cap_cents = 0"))
    assert str(raised.value) == (
        "table.toml: limits.aggregate_bonus_cap_cents: must be at least 1 cent "
        "(0 would allow or pay nothing; leave it out for none)"
    )
