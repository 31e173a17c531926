"""The floor's PostgreSQL schema: versioned migrations (their SQL in controller/floor/migrations.py and
controller/floor/migrations_rows.py), applied in order, each once (docs/floor.md "Schema").

``floor_schema_migrations`` records each applied version; ``migrate`` takes an advisory lock so two
services starting at once do not both apply one. Migrations only ever add: a version, once released, is
never edited (a test checks the recorded versions match this list).

Roles (``ensure_roles``, run once by a superuser): ``flushtable_floor_writer`` writes what the floor
service writes and nothing else (no DELETE anywhere; ``floor_entries`` and ``floor_private`` refuse
UPDATE and DELETE by trigger even for their owner); ``flushtable_floor_reporting`` reads only, and
reads private parts only through ``floor_private_shown`` (migration 5: never a part the table's gate
would not show now).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from controller.floor import migrations, migrations_rows

# Migration is this module's too, and MIGRATIONS, every version in order (1 to 14 in
# controller/floor/migrations.py, 15 on in controller/floor/migrations_rows.py): callers read the list
# from here (`schema.MIGRATIONS`).
from controller.floor.migrations import Migration

MIGRATIONS: tuple[Migration, ...] = (*migrations.MIGRATIONS, *migrations_rows.MIGRATIONS)

__all__ = [
    "MIGRATIONS",
    "REPORTING_ROLE",
    "WRITER_ROLE",
    "Migration",
    "applied_versions",
    "create_database",
    "ensure_roles",
    "migrate",
]

WRITER_ROLE = "flushtable_floor_writer"
REPORTING_ROLE = "flushtable_floor_reporting"
_MIGRATION_LOCK = 0x464C5254  # "FLRT": pg_advisory_xact_lock key

_GRANTS = f"""
GRANT SELECT, INSERT ON floor_entries, floor_private, floor_quarantine TO {WRITER_ROLE};
-- Tables of migration 15 on: granted once there (a test's database may stop at an earlier version).
DO $$ BEGIN
    IF to_regclass('floor_locked_wagers') IS NOT NULL THEN
        GRANT SELECT, INSERT ON floor_locked_wagers TO {WRITER_ROLE};
    END IF;
    IF to_regclass('floor_day_figures') IS NOT NULL THEN
        GRANT SELECT, INSERT ON floor_day_figures TO {WRITER_ROLE};
    END IF;
END $$;
GRANT SELECT, INSERT, UPDATE ON floor_tables, floor_rounds, floor_alerts TO {WRITER_ROLE};
GRANT SELECT ON floor_table_config, floor_schema_migrations TO {WRITER_ROLE};
GRANT USAGE ON SEQUENCE floor_alerts_alert_id_seq TO {WRITER_ROLE};
GRANT SELECT, INSERT ON floor_releases, floor_release_applied TO {WRITER_ROLE};
GRANT USAGE ON SEQUENCE floor_releases_release_id_seq TO {WRITER_ROLE};
GRANT SELECT, INSERT ON floor_progressive_events, floor_progressive_refusals TO {WRITER_ROLE};
GRANT SELECT, INSERT, UPDATE ON floor_progressive_links, floor_progressive_marks TO {WRITER_ROLE};
GRANT USAGE ON SEQUENCE floor_progressive_refusals_refusal_id_seq TO {WRITER_ROLE};
GRANT SELECT, INSERT, UPDATE ON floor_surveillance_marks TO {WRITER_ROLE};
GRANT SELECT, INSERT ON floor_surveillance_alert_marks TO {WRITER_ROLE};
GRANT SELECT, INSERT ON floor_private_disclosures TO {WRITER_ROLE};
GRANT USAGE ON SEQUENCE floor_private_disclosures_disclosure_id_seq TO {WRITER_ROLE};
GRANT SELECT, INSERT ON floor_software_checks TO {WRITER_ROLE};
GRANT SELECT, INSERT, UPDATE ON floor_partition_leases, floor_nats_nodes TO {WRITER_ROLE};
GRANT USAGE ON SEQUENCE floor_software_checks_check_id_seq TO {WRITER_ROLE};
GRANT SELECT ON ALL TABLES IN SCHEMA public TO {REPORTING_ROLE};
REVOKE SELECT ON floor_private FROM {REPORTING_ROLE};
"""


def _create_history(cursor: psycopg.Cursor[tuple[object, ...]]) -> None:
    cursor.execute(
        "CREATE TABLE IF NOT EXISTS floor_schema_migrations ("
        " version integer PRIMARY KEY, name text NOT NULL, applied_utc timestamptz NOT NULL DEFAULT now())"
    )


def applied_versions(connection: psycopg.Connection[tuple[object, ...]]) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('floor_schema_migrations') IS NOT NULL")
        row = cursor.fetchone()
        if row is None or not row[0]:
            return []
        cursor.execute("SELECT version FROM floor_schema_migrations ORDER BY version")
        return [int(str(version)) for (version,) in cursor.fetchall()]


def migrate(connection: psycopg.Connection[tuple[object, ...]], *, through: int | None = None) -> list[int]:
    """Apply every migration not yet applied, in order, in one transaction; returns those applied.

    Run by the schema's owner (`flushtable floor init-db`). A database with a version this program does
    not know is refused: it was migrated by a newer program. ``through``: only the migrations up to that
    version (a test's database as an earlier release left it)."""
    known = {m.version for m in MIGRATIONS}
    applied_now: list[int] = []
    with connection.transaction(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        _create_history(cursor)
        cursor.execute("SELECT version FROM floor_schema_migrations")
        applied = {int(str(v)) for (v,) in cursor.fetchall()}
        unknown = sorted(applied - known)
        if unknown:
            raise psycopg.ProgrammingError(
                f"the floor database has schema version {unknown[-1]}, newer than this program's "
                f"{max(known)}: upgrade flushtable"
            )
        for migration in MIGRATIONS:
            if migration.version in applied or (through is not None and migration.version > through):
                continue
            cursor.execute(migration.sql.encode())
            if isinstance(migration, migrations_rows.BackfilledMigration):
                migration.backfill(cursor)
            cursor.execute(
                "INSERT INTO floor_schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            applied_now.append(migration.version)
        cursor.execute(_role_exists_sql(), (WRITER_ROLE, REPORTING_ROLE))
        row = cursor.fetchone()
        if row is not None and row[0] == 2:
            cursor.execute(_GRANTS.encode())
    return applied_now


def _role_exists_sql() -> str:
    return "SELECT count(*) FROM pg_roles WHERE rolname IN (%s, %s)"


def ensure_roles(
    connection: psycopg.Connection[tuple[object, ...]], *, writer_password: str, reporting_password: str
) -> None:
    """Create (or re-password) the two login roles. Needs a superuser or CREATEROLE."""
    with connection.transaction(), connection.cursor() as cursor:
        for role, password in ((WRITER_ROLE, writer_password), (REPORTING_ROLE, reporting_password)):
            cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,))
            verb = "ALTER" if cursor.fetchone() else "CREATE"
            cursor.execute(
                sql.SQL("{} ROLE {} LOGIN PASSWORD {}").format(
                    sql.SQL(verb), sql.Identifier(role), sql.Literal(password)
                )
            )
        cursor.execute(
            sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(
                sql.Identifier(REPORTING_ROLE)
            )
        )


def create_database(superuser_dsn: str, dbname: str = "floor") -> None:
    with psycopg.connect(superuser_dsn, autocommit=True) as connection:
        row = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,)).fetchone()
        if row is None:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
