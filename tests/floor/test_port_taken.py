"""A server started on a port another process already listens on (what a port probed free by one pytest
worker and taken by the other's server before ours binds it looks like) is reported as not started,
naming the port: never taken for started because the other process answers on the port."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.simulation.floor import postgres as postgres_module
from controller.simulation.floor.processes import PORT_SLICE_ENV, port_slice
from controller.simulation.floor.servers import (
    NatsServer,
    PostgresCluster,
    ServerError,
    TlsFiles,
    admin_user,
    free_port,
    nats_server_binary,
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


@pytest.mark.parametrize("own_slice", ["0/2", "1/2", "2/3"])
def test_free_port_names_ports_of_its_own_slice_only(monkeypatch: pytest.MonkeyPatch, own_slice: str) -> None:
    """Two workers given slices 0/2 and 1/2 are never handed the same port by free_port()."""
    own, slices = (int(part) for part in own_slice.split("/"))
    monkeypatch.setenv(PORT_SLICE_ENV, own_slice)
    ports = [free_port() for _ in range(200)]
    assert [port for port in ports if port_slice(port, slices) != own] == []


def test_a_bad_slice_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PORT_SLICE_ENV, "2/2")
    with pytest.raises(ServerError, match=r"FLUSHTABLE_PORT_SLICE='2/2': expected K/N with 0 <= K < N"):
        free_port()


def test_each_xdist_worker_has_a_slice_of_its_own(request: pytest.FixtureRequest) -> None:
    """tests/conftest.py gives worker gwK of N the slice K/N (one process: no slice, any free port)."""
    worker = getattr(request.config, "workerinput", None)
    if worker is None:
        assert os.environ.get(PORT_SLICE_ENV, "") == ""
    else:
        assert os.environ[PORT_SLICE_ENV] == f"{int(worker['workerid'][2:])}/{worker['workercount']}"


def test_free_port_does_not_name_a_port_again_soon(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two probes of one process before either server binds (a floor's client and leaf ports, a demo's
    panel port and then its servers') are two ports: the kernel may hand a closed probe's port out again
    at once, and within a slice it has half as many to pick from."""
    monkeypatch.setenv(PORT_SLICE_ENV, "0/2")
    ports = [free_port() for _ in range(2000)]
    again = [(index, port) for index, port in enumerate(ports) if port in ports[max(0, index - 64) : index]]
    assert again == []


def test_a_server_its_wrapper_runs_without_exec_is_started(tmp_path: Path, floor_tls_directory: Path) -> None:
    """A nats-server run by a script that stays its parent (FLUSHTABLE_NATS_SERVER naming a wrapper that
    does not exec it): the listener is the child's child, and the start still sees it."""
    tls = TlsFiles(
        floor_tls_directory / "ca.pem", floor_tls_directory / "server.pem", floor_tls_directory / "server.key"
    )
    wrapper = tmp_path / "nats-server-wrapper"
    # `exit $?` after it: the shell waits for the server instead of running it as its last command.
    wrapper.write_text(f'#!/bin/sh\n"{nats_server_binary()}" "$@"\nexit $?\n')
    wrapper.chmod(0o755)
    server = NatsServer(
        tmp_path / "nats", free_port(), tls, [admin_user("admin-password")], binary=str(wrapper)
    )
    server.start_timeout_s = 15.0
    try:
        server.start()
        assert server.process is not None
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
        assert len(children) == 1, children  # the wrapper is still there, the server below it
    finally:
        if server.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.process.pid, signal.SIGKILL)  # the wrapper and its server: one session
            server.process.wait(timeout=10)


def test_a_postgresql_cluster_given_port_0_picks_it_after_initdb_and_keeps_it(
    cluster_directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """initdb takes seconds: a port picked before it would lie unbound that long, for the other worker's
    port-0 binds to be handed."""
    data_initialised_when_picked: list[bool] = []

    def recorded_pick() -> int:
        data_initialised_when_picked.append((cluster_directory / "data" / "PG_VERSION").exists())
        return free_port()

    monkeypatch.setattr(postgres_module, "free_port", recorded_pick)
    cluster = PostgresCluster(cluster_directory, 0)
    try:
        cluster.start()
        port = cluster.port
        assert port != 0
        assert data_initialised_when_picked == [True]
        cluster.stop()
        cluster.start()
        assert (cluster.port, data_initialised_when_picked) == (port, [True])
    finally:
        cluster.stop(mode="immediate")
