"""The floor service's file, ``[floor]`` (controller/floor/config.py ``FloorSection``): what it gives the
service, every refusal in one line naming the file and the key, through the real CLI (`flushtable floor
release` and `flushtable floor serve` read it), and ``write_floor_config`` writing what the loader reads.
Real files in a temporary directory: the secrets are read from files next to the configuration."""

from __future__ import annotations

import dataclasses
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main
from controller.floor.config import (
    FloorConfigError,
    FloorSection,
    PanelSection,
    load_floor_config,
    write_floor_config,
)
from controller.floor.service import FloorConfig
from controller.uplink.wire import FLOOR_INBOX

ROOT = Path(__file__).resolve().parents[2]
# Nothing listens on port 1: a command that gets past the file fails at PostgreSQL, in one line too.
NO_POSTGRES_DSN = "host=127.0.0.1 port=1 dbname=floor user=floor_writer connect_timeout=2"

FLOOR = """[floor]
servers = ["tls://floor-nats.casino.lan:4222", "tls://floor-nats-2.casino.lan:4222"]
user = "floor-reader"
password_file = "nats-floor.pw"
ca_file = "floor-ca.pem"
dsn_file = "floor-writer.dsn"
batch_size = 2000
"""


@pytest.fixture
def floor_dir(tmp_path: Path) -> Path:
    (tmp_path / "nats-floor.pw").write_text("s3cret-floor-password\n")
    (tmp_path / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "floor-writer.dsn").write_text(NO_POSTGRES_DSN + "\n")
    return tmp_path


def _release(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`flushtable floor release T1 ... --config FILE` through the CLI's main: (exit code, out, err)."""
    code = main(["floor", "release", "T1", "--reason", "test", "--by", "maria", "--config", str(config)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_file_as_the_service_reads_it(floor_dir: Path) -> None:
    (floor_dir / "floor.toml").write_text(FLOOR)
    config = load_floor_config(floor_dir / "floor.toml")
    assert config == FloorConfig(
        servers=("tls://floor-nats.casino.lan:4222", "tls://floor-nats-2.casino.lan:4222"),
        user="floor-reader",
        password="s3cret-floor-password",
        ca_file=floor_dir / "floor-ca.pem",
        dsn=NO_POSTGRES_DSN,
    )
    # The knobs left out are the service's own defaults; the secrets never show in its repr.
    assert (config.fetch_timeout_s, config.sweep_interval_s, config.release_poll_interval_s) == (
        0.05,
        5.0,
        1.0,
    )
    assert (config.backoff_initial_s, config.backoff_max_s, config.inbox_prefix) == (0.2, 5.0, FLOOR_INBOX)
    assert "s3cret" not in repr(config)
    assert "port=1" not in repr(config)


def test_the_tuning_knobs(floor_dir: Path) -> None:
    tuned = FLOOR.replace("batch_size = 2000\n", "batch_size = 200\n") + (
        "fetch_timeout_s = 0.1\nsweep_interval_s = 60\nrelease_poll_interval_s = 2.5\n"
        "reconcile_interval_s = 30\n"
        "backoff_initial_s = 1\nbackoff_max_s = 30\n"
    )
    (floor_dir / "floor.toml").write_text(tuned)
    config = load_floor_config(floor_dir / "floor.toml")
    assert config.batch_size == 200
    assert (config.fetch_timeout_s, config.sweep_interval_s, config.release_poll_interval_s) == (
        0.1,
        60.0,
        2.5,
    )
    assert (config.backoff_initial_s, config.backoff_max_s) == (1.0, 30.0)
    assert config.reconcile_interval_s == 30.0


def test_secrets_are_read_relative_to_the_file_not_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "nats-floor.pw").write_text("pw-from-secrets\n")
    (tmp_path / "secrets" / "floor-writer.dsn").write_text("host=db.casino.lan dbname=floor\n")
    (tmp_path / "etc" / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    text = FLOOR.replace('"nats-floor.pw"', '"../secrets/nats-floor.pw"').replace(
        '"floor-writer.dsn"', '"../secrets/floor-writer.dsn"'
    )
    (tmp_path / "etc" / "floor.toml").write_text(text)
    assert Path.cwd() != tmp_path / "etc"
    config = load_floor_config(tmp_path / "etc" / "floor.toml")
    assert (config.password, config.dsn) == ("pw-from-secrets", "host=db.casino.lan dbname=floor")
    assert config.ca_file == (tmp_path / "etc" / "floor-ca.pem").resolve()


def test_write_floor_config_writes_what_load_reads(tmp_path: Path) -> None:
    ca_file = tmp_path / "a dir 'with' \"quotes\"" / "floor-ca.pem"
    ca_file.parent.mkdir()
    ca_file.write_text("-----BEGIN CERTIFICATE-----\n")
    for config in (
        FloorConfig(
            servers=("tls://127.0.0.1:4222",),
            user="floor-reader",
            password="pw",
            ca_file=ca_file,
            dsn="host=127.0.0.1 port=5432 dbname=floor",
        ),
        FloorConfig(  # every knob off its default, and strings TOML must escape
            servers=("tls://a.casino.lan:4222", "tls://b.casino.lan:4222"),
            user='floor "reader" \\ east',
            password="p w\"'\\x",
            ca_file=ca_file,
            dsn="host=db user='floor_writer' password='a b'",
            batch_size=250,
            fetch_timeout_s=0.125,
            backoff_initial_s=0.5,
            backoff_max_s=12.0,
            sweep_interval_s=3600.0,
            release_poll_interval_s=0.2,
        ),
    ):
        path = write_floor_config(tmp_path / "out", config)
        assert load_floor_config(path) == config
        for secret in ("nats-floor.pw", "floor-writer.dsn"):
            assert stat.S_IMODE((tmp_path / "out" / secret).stat().st_mode) == 0o600


def test_write_floor_config_refuses_an_inbox_the_file_cannot_hold(tmp_path: Path) -> None:
    config = FloorConfig(("tls://h:4222",), "u", "pw", tmp_path / "ca.pem", "dsn", inbox_prefix="_INBOX")
    with pytest.raises(ValueError, match="inbox prefix"):
        write_floor_config(tmp_path, config)
    assert not (tmp_path / "floor.toml").exists()


def test_a_valid_file_gets_the_release_command_to_postgresql(
    floor_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file is accepted and its dsn_file used: the command fails where the connection string
    points (nothing listens on port 1), not at the file."""
    (floor_dir / "floor.toml").write_text(FLOOR)
    code, out, err = _release(floor_dir / "floor.toml", capsys)
    assert (code, out) == (2, "")
    assert err.startswith("flushtable floor: PostgreSQL: "), err
    assert err.count("\n") == 1, err


SERVERS = 'servers = ["tls://floor-nats.casino.lan:4222", "tls://floor-nats-2.casino.lan:4222"]'
REFUSED = [
    # (the file's text, the exact error after "flushtable floor: FILE: ")
    (FLOOR + "batch_sise = 10\n", "floor.batch_sise: unknown key (did you mean 'batch_size'?)"),
    (
        FLOOR + "inbox_prefix = '_INBOX'\n",
        "floor.inbox_prefix: unknown key (known: servers, user, password_file, ca_file, dsn_file, "
        "batch_size, fetch_timeout_s, sweep_interval_s, release_poll_interval_s, reconcile_interval_s, "
        "backoff_initial_s, backoff_max_s, gaming_day_start_hour, surveillance_big_win_cents, "
        "surveillance_poll_interval_s)",
    ),
    (FLOOR + "gaming_day_start_hour = 24\n", "floor.gaming_day_start_hour: 24 is out of range 0..23"),
    (FLOOR.replace("[floor]", "[flor]"), "flor: unknown key (did you mean 'floor'?)"),
    (
        FLOOR + "[uplink]\nsite = 'main'\n",
        "uplink: unknown key (known: floor, panel, pits, progressive, property)",
    ),
    ("", "floor: missing (a table like [floor])"),
    ("floor = 3\n", "floor: must be a table, not an integer"),
    (FLOOR.replace(SERVERS + "\n", ""), "floor.servers: missing (an array of URLs like tls://host:4222)"),
    (
        FLOOR.replace(SERVERS, 'servers = ["nats://floor-nats.casino.lan:4222"]'),
        "floor.servers: server 1: the floor is reached over TLS only (tls://host:port)",
    ),
    # A password in a URL is refused and never quoted back (it would reach a terminal or a log).
    (
        FLOOR.replace(SERVERS, 'servers = ["tls://a.lan:4222", "nats://floor-reader:S3CRET@b.lan:4222"]'),
        "floor.servers: server 2: the floor is reached over TLS only (tls://host:port)",
    ),
    (
        FLOOR.replace(SERVERS, 'servers = ["tls://floor-reader:S3CRET@floor-nats.casino.lan:4222"]'),
        "floor.servers: server 1: no user or password in the URL (give them as user and password_file)",
    ),
    (
        FLOOR.replace(SERVERS, 'servers = ["tls://"]'),
        "floor.servers: server 1: not a URL like tls://host:4222 (a host and a port, nothing else)",
    ),
    (
        FLOOR.replace(SERVERS, 'servers = ["tls://floor-nats.casino.lan"]'),
        "floor.servers: server 1: not a URL like tls://host:4222 (a host and a port, nothing else)",
    ),
    (
        FLOOR.replace(SERVERS, 'servers = ["tls://floor-nats.casino.lan:99999"]'),
        "floor.servers: server 1: not a URL like tls://host:4222",
    ),
    (
        FLOOR.replace(SERVERS, "fetch_timeout_s = 1e-10\n" + SERVERS),
        "floor.fetch_timeout_s: 1e-10 is out of range: at least 0.001 and at most 5 seconds",
    ),
    (FLOOR.replace(SERVERS, "servers = []"), "floor.servers: a non-empty array of URLs like tls://host:4222"),
    (
        FLOOR.replace(SERVERS, 'servers = "tls://floor-nats.casino.lan:4222"'),
        "floor.servers: a non-empty array of URLs like tls://host:4222",
    ),
    (FLOOR.replace('user = "floor-reader"\n', ""), "floor.user: missing (the floor reader's NATS user)"),
    (
        FLOOR.replace('user = "floor-reader"', 'user = ""'),
        "floor.user: must be the floor reader's NATS user, not an empty string",
    ),
    (
        FLOOR.replace('user = "floor-reader"', "user = 7"),
        "floor.user: must be the floor reader's NATS user, not an integer",
    ),
    (
        FLOOR.replace('password_file = "nats-floor.pw"\n', ""),
        "floor.password_file: missing (a file holding the floor reader's NATS password)",
    ),
    (
        FLOOR.replace('password_file = "nats-floor.pw"', "password_file = 3"),
        "floor.password_file: must be a file name (relative to this file's directory), not an integer",
    ),
    (
        FLOOR.replace('password_file = "nats-floor.pw"', 'password = "inline"'),
        "floor.password: unknown key (did you mean 'password_file'?)",
    ),
    (FLOOR.replace('ca_file = "floor-ca.pem"\n', ""), "floor.ca_file: missing (the floor CA's certificate)"),
    (
        FLOOR.replace('ca_file = "floor-ca.pem"', 'ca_file = ""'),
        "floor.ca_file: must be a file name (relative to this file's directory), not an empty string",
    ),
    (
        FLOOR.replace('dsn_file = "floor-writer.dsn"\n', ""),
        "floor.dsn_file: missing (a file holding the writer role's libpq connection string)",
    ),
    (
        FLOOR.replace('dsn_file = "floor-writer.dsn"', 'dsn_file = ["floor-writer.dsn"]'),
        "floor.dsn_file: must be a file name (relative to this file's directory), not an array",
    ),
    (FLOOR.replace("batch_size = 2000", "batch_size = 0"), "floor.batch_size: 0 is out of range 1..10000"),
    (
        FLOOR.replace("batch_size = 2000", "batch_size = 10001"),
        "floor.batch_size: 10001 is out of range 1..10000",
    ),
    (
        FLOOR.replace("batch_size = 2000", "batch_size = 1.5"),
        "floor.batch_size: must be a whole number, not a float 1.5",
    ),
    (
        FLOOR.replace("batch_size = 2000", 'batch_size = "1000"'),
        "floor.batch_size: must be a whole number, not a string '1000'",
    ),
    (
        FLOOR.replace("batch_size = 2000", "batch_size = true"),
        "floor.batch_size: must be a whole number, not a boolean True",
    ),
    (
        FLOOR + "fetch_timeout_s = 0\n",
        "floor.fetch_timeout_s: 0 is out of range: at least 0.001 and at most 5 seconds",
    ),
    (
        FLOOR + "fetch_timeout_s = 6\n",
        "floor.fetch_timeout_s: 6 is out of range: at least 0.001 and at most 5 seconds",
    ),
    (
        FLOOR + 'sweep_interval_s = "5s"\n',
        "floor.sweep_interval_s: must be a number of seconds, not a string",
    ),
    (
        FLOOR + "sweep_interval_s = 3601\n",
        "floor.sweep_interval_s: 3601 is out of range: at least 0.1 and at most 3600 seconds",
    ),
    (
        FLOOR + "release_poll_interval_s = -1\n",
        "floor.release_poll_interval_s: -1 is out of range: at least 0.1 and at most 600 seconds",
    ),
    (
        FLOOR + "release_poll_interval_s = nan\n",
        "floor.release_poll_interval_s: nan is out of range: at least 0.1 and at most 600 seconds",
    ),
    (FLOOR + "backoff_max_s = true\n", "floor.backoff_max_s: must be a number of seconds, not a boolean"),
    (
        FLOOR + "backoff_initial_s = 1e9\n",
        "floor.backoff_initial_s: 1000000000.0 is out of range: at least 0.01 and at most 600 seconds",
    ),
    (
        FLOOR.replace("batch_size = 2000", "batch_size = " + "9" * 4000),
        "floor.batch_size: a many-digit number is out of range 1..10000",
    ),
    (
        FLOOR + "sweep_interval_s = " + "9" * 4000 + "\n",
        "floor.sweep_interval_s: a many-digit number is out of range: at least 0.1 and at most 3600 seconds",
    ),
    (FLOOR + "backoff_initial_s = 10\n", "floor.backoff_initial_s: 10 is more than backoff_max_s (5)"),
    (
        FLOOR + "backoff_initial_s = 2\nbackoff_max_s = 1\n",
        "floor.backoff_initial_s: 2 is more than backoff_max_s (1)",
    ),
]


def test_a_malformed_connection_string_is_refused_without_quoting_it(
    floor_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """libpq's own error quotes the string around the fault (``missing "=" after "S3CRETTAIL"``), so a
    malformed dsn_file would print a piece of the password at every retry: refused at load instead."""
    path = floor_dir / "floor.toml"
    path.write_text(FLOOR)
    (floor_dir / "floor-writer.dsn").write_text("host=127.0.0.1 port=1 password=abc S3CRETTAIL\n")
    dsn_path = floor_dir / "floor-writer.dsn"
    expected = f"floor.dsn_file: {dsn_path}: not a libpq connection string (key=value ... or a URI)"
    assert _release(path, capsys) == (2, "", f"flushtable floor: {path}: {expected}\n")


@pytest.mark.parametrize(("text", "expected"), REFUSED)
def test_every_bad_line_is_refused_in_one_line(
    floor_dir: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = floor_dir / "floor.toml"
    path.write_text(text)
    assert _release(path, capsys) == (2, "", f"flushtable floor: {path}: {expected}\n")
    with pytest.raises(FloorConfigError) as refused:
        load_floor_config(path)
    assert str(refused.value) == f"{path}: {expected}"


def test_not_toml_is_refused_in_one_line(floor_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = floor_dir / "floor.toml"
    # A duplicated key, a bare string, and a number tomllib cannot read (it raised a ValueError).
    for text in (
        "[floor\n",
        FLOOR + "batch_size = 2\n",
        FLOOR + "user = floor-reader\n",
        FLOOR.replace("batch_size = 2000", "batch_size = " + "9" * 5000),
    ):
        path.write_text(text)
        code, out, err = _release(path, capsys)
        assert (code, out) == (2, "")
        assert err.startswith(f"flushtable floor: {path}: not valid TOML: "), err
        assert err.count("\n") == 1, err


def test_a_missing_or_unreadable_file_is_named(floor_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = floor_dir / "floor.toml"
    assert _release(floor_dir / "absent.toml", capsys) == (
        2,
        "",
        f"flushtable floor: {floor_dir / 'absent.toml'}: no such file\n",
    )
    path.write_bytes(FLOOR.encode() + b"# \xff\n")
    assert _release(path, capsys) == (2, "", f"flushtable floor: {path}: not UTF-8 text\n")


@pytest.mark.parametrize(
    "case",
    [
        ("password_file", "nats-floor.pw", "remove", "no such file"),
        ("dsn_file", "floor-writer.dsn", "remove", "no such file"),
        ("password_file", "nats-floor.pw", "empty", "empty"),
        ("dsn_file", "floor-writer.dsn", "empty", "empty"),
        ("dsn_file", "floor-writer.dsn", "directory", "a directory, not a regular file"),
        ("password_file", "nats-floor.pw", "binary", "not UTF-8 text"),
        ("ca_file", "floor-ca.pem", "remove", "no such file (the floor CA's certificate)"),
        ("ca_file", "floor-ca.pem", "directory", "a directory, not a regular file"),
    ],
)
def test_a_missing_or_bad_secret_file_is_named(
    floor_dir: Path, capsys: pytest.CaptureFixture[str], case: tuple[str, str, str, str]
) -> None:
    key, name, damage, reason = case
    path = floor_dir / "floor.toml"
    path.write_text(FLOOR)
    secret = floor_dir / name
    secret.unlink()
    if damage == "empty":
        secret.write_text(" \n")
    elif damage == "directory":
        secret.mkdir()
    elif damage == "binary":
        secret.write_bytes(b"\xff\xfe pw\n")
    expected = f"flushtable floor: {path}: floor.{key}: {secret}: {reason}\n"
    assert _release(path, capsys) == (2, "", expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FLOOR + "batch_sise = 10\n", "floor.batch_sise: unknown key (did you mean 'batch_size'?)"),
        (FLOOR + "fetch_timeout_s = 0\n",
         "floor.fetch_timeout_s: 0 is out of range: at least 0.001 and at most 5 seconds"),
        (FLOOR.replace('ca_file = "floor-ca.pem"', 'ca_file = "gone.pem"'),
         "floor.ca_file: {dir}/gone.pem: no such file (the floor CA's certificate)"),
    ],
)  # fmt: skip
def test_floor_serve_refuses_in_one_line_as_a_process(floor_dir: Path, text: str, expected: str) -> None:
    """`flushtable floor serve --config FILE` as the operator runs it: exit status 2, one line on
    standard error, no traceback, nothing started."""
    path = floor_dir / "floor.toml"
    path.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", "floor", "serve", "--config", str(path)],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"flushtable floor: {path}: {expected.format(dir=floor_dir)}\n"


def test_the_section_has_a_key_for_every_knob_of_the_service() -> None:
    """Every FloorConfig field is in the file, but the inbox prefix (fixed by the server's permissions)
    and the secrets (read from the *_file keys); the defaults are the service's. The property's settings
    are [property] (gaming_day_start_hour, from before it, reads into them)."""
    service_fields = {f.name: f for f in dataclasses.fields(FloorConfig)}
    file_keys = set(FloorSection.model_fields)
    from_files = {
        "password": "password_file",
        "dsn": "dsn_file",
        "property_settings": "gaming_day_start_hour",
    }
    # A partitioned worker's consumer and side duties are set by `floor serve --worker`, not the file.
    not_in_file = {"inbox_prefix", "consumer", "side_duties"}
    assert {from_files.get(name, name) for name in service_fields} - not_in_file == file_keys
    for name, field in FloorSection.model_fields.items():
        if name in service_fields and service_fields[name].default is not dataclasses.MISSING:
            assert field.default == service_fields[name].default, name


FLOOR_DOC = ROOT / "docs" / "floor.md"
CONFIG_DOC = ROOT / "docs" / "configuration.md"


def test_the_documented_floor_file_loads(floor_dir: Path) -> None:
    (example,) = re.findall(r"```toml\n(\[floor\]\n.*?)```", FLOOR_DOC.read_text(encoding="utf-8"), re.DOTALL)
    (floor_dir / "floor.toml").write_text(example)
    config = load_floor_config(floor_dir / "floor.toml")
    assert (config.user, config.password, config.dsn) == (
        "floor-reader",
        "s3cret-floor-password",
        NO_POSTGRES_DSN,
    )


def test_every_key_is_documented() -> None:
    for doc in (CONFIG_DOC, FLOOR_DOC):
        text = doc.read_text(encoding="utf-8")
        for key in FloorSection.model_fields:
            assert f"`{key}`" in text, (doc.name, key)
        for key in PanelSection.model_fields:  # [panel], `flushtable floor panel`'s
            assert f"`{key}`" in text, (doc.name, "panel", key)
