"""`flushtable floor` actions whose PostgreSQL cannot be reached: each says so in one line, exactly
``flushtable floor: PostgreSQL: `` and the first line of the driver's error, exit 2, nothing on standard
output. Through the CLI's main, with real files for the configuration and its secrets; nothing listens on
port 1, so every connection is refused."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from controller.cli import main

NO_POSTGRES_DSN = "host=127.0.0.1 port=1 dbname=floor user=floor_writer connect_timeout=2"


def refused_line() -> str:
    """The first line of the driver's own error for the DSN, as the command is to show it."""
    with pytest.raises(psycopg.Error) as refused:
        psycopg.connect(NO_POSTGRES_DSN).close()
    return str(refused.value).strip().splitlines()[0]


@pytest.fixture
def floor_file(tmp_path: Path) -> Path:
    """A floor's file whose writer's and reporting role's connection strings both lead nowhere."""
    (tmp_path / "nats-floor.pw").write_text("s3cret-floor-password\n")
    (tmp_path / "floor-ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "floor-writer.dsn").write_text(NO_POSTGRES_DSN + "\n")
    (tmp_path / "floor-reporting.dsn").write_text(NO_POSTGRES_DSN + "\n")
    (tmp_path / "role.pw").write_text("a role's password\n")
    path = tmp_path / "floor.toml"
    path.write_text(
        '[floor]\nservers = ["tls://127.0.0.1:4222"]\nuser = "floor-reader"\n'
        'password_file = "nats-floor.pw"\n'
        'ca_file = "floor-ca.pem"\ndsn_file = "floor-writer.dsn"\n\n'
        '[panel]\nreporting_dsn_file = "floor-reporting.dsn"\n',
        encoding="utf-8",
    )
    return path


ACTIONS = {
    "init-db": ["init-db", "--dsn", NO_POSTGRES_DSN, "--writer-password-file", "{dir}/role.pw",
                "--reporting-password-file", "{dir}/role.pw"],
    "release": ["release", "T1", "--reason", "chain checked", "--by", "maria", "--config", "{config}"],
    "verify": ["verify", "--config", "{config}"],
    "report": ["report", "--day", "2026-12-01", "--config", "{config}"],
}  # fmt: skip


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_postgresql_unreachable_is_one_line_naming_it(
    action: str, floor_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    words = [word.format(dir=floor_file.parent, config=floor_file) for word in ACTIONS[action]]
    code = main(["floor", *words])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err == f"flushtable floor: PostgreSQL: {refused_line()}\n"
