"""The floor's commands as an operator runs them: `flushtable floor init-db` against a real PostgreSQL,
and bad input (a missing or wrong configuration, a journal that is not there) answered in one line with
exit status 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg

from controller.floor import schema
from controller.simulation.floor.servers import PostgresCluster

ENV = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def _flushtable(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True, text=True, timeout=120, env=ENV, check=False,
    )  # fmt: skip


def test_init_db_creates_the_roles_and_the_schema(tmp_path: Path, pg_cluster: PostgresCluster) -> None:
    schema.create_database(pg_cluster.superuser_dsn, "floor_initdb")
    (tmp_path / "w.pw").write_text("writer-secret\n")
    (tmp_path / "r.pw").write_text("reporting-secret\n")
    dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, "floor_initdb")
    args = ("floor", "init-db", "--dsn", dsn, "--writer-password-file", str(tmp_path / "w.pw"),
            "--reporting-password-file", str(tmp_path / "r.pw"))  # fmt: skip
    first = _flushtable(*args)
    assert first.returncode == 0, first.stderr
    versions = [m.version for m in schema.MIGRATIONS]  # every migration, in order, on a new database
    assert versions == list(range(1, len(versions) + 1))
    assert first.stdout.strip() == f"floor schema: applied {versions}; at version {versions[-1]}"
    again = _flushtable(*args)
    assert again.stdout.strip().startswith("floor schema: applied nothing")
    with psycopg.connect(
        pg_cluster.dsn(schema.REPORTING_ROLE, "reporting-secret", "floor_initdb")
    ) as reporting:
        row = reporting.execute("SELECT count(*) FROM floor_meters_by_pit").fetchone()
        assert row is not None


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    cases = [
        ("floor", "serve", "--config", str(tmp_path / "missing.toml")),
        ("uplink", "status", "--journal", str(tmp_path / "missing.sqlite")),
        ("floor", "demo", "--tables", "0"),
        ("floor", "init-db", "--dsn", "host=127.0.0.1 port=1 connect_timeout=2", "--writer-password-file",
         str(tmp_path / "none"), "--reporting-password-file", str(tmp_path / "none")),
    ]  # fmt: skip
    bad = tmp_path / "bad.toml"
    bad.write_text('[floor]\nservers = ["nats://plain:4222"]\n')
    cases.append(("floor", "serve", "--config", str(bad)))
    for args in cases:
        result = _flushtable(*args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr
        assert lines[0].startswith(f"flushtable {args[0]}: "), lines[0]
