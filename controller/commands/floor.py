"""`flushtable floor`: the casino floor's service and its demo (docs/floor.md).

flushtable floor serve --config floor.toml      the durable consumer -> PostgreSQL
flushtable floor serve --config floor.toml --worker NAME --partitions P
                                                one of N partitioned workers (leases, fencing)
flushtable floor partitions --config floor.toml [--partitions P]
                                                show the leases' bucket, the leases, the partition consumers
flushtable floor partitions --config floor.toml --create P [--lease-ttl 6] [--replicas 3]
                            --admin-password-file FILE
                                                make the partitions (as the floor's NATS admin)
flushtable floor init-db --dsn DSN              create the roles and apply the schema's migrations
flushtable floor release TABLE --reason TEXT --by NAME --config floor.toml
                                                lift a table's quarantine once its chain verifies again
flushtable floor verify-software TABLE --config floor.toml --release WHEEL|DIR --manifest SIGNED
                                  --public-key HEX --by NAME [--site SITE]
                                                ask a table for HMAC-SHA256 with a fresh seed over its
                                                files; match or mismatch recorded, an alert if not
flushtable floor verify --config floor.toml [--table ID ...] [--json]
                                                every table's chain recomputed as the read-only role;
                                                exit 1 if any does not verify
flushtable floor report --day YYYY-MM-DD [--pit P] [--csv] --config floor.toml
                                                the gaming day's report per table and pit
flushtable floor panel --config floor.toml       serve the floor panel ([panel] bind, port; until SIGTERM)
flushtable floor user add NAME --role ROLE --config floor.toml   (password from stdin or a prompt)
flushtable floor user list|disable NAME --config floor.toml     the panel's logins (floor-users.json)
flushtable floor demo [--tables N] [--rounds R] [--dir D] [--site NAME] [--nodes 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import structlog

from controller.commands.user import read_password
from controller.errors import UserError
from controller.files import check_writable_file
from controller.floor import schema
from controller.floor.collector import tune_collector
from controller.floor.config import (
    floor_users_file,
    load_floor_config,
    load_floor_panel_config,
    load_floor_reporting_dsn,
)
from controller.floor.progressive import LinkedProgressive
from controller.floor.progressive_config import load_linked_config
from controller.floor.release import ReleaseRefused, release_table
from controller.floor.service import FloorService
from controller.floor.users import (
    FLOOR_ROLES,
    FloorUserFile,
    add_user,
    disable_user,
    parse_floor_role,
    read_users,
)
from controller.floor.verify import ChainCheck, auditor_session, floor_table_ids, verify_floor
from controller.floor.workers import DEFAULT_LEASE_TTL_S, FloorWorker, WorkerSettings, refuse_live_workers
from controller.logs import configure_logging

NAME = "floor"
log = structlog.get_logger("flushtable.floor")

HELP = "the casino floor: every table's journal in PostgreSQL (serve, init-db, demo, release, verify, report)"

# `floor verify`: each statement (a fetch of entries, a table's rows beside them) ends within this, so a
# floor's PostgreSQL that stopped answering is an error in one line rather than a command that hangs.
VERIFY_STATEMENT_TIMEOUT_S = 300
POSTGRES_CONNECT_TIMEOUT_S = 10


def _first_line(error: psycopg.Error) -> str:
    """A driver's error as one line: its first (some run on with a DETAIL or a HINT)."""
    return str(error).strip().splitlines()[0]


@contextlib.contextmanager
def _postgresql_errors() -> Iterator[None]:
    """A PostgreSQL error in the block is the operator's one line, ``PostgreSQL: <its first line>``
    (exit 2), never a traceback."""
    try:
        yield
    except psycopg.Error as error:
        raise UserError(f"PostgreSQL: {_first_line(error)}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="floor_command", metavar="ACTION", required=True)
    serve = _add_serve(sub)
    _add_partitions(sub)
    _add_init_db(sub)
    demo = _add_demo(sub)
    _add_release(sub)
    _add_verify_software(sub)
    _add_verify(sub)
    _add_report(sub)
    panel = _add_panel(sub)
    _add_user(sub)
    for sub_parser in (serve, demo, panel):
        sub_parser.add_argument(
            "--log-level", default="warning", help="debug, info, warning (default), error"
        )


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """`floor serve`: the consumer, alone or as a named worker of a partitioned floor."""
    serve = sub.add_parser("serve", help="consume the tables' journals into PostgreSQL")
    serve.add_argument("--config", required=True, help="the floor's TOML file ([floor])")
    serve.add_argument(
        "--worker",
        default=None,
        help='run as this named worker of a partitioned floor (docs/floor.md "Partitioned floor workers")',
    )
    serve.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="with --worker: the floor's partition count P (all workers alike)",
    )
    serve.add_argument(
        "--lease-ttl",
        type=float,
        default=None,
        help="with --worker: seconds a partition's lease outlives its last renewal (default 6)",
    )
    return serve


def _add_partitions(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor partitions`: make a partitioned floor's partitions, or show them."""
    parts = sub.add_parser(
        "partitions",
        help="make a partitioned floor's partitions (--create P), or show them (docs/floor.md)",
    )
    parts.add_argument("--config", required=True, help="the floor's TOML file ([floor])")
    parts.add_argument("--create", type=int, default=None, metavar="P", help="make P partitions (the admin)")
    parts.add_argument("--partitions", type=int, default=None, metavar="P", help="show P's consumers")
    parts.add_argument("--lease-ttl", type=float, default=None, help="with --create: the leases' TTL (6)")
    parts.add_argument(
        "--replicas",
        type=int,
        default=None,
        help="with --create: the lease bucket's replicas (the FLUSHTABLE stream's; never fewer)",
    )
    parts.add_argument(
        "--admin-password-file", default=None, help="with --create: the floor-admin's NATS password"
    )


def _add_init_db(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor init-db`: the roles and the schema."""
    init = sub.add_parser("init-db", help="create the floor's roles and apply its schema migrations")
    init.add_argument("--dsn", required=True, help="a superuser's libpq connection string")
    init.add_argument("--writer-password-file", required=True)
    init.add_argument("--reporting-password-file", required=True)


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """`floor demo`: a whole floor on this machine."""
    demo = sub.add_parser("demo", help="a whole floor on this machine: NATS, PostgreSQL, tables, panel")
    demo.add_argument("--tables", type=int, default=12, help="simulated tables (default 12)")
    demo.add_argument("--rounds", type=int, default=None, help="play R rounds a table, check, stop")
    demo.add_argument("--dir", default="var/floor", help="where the servers and journals live")
    demo.add_argument("--port", type=int, default=8090, help="the floor panel's port")
    demo.add_argument("--seed", type=int, default=None)
    demo.add_argument(
        "--site",
        default=None,
        metavar="NAME",
        help="half the tables at site NAME: its own nats-server as a leaf node of the hub (docs/floor.md)",
    )
    demo.add_argument(
        "--nodes",
        type=int,
        default=1,
        choices=(1, 3),
        help="3: a three-node JetStream cluster on loopback, the stream R3 (docs/floor.md)",
    )
    return demo


def _add_release(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor release`: lift a table's quarantine."""
    release = sub.add_parser(
        "release",
        help="release a quarantined table once its chain verifies again (docs/floor.md)",
        description="Lift a table's quarantine: refused unless the chain verifies again from the table's "
        "last good entry. Recorded (who, when, why) in floor_releases; the floor service then projects "
        "the table's held entries from the stream, in order, exactly once.",
    )
    release.add_argument("table", metavar="TABLE", help="the table's id")
    release.add_argument("--reason", required=True, help="why it is released (recorded)")
    release.add_argument("--by", required=True, help="who releases it: the table-games manager (recorded)")
    release.add_argument("--config", required=True, help="the floor's TOML file ([floor]: its dsn_file)")


def _add_verify_software(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor verify-software`: a seeded check of a table's software."""
    verify = sub.add_parser(
        "verify-software",
        help="seeded software verification of a table against the approved release (recorded, alerted)",
        description="Ask a table over NATS for HMAC-SHA256 with a fresh random seed over every file of the "
        "product it runs, compute the same from the approved release, and record match, mismatch or no "
        "answer in floor_software_checks (an alert unless it matched). docs/operations.md.",
    )
    verify.add_argument("table", metavar="TABLE", help="the table's id")
    verify.add_argument("--config", required=True, help="the floor's TOML file ([floor])")
    verify.add_argument(
        "--release", required=True, type=Path, help="the approved release: a wheel or a directory"
    )
    verify.add_argument("--manifest", required=True, type=Path, help="its signed release manifest")
    verify.add_argument("--public-key", required=True, help="the casino's release public key (64 hex digits)")
    verify.add_argument("--by", required=True, help="who asks (recorded, and journaled at the table)")
    verify.add_argument(
        "--site", default="main", help="the table's site token (its uplink's site; default main)"
    )
    verify.add_argument(
        "--timeout", type=float, default=60.0, help="seconds to wait for the answer (default 60)"
    )


def _add_verify(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor verify`: an auditor's check of the floor's record."""
    verify = sub.add_parser(
        "verify",
        help="check every table's chain as the floor holds it, read-only (exit 1 if any fails)",
        description="Recompute, table by table, every entry's hash and link, every private part a reader "
        "may see against its commitment, and the rows kept beside the entries, as the floor's read-only "
        "reporting role ([panel] reporting_dsn_file of the floor's file); nothing is written. One line a "
        "table (ok and its entries, or the first problem by entry), then the totals. Exit status: 0 "
        "every chain verifies, 1 any does not, 2 a usage, file or connection error.",
    )
    verify.add_argument(
        "--config",
        required=True,
        help="the floor's TOML file ([panel] reporting_dsn_file: the read-only role)",
    )
    verify.add_argument(
        "--table",
        action="append",
        default=None,
        metavar="ID",
        help="only this table (repeatable); default every table on the floor",
    )
    verify.add_argument("--json", action="store_true", help="print the same as one JSON object")


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor report`: the gaming day's report."""
    report = sub.add_parser(
        "report",
        help="the gaming day's report per table and per pit, from the floor (docs/operations.md)",
        description="Rounds, handle by wager, win, hold %% against the par sheet's, dead hands, voids, "
        "kills, overrides, faults and progressive amounts of one gaming day ([property] gaming_day_start, "
        "in its time zone), per table, per pit and for the floor. --csv prints the CSV, its "
        "last line the SHA-256 of every byte before it.",
    )
    report.add_argument("--day", required=True, metavar="YYYY-MM-DD", help="the gaming day")
    report.add_argument("--pit", default=None, help="only this pit's tables and the pit's total")
    report.add_argument("--csv", action="store_true", help="the CSV with its digest line")
    report.add_argument("--config", required=True, help="the floor's TOML file ([floor]: its dsn_file)")


def _add_panel(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """`floor panel`: serve the floor panel."""
    panel = sub.add_parser(
        "panel",
        help="serve the floor panel ([panel] of the floor's file; docs/floor.md)",
        description="Serve the floor panel on [panel] bind and port of the floor's file (plain HTTP: "
        "put a TLS-terminating proxy in front of it on the casino network, docs/floor.md). Its users are "
        "`flushtable floor user`'s; it stops cleanly on Ctrl-C or SIGTERM.",
    )
    panel.add_argument("--config", required=True, help="the floor's TOML file ([floor] and [panel])")
    return panel


def _add_user(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`floor user`: the floor panel's logins."""
    user = sub.add_parser("user", help="the floor panel's logins: add, list, disable (docs/floor.md)")
    user.add_argument("--config", default=None, help="the floor's TOML file (its users file is beside it)")
    user.add_argument("--users-file", type=Path, default=None, help="the users file itself (else --config's)")
    actions = user.add_subparsers(dest="user_action", metavar="ACTION", required=True)
    add = actions.add_parser(
        "add", help="add a login (or --replace one); the password from stdin or a prompt"
    )
    add.add_argument("name")
    add.add_argument("--role", required=True, choices=FLOOR_ROLES)
    add.add_argument("--replace", action="store_true", help="new password and role; enables a disabled user")
    actions.add_parser("list", help="list the logins, their roles and whether disabled (never their hashes)")
    disable = actions.add_parser("disable", help="disable a login: no more logins, its sessions end")
    disable.add_argument("name")


def run(args: argparse.Namespace) -> int:  # noqa: PLR0912 - one check per option, each its own one-line error
    if args.floor_command in ("serve", "demo", "panel"):
        _quiet(args.log_level)
    if args.floor_command == "panel":
        return _panel(args)
    if args.floor_command == "user":
        return _user(args)
    if args.floor_command == "serve":
        return _serve(args)
    if args.floor_command == "init-db":
        return _init_db(args)
    if args.floor_command == "partitions":
        return _partitions(args)
    if args.floor_command == "verify-software":
        return _verify_software(args)
    if args.floor_command == "release":
        return _release(args)
    if args.floor_command == "report":
        return _report(args)
    if args.floor_command == "verify":
        return _verify(args)
    if args.tables < 1 or args.tables > 1000:
        raise UserError("--tables: from 1 to 1000")
    if args.rounds is not None and args.rounds < 0:
        raise UserError("--rounds: 0 or more")
    if args.site is not None and (not args.site or any(c in args.site for c in " .*>\t")):
        raise UserError("--site: a name without spaces, '.', '*' or '>'")
    if args.site is not None and args.tables < 2:
        raise UserError("--site: needs --tables 2 or more (half of them at the site)")
    # The demo is the floor's harness (it starts nats-server and PostgreSQL): loaded only for this
    # action, so `flushtable floor serve` never imports it (docs/floor.md "Where the harness lives").
    from controller.simulation.floor.demo import run_demo  # noqa: PLC0415

    return run_demo(
        tables=args.tables,
        rounds=args.rounds,
        directory=args.dir,
        port=args.port,
        seed=args.seed,
        site=args.site,
        nodes=args.nodes,
    )


def _quiet(level: str) -> None:
    """Every entry is logged by the journal at info: a floor of tables would drown the terminal."""
    try:
        configure_logging(level=level)
    except ValueError as error:
        raise UserError(f"--log-level: {error}") from None
    # nats-py's TLS connections make asyncio warn at each close ("eof_received"): not ours to fix.
    logging.getLogger("asyncio").setLevel(logging.ERROR)


def _worker_settings(args: argparse.Namespace) -> WorkerSettings | None:
    """--worker and --partitions together (a partitioned floor), or neither (the one-worker floor)."""
    if args.worker is None and args.partitions is None and args.lease_ttl is None:
        return None
    if args.worker is None or args.partitions is None:
        raise UserError('--worker and --partitions go together (docs/floor.md "Partitioned floor workers")')
    ttl_s = DEFAULT_LEASE_TTL_S if args.lease_ttl is None else args.lease_ttl
    try:
        return WorkerSettings(args.worker, args.partitions, lease_ttl_s=ttl_s, renew_interval_s=ttl_s / 3)
    except ValueError as error:
        raise UserError(str(error)) from None


def _serve(args: argparse.Namespace) -> int:
    worker = _worker_settings(args)
    config = load_floor_config(args.config)
    # The file's linked progressives (docs/floor.md "Linked progressive"), run beside the service.
    linked = load_linked_config(args.config, config)

    async def main() -> None:
        if worker is None:
            await _refuse_beside_workers(config.dsn)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, stop.set)
        services = [
            FloorService(config).run(stop) if worker is None else FloorWorker(config, worker).run(stop)
        ]
        if linked is not None:
            services.append(LinkedProgressive(linked).run(stop))
        await asyncio.gather(*services)

    tune_collector()  # a long-running service's process: controller/floor/collector.py
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


async def _refuse_beside_workers(dsn: str) -> None:
    """A one-worker floor beside live partitioned workers would process their tables too: refused in
    one line (docs/floor.md "Partitioned floor workers"). PostgreSQL away at start: the check is
    skipped with a warning and the service starts as it always has, retrying until PostgreSQL is back
    (a floor restarted after a power cut must not need PostgreSQL up first)."""
    try:
        async with await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, connect_timeout=10
        ) as connection:
            await refuse_live_workers(connection)
    except psycopg.Error as error:
        log.warning("floor_workers_not_checked", reason=_first_line(error))


def _partitions(args: argparse.Namespace) -> int:
    from controller.floor import partitions  # noqa: PLC0415 - only this action needs it

    # nats-py's TLS connections make asyncio warn at each close ("eof_received"): not ours to fix.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    if args.create is None:
        with_create = {
            "--lease-ttl": args.lease_ttl,
            "--replicas": args.replicas,
            "--admin-password-file": args.admin_password_file,
        }
        given = [name for name, value in with_create.items() if value is not None]
        if given:
            raise UserError(f"{', '.join(given)}: only with --create P")
        config = load_floor_config(args.config)
        lines = asyncio.run(partitions.show_partitions(config, args.partitions))
    else:
        if args.partitions is not None:
            raise UserError("--partitions: only without --create (--create P names the count)")
        if args.admin_password_file is None:
            raise UserError(
                "--create needs --admin-password-file: making the bucket and consumers is the floor-admin's"
            )
        ttl_s = DEFAULT_LEASE_TTL_S if args.lease_ttl is None else args.lease_ttl
        replicas: int | None = args.replicas  # None: the FLUSHTABLE stream's (read at --create)
        partitions.check_create(args.create, ttl_s, replicas)  # refused before any file is read
        config = load_floor_config(args.config)
        password = _secret_file(args.admin_password_file, "--admin-password-file")
        lines = asyncio.run(
            partitions.create_partitions(config, password, args.create, lease_ttl_s=ttl_s, replicas=replicas)
        )
    for line in lines:
        print(line)
    return 0


def _secret_file(path: str, option: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError as error:
        raise UserError(f"{option} {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UserError(f"{option} {path}: not UTF-8 text") from None
    if not text or "\n" in text:
        raise UserError(f"{option} {path}: one line, the password, expected")
    return text


def _init_db(args: argparse.Namespace) -> int:
    def secret(path: str) -> str:
        try:
            return Path(path).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise UserError(f"{path}: {error.strerror}") from None

    with _postgresql_errors(), psycopg.connect(args.dsn) as connection:
        schema.ensure_roles(
            connection,
            writer_password=secret(args.writer_password_file),
            reporting_password=secret(args.reporting_password_file),
        )
        applied = schema.migrate(connection)
    print(f"floor schema: applied {applied or 'nothing'}; at version {schema.MIGRATIONS[-1].version}")
    return 0


def _verify_software(args: argparse.Namespace) -> int:
    from controller.floor import software_check  # noqa: PLC0415 - only this action needs it
    from controller.software import parse_public_key  # noqa: PLC0415

    if not 0 < args.timeout <= 600:
        raise UserError(f"--timeout: more than 0 and at most 600 seconds, not {args.timeout:g}")
    try:
        public_key = parse_public_key(args.public_key)
    except UserError as error:
        raise UserError(f"--public-key: {error}") from None
    config = load_floor_config(args.config)
    approved = software_check.load_approved_release(args.release, args.manifest, public_key)
    seed = software_check.new_seed()
    expected = approved.expected(seed)
    answer = asyncio.run(
        software_check.ask_table(
            config,
            site=args.site,
            table_id=args.table,
            seed=seed,
            requested_by=f"floor:{args.by}",
            timeout_s=args.timeout,
        )
    )
    with _postgresql_errors(), psycopg.connect(config.dsn) as connection:
        record = software_check.record_check(
            connection,
            table_id=args.table,
            requested_by=args.by,
            seed=seed,
            approved=approved,
            expected=expected,
            answer=answer,
        )
    print(record.summary())
    return 0 if record.outcome == "match" else 1


def _release(args: argparse.Namespace) -> int:
    config = load_floor_config(args.config)
    try:
        with _postgresql_errors(), psycopg.connect(config.dsn) as connection:
            released = release_table(connection, args.table, reason=args.reason, by=args.by, via="cli")
    except ReleaseRefused as refused:
        raise UserError(f"release refused: {refused}") from None
    print(released.summary())
    return 0


def _verify(args: argparse.Namespace) -> int:
    """Exit status 0 when every chain verifies, 1 when any does not; errors are UserError's 2."""
    dsn = load_floor_reporting_dsn(args.config)
    checks: list[ChainCheck] = []  # a line each: small beside a table's entries, which are never kept
    with (
        _postgresql_errors(),
        psycopg.connect(dsn, autocommit=True, connect_timeout=POSTGRES_CONNECT_TIMEOUT_S) as connection,
    ):
        auditor_session(connection, statement_timeout_s=VERIFY_STATEMENT_TIMEOUT_S)
        table_ids = floor_table_ids(connection, args.table or ())
        for check in verify_floor(connection, table_ids):
            checks.append(check)
            if not args.json:  # as each table is done: a big floor's walk takes a while
                print(_verify_line(check), flush=True)
    failed = sum(1 for check in checks if not check.ok)
    entries = sum(check.entries for check in checks)
    if args.json:
        document = {
            "ok": failed == 0,
            "tables": len(checks),
            "tables_ok": len(checks) - failed,
            "tables_failed": failed,
            "entries_verified": entries,
            "checks": [
                {"table_id": c.table_id, "ok": c.ok, "entries": c.entries, "problem": c.problem or None}
                for c in checks
            ],
        }
        print(json.dumps(document, indent=2))
    else:
        print(
            f"floor verify: {len(checks)} tables, {len(checks) - failed} ok, {failed} failed; "
            f"{entries} entries verified"
        )
    return 0 if failed == 0 else 1


def _verify_line(check: ChainCheck) -> str:
    if check.ok:
        return f"{check.table_id}: ok, {check.entries} entries"
    return f"{check.table_id}: FAILED after {check.entries} verified entries: {check.problem}"


def _report(args: argparse.Namespace) -> int:
    from controller.floor.gaming_day import read_floor_day, render_report  # noqa: PLC0415

    config = load_floor_config(args.config)
    with _postgresql_errors(), psycopg.connect(config.dsn) as connection:
        connection.read_only = True
        report = read_floor_day(connection, args.day, config.property_settings, pit=args.pit)
    print(report.csv_text() if args.csv else render_report(report), end="")
    return 0


def _panel(args: argparse.Namespace) -> int:
    from controller.floor.panel import FloorPanelSettings, serve_panel  # noqa: PLC0415 - uvicorn only here

    config = load_floor_panel_config(args.config)
    users = FloorUserFile(config.users_file)
    if users.error:
        raise UserError(users.error)
    if not users:
        # Served all the same (users can be added while it runs), but said: nobody could log in.
        print(
            f"floor panel: no users yet in {config.users_file} (flushtable floor user add)", file=sys.stderr
        )
    settings = FloorPanelSettings(
        config.reporting_dsn,
        config.writer_dsn,
        users,
        property_settings=config.property_settings,
        surveillance_big_win_cents=config.surveillance_big_win_cents,
        pits=config.pits,
    )

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for number in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(number, stop.set)
        server = await serve_panel(settings, host=config.bind, port=config.port)
        print(f"floor panel: {server.url}/  users: {config.users_file}", file=sys.stderr, flush=True)
        try:
            await stop.wait()
        finally:
            await server.stop()
        print("floor panel: stopped", file=sys.stderr, flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 0


def _user(args: argparse.Namespace) -> int:
    if args.users_file is not None:
        path = Path(args.users_file)
    elif args.config is not None:
        path = floor_users_file(args.config)
    else:
        raise UserError("floor user: give --config floor.toml (or --users-file)")
    if args.user_action == "add":
        check_writable_file(path, "users file")
    elif not path.parent.is_dir():
        raise UserError(f"users file {path}: no such file, and no directory {path.parent}")
    if args.user_action == "list":
        for user in sorted(read_users(path).values(), key=lambda u: u.name):
            print(f"{user.name}\t{user.role}" + ("\tdisabled" if user.disabled else ""))
        return 0
    if args.user_action == "disable":
        disabled = disable_user(path, args.name)
        print(f"user {disabled.name} ({disabled.role}) disabled in {path}: its sessions end", file=sys.stderr)
        return 0
    role = parse_floor_role(args.role)
    password = read_password()
    if not password:
        raise UserError("password: empty (give it on standard input or at the prompt)")
    user = add_user(path, args.name, role, password, replace=args.replace)
    print(f"user {user.name} ({user.role}) saved in {path}", file=sys.stderr)
    return 0
