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


def test_init_db_refuses_a_stored_payload_the_classes_refuse(
    tmp_path: Path, pg_cluster: PostgresCluster
) -> None:
    """Migration 16's backfill reads each entry through its typed class: one it refuses fails init-db in
    one line naming its table and seq (never skipped: its gaming day would be silently wrong), and
    nothing of the migration is applied."""
    dbname = "floor_initdb_refused"
    schema.create_database(pg_cluster.superuser_dsn, dbname)
    (tmp_path / "w.pw").write_text("writer-secret\n")
    (tmp_path / "r.pw").write_text("reporting-secret\n")
    dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, dbname)
    with psycopg.connect(dsn, autocommit=True) as connection:
        schema.migrate(connection, through=15)
        connection.execute(
            "INSERT INTO floor_entries (table_id, seq, time_utc, time_text, source, kind, version, payload, "
            "prev_hash, hash, stream_seq, typed_columns) VALUES ('T7', 3, now(), '', 'engine', "
            "'round_settled', 1, '{\"settlement\": 5}', '', '', 3, 2)"
        )
    result = _flushtable("floor", "init-db", "--dsn", dsn, "--writer-password-file", str(tmp_path / "w.pw"),
                         "--reporting-password-file", str(tmp_path / "r.pw"))  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("flushtable floor: init-db: table T7 entry 3: its stored round_settled"), lines
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert schema.applied_versions(connection)[-1] == 15


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
