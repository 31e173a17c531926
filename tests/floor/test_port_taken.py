"""A server started on a port another process already listens on (what a port probed free by one pytest
worker and taken by the other's server before ours binds it looks like) is reported as not started,
naming the port: never taken for started because the other process answers on the port."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.simulation.floor.servers import (
    NatsServer,
    PostgresCluster,
    ServerError,
    TlsFiles,
    admin_user,
)


@contextlib.contextmanager
def _taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 another process's server listens on (this socket, never accepting)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taker:
        taker.bind(("127.0.0.1", 0))
        taker.listen()
        yield int(taker.getsockname()[1])


def test_a_nats_server_on_a_taken_port_is_not_started(tmp_path: Path, floor_tls_directory: Path) -> None:
    tls = TlsFiles(
        floor_tls_directory / "ca.pem", floor_tls_directory / "server.pem", floor_tls_directory / "server.key"
    )
    with _taken_port() as port:
        server = NatsServer(tmp_path / "nats", port, tls, [admin_user("admin-password")])
        try:
            with pytest.raises(ServerError, match=f"127.0.0.1:{port}.*address already in use"):
                server.start()
        finally:
            server.kill()


@pytest.fixture
def cluster_directory() -> Iterator[Path]:
    # As tests/floor/conftest.py's clusters: not tmp_path (0700 root), the cluster runs as postgres.
    directory = Path(tempfile.mkdtemp(prefix="flushtable-floor-pg-taken-"))
    os.chmod(directory, 0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_a_postgresql_on_a_taken_port_is_not_started(cluster_directory: Path) -> None:
    with _taken_port() as port:
        cluster = PostgresCluster(cluster_directory, port)
        try:
            with pytest.raises(ServerError, match="Address already in use"):
                cluster.start()
        finally:
            cluster.stop(mode="immediate")
