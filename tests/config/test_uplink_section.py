"""``[uplink]`` in the one typed configuration (controller/config/sections.py ``UplinkSection``): what it
gives the uplink, and every refusal naming the file and the key, as the other sections' do. Real files in a
temporary directory (the password file and the CA's certificate are read from the file's directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main
from controller.config import ConfigError, UplinkConfig, load_config
from tests.config.test_config import BASE

UPLINK = """
[uplink]
servers = ["tls://floor-nats.casino.lan:4222", "tls://floor-nats-2.casino.lan:4222"]
site = "main"
user = "table-T1"
password_file = "nats-table.pw"
ca_file = "floor-ca.pem"
"""


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    (tmp_path / "nats-table.pw").write_text("s3cret-table-password\n")
    (tmp_path / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    return tmp_path


def load(directory: Path, uplink: str) -> UplinkConfig | None:
    path = directory / "table.toml"
    path.write_text(BASE + uplink)
    return load_config(path).uplink


def refusal(directory: Path, uplink: str) -> str:
    with pytest.raises(ConfigError) as refused:
        load(directory, uplink)
    return str(refused.value)


def test_no_uplink_means_no_floor(table_dir: Path) -> None:
    assert load(table_dir, "") is None


def test_the_uplink_as_the_uplink_reads_it(table_dir: Path) -> None:
    config = load(table_dir, UPLINK)
    assert config == UplinkConfig(
        servers=("tls://floor-nats.casino.lan:4222", "tls://floor-nats-2.casino.lan:4222"),
        site="main",
        user="table-T1",
        password="s3cret-table-password",
        ca_file=table_dir / "floor-ca.pem",
    )
    assert "s3cret" not in repr(config)
    tuned = load(table_dir, UPLINK + "connect_timeout_s = 2\nack_timeout_s = 1.5\nbackoff_max_s = 30\n")
    assert tuned is not None
    assert (tuned.connect_timeout_s, tuned.ack_timeout_s, tuned.backoff_max_s) == (2.0, 1.5, 30.0)
    assert (tuned.poll_interval_s, tuned.backoff_initial_s) == (0.1, 0.2)


def test_an_inline_password(table_dir: Path) -> None:
    config = load(table_dir, UPLINK.replace('password_file = "nats-table.pw"', 'password = "inline"'))
    assert config is not None
    assert config.password == "inline"


def test_the_uplink_leaves_the_digest_as_it_was(table_dir: Path) -> None:
    """Where the journal is streamed is not how the table plays: settings changes journaled against the
    configuration's digest stay valid when [uplink] is added or its servers move."""
    (table_dir / "plain.toml").write_text(BASE)
    (table_dir / "with.toml").write_text(BASE + UPLINK)
    assert load_config(table_dir / "plain.toml").digest == load_config(table_dir / "with.toml").digest


def test_flushtable_config_shows_the_uplink_without_its_password(
    table_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (table_dir / "table.toml").write_text(BASE + UPLINK)
    assert main(["config", "--config", str(table_dir / "table.toml")]) == 0
    out = capsys.readouterr().out
    assert '"site": "main"' in out
    assert "s3cret" not in out


SERVERS = 'servers = ["tls://floor-nats.casino.lan:4222", "tls://floor-nats-2.casino.lan:4222"]'
REFUSED = [
    # (the [uplink] text, the exact error after "table.toml: ")
    (UPLINK + "sever = 1\n", "uplink.sever: unknown key (did you mean 'servers'?)"),
    (
        UPLINK.replace('site = "main"\n', ""),
        "uplink.site: missing (the site token of the table's subject flushtable.<site>.<table>.journal)",
    ),
    (
        UPLINK.replace(SERVERS, 'servers = ["nats://floor-nats.casino.lan:4222"]'),
        "uplink.servers: server 1: the floor is reached over TLS only (tls://host:port)",
    ),
    (
        UPLINK.replace(SERVERS, 'servers = ["tls://table-7:S3CRET@floor-nats.casino.lan:4222"]'),
        "uplink.servers: server 1: no user or password in the URL (give them as user and password_file)",
    ),
    (
        UPLINK.replace(SERVERS, "servers = []"),
        "uplink.servers: a non-empty array of URLs like tls://host:4222",
    ),
    (
        UPLINK.replace('site = "main"', 'site = "main.floor"'),
        "uplink.site: a non-empty name without spaces, '.', '*' or '>'",
    ),
    (
        UPLINK.replace('user = "table-T1"', 'user = "table>"'),
        "uplink.user: a non-empty name without spaces, '.', '*' or '>'",
    ),
    (
        UPLINK.replace('password_file = "nats-table.pw"', 'password_file = "nats-table.pw"\npassword = "x"'),
        "uplink.password: give exactly one of password, password_file",
    ),
    (
        UPLINK.replace('password_file = "nats-table.pw"\n', ""),
        "uplink.password: give exactly one of password, password_file",
    ),
    (
        UPLINK + "ack_timeout_s = 0\n",
        "uplink.ack_timeout_s: 0 is out of range: more than 0 and at most 600 seconds",
    ),
    (
        UPLINK + 'poll_interval_s = "1s"\n',
        "uplink.poll_interval_s: must be a number of seconds, not a string",
    ),
    (
        UPLINK + "backoff_max_s = true\n",
        "uplink.backoff_max_s: must be a number of seconds, not a boolean",
    ),
]


@pytest.mark.parametrize(("uplink", "expected"), REFUSED)
def test_refusals_name_the_file_and_the_key(table_dir: Path, uplink: str, expected: str) -> None:
    assert refusal(table_dir, uplink) == f"table.toml: {expected}"


def test_uplink_must_be_a_table(table_dir: Path) -> None:
    (table_dir / "table.toml").write_text("uplink = 3\n" + BASE)
    with pytest.raises(ConfigError, match=r"^table.toml: uplink: must be a table, not an integer$"):
        load_config(table_dir / "table.toml")


def test_a_missing_password_file_or_ca_is_refused_with_its_path(table_dir: Path) -> None:
    (table_dir / "nats-table.pw").unlink()
    assert refusal(table_dir, UPLINK) == (
        f"table.toml: uplink.password_file: {table_dir / 'nats-table.pw'}: no such file"
    )
    (table_dir / "nats-table.pw").write_text("pw\n")
    (table_dir / "floor-ca.pem").unlink()
    assert refusal(table_dir, UPLINK) == (
        f"table.toml: uplink.ca_file: {table_dir / 'floor-ca.pem'}: no such file (the floor CA's certificate)"
    )


def test_uplink_run_refuses_a_file_without_uplink_in_one_line(
    table_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (table_dir / "table.toml").write_text(BASE)
    assert main(["uplink", "run", "--config", str(table_dir / "table.toml")]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("no [uplink] table"), err
    assert "Traceback" not in err
