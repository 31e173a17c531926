"""The floor's PostgreSQL as a child process: a cluster of its own (initdb) under a directory, on
127.0.0.1, password authentication for TCP, run as the postgres user when we are root."""

from __future__ import annotations

import os
import pwd
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from controller.errors import ServerError
from controller.simulation.floor.processes import end_child, free_port, wait_port

POSTGRES_USER = "postgres"  # the Debian package's system user: a cluster is never run as root


def postgres_bindir() -> Path:
    """The newest installed PostgreSQL's binaries (Debian keeps them under /usr/lib/postgresql/N/bin)."""
    root = Path("/usr/lib/postgresql")
    versions = sorted(
        (p for p in root.glob("*/bin") if (p / "postgres").exists()), key=lambda p: int(p.parent.name)
    )
    if not versions:
        raise ServerError("PostgreSQL is not installed (make installs it: apt-get install postgresql)")
    return versions[-1]


@dataclass(frozen=True, slots=True)
class _RunAs:
    """PostgreSQL refuses to run as root: when we are root its binaries run as the postgres user (set
    by Popen itself, no wrapper process, so our signals reach the server)."""

    user: int | None = None
    group: int | None = None
    extra_groups: tuple[int, ...] | None = None


def _cluster_user() -> _RunAs:
    if os.geteuid() != 0:
        return _RunAs()
    entry = pwd.getpwnam(POSTGRES_USER)
    return _RunAs(entry.pw_uid, entry.pw_gid, ())


@dataclass
class PostgresCluster:
    """A PostgreSQL cluster of its own (initdb) under ``directory``, on 127.0.0.1:``port``, password
    authentication for TCP. ``superuser_password`` is the cluster owner's, used only to set up.
    ``port`` 0: a free port picked at the first start, after initdb, which takes seconds: a port
    picked before it stays unbound that long, for another process to be handed (pytest-xdist's other
    worker binding port 0). The port is kept for later starts."""

    directory: Path
    port: int
    superuser_password: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen[bytes] | None = None
    start_timeout_s: float = 30.0

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def superuser_dsn(self) -> str:
        return self.dsn("postgres", self.superuser_password, "postgres")

    def dsn(self, user: str, password: str, dbname: str = "floor") -> str:
        address = f"host=127.0.0.1 port={self.port}"
        return f"{address} user={user} password={password} dbname={dbname} connect_timeout=5"

    def _own(self) -> None:
        if os.geteuid() == 0:
            entry = pwd.getpwnam(POSTGRES_USER)
            for path in (self.directory, *self.directory.rglob("*")):
                os.chown(path, entry.pw_uid, entry.pw_gid)

    def init(self) -> None:
        if (self.data_dir / "PG_VERSION").exists():
            return
        bindir = postgres_bindir()
        self.directory.mkdir(parents=True, exist_ok=True)
        password_file = self.directory / "initdb.pw"
        password_file.write_text(self.superuser_password + "\n")
        (self.directory / "superuser.pw").write_text(self.superuser_password + "\n")
        (self.directory / "superuser.pw").chmod(0o600)
        self._own()
        run_as = _cluster_user()
        result = subprocess.run(
            [
                str(bindir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={password_file}",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ],
            capture_output=True,
            user=run_as.user,
            group=run_as.group,
            extra_groups=run_as.extra_groups,
            text=True,
            check=False,
            timeout=120,
        )
        password_file.unlink()
        if result.returncode != 0:
            raise ServerError(f"initdb: {result.stderr.strip().splitlines()[-1:]}")

    def start(self) -> None:
        self.init()
        if self.port == 0:
            self.port = free_port()
        stored = self.directory / "superuser.pw"
        if stored.exists():
            self.superuser_password = stored.read_text().strip()
        bindir = postgres_bindir()
        log = self.directory / "postgres.log"
        self._own()
        run_as = _cluster_user()
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    str(bindir / "postgres"),
                    "-D",
                    str(self.data_dir),
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"unix_socket_directories={self.directory}",
                    "-c",
                    "max_connections=200",
                    "-c",
                    "fsync=on",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                user=run_as.user,
                group=run_as.group,
                extra_groups=run_as.extra_groups,
            )
        wait_port("127.0.0.1", self.port, self.process, self.start_timeout_s, log)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            try:
                with psycopg.connect(self.superuser_dsn):
                    return
            except psycopg.OperationalError as error:
                if time.monotonic() > deadline:
                    raise ServerError(f"PostgreSQL on port {self.port} not ready: {error}") from None
                time.sleep(0.1)

    def stop(self, *, mode: str = "fast") -> None:
        """Stop it (``fast``: SIGINT, rolls back open transactions; ``immediate``: SIGQUIT, a crash)."""
        if self.process is not None:
            end_child(self.process, ask=signal.SIGQUIT if mode == "immediate" else signal.SIGINT, grace_s=30)
        self.process = None
