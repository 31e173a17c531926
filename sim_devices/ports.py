"""Where a simulated device's bytes meet a real line: a pseudo-terminal, a TCP socket or ``sim://``.

(The USB port lives in sim_devices/usb.py.) A port moves raw bytes only; the firmware on top of it
(sim_devices/firmware.py) knows the protocol. Every port can be unplugged and plugged back, and can
damage the bytes in either direction with a NoiseManipulator.

The firmware sees the line through ``WireListener``: ``wire_up`` when the line becomes usable (the pty
exists, a TCP client connected, the USB device enumerated), ``wire_bytes`` for every chunk that
arrives, ``wire_down`` when it goes (unplugged, client gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import tempfile
import tty
from abc import ABC, abstractmethod
from collections import deque
from pathlib import Path
from typing import Protocol

from sim_devices.noise import NoiseManipulator

# A real UART does not wait for its receiver: what nobody reads is lost. We keep this much queued
# for a slow reader, then drop, as the wire would.
PTY_WRITE_BACKLOG_LIMIT_BYTES = 256 * 1024


class WireListener(Protocol):
    def wire_up(self) -> None: ...
    def wire_bytes(self, data: bytes) -> None: ...
    def wire_down(self) -> None: ...


class DevicePort(ABC):
    """One simulated device's end of a line."""

    kind: str = "?"

    def __init__(
        self, *, noise_out: NoiseManipulator | None = None, noise_in: NoiseManipulator | None = None
    ):
        self.listener: WireListener | None = None
        self.noise_out = noise_out  # device -> controller
        self.noise_in = noise_in  # controller -> device
        self.plugged = False
        self.bytes_sent = 0
        self.bytes_received = 0

    def attach(self, listener: WireListener) -> None:
        self.listener = listener

    # --- the firmware's side ------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Put bytes on the line (through the noise, if any). Silently lost when unplugged."""
        if not self.plugged or not data:
            return
        self.bytes_sent += len(data)
        chunks = self.noise_out(data) if self.noise_out is not None else [data]
        for chunk in chunks:
            self._transmit(chunk)

    # --- the line's side ------------------------------------------------------------------------
    def _deliver(self, data: bytes) -> None:
        if not data:
            return
        self.bytes_received += len(data)
        chunks = self.noise_in(data) if self.noise_in is not None else [data]
        if self.listener is None:
            return
        for chunk in chunks:
            self.listener.wire_bytes(chunk)

    def _up(self) -> None:
        """Plugged in: the controller's side sees the line come."""
        self.plugged = True
        if self.listener is not None:
            self.listener.wire_up()

    def _down(self) -> None:
        if self.listener is not None:
            self.listener.wire_down()

    def _line_lost(self) -> None:
        """The far end went (a client closed, a line dropped): down, once, if it was up."""
        if self.plugged:
            self.plugged = False
            self._down()

    @abstractmethod
    def _transmit(self, data: bytes) -> None: ...

    @property
    @abstractmethod
    def url(self) -> str:
        """What the controller's configuration names to reach this device."""

    async def start(self) -> None:
        """Plug in for the first time: every kind of port starts as a plug."""
        await self.plug()

    @abstractmethod
    async def unplug(self) -> None:
        """Pull the cable: the controller's side sees the line go."""

    @abstractmethod
    async def plug(self) -> None:
        """Plug the cable back in, at the same address."""

    async def stop(self) -> None:
        """Unplug for good and release every resource."""
        if self.plugged:
            await self.unplug()


class PtyPort(DevicePort):
    """A pseudo-terminal in raw mode; the controller opens its slave side with pyserial like any UART.

    ``link_path``, when given, is a symlink kept pointing at the current /dev/pts/N, the way a udev rule
    gives a USB-serial adapter a stable name: unplugging removes it, plugging back makes a new pty and
    points the link at it.
    """

    kind = "pty"

    def __init__(
        self,
        *,
        link_path: Path | None = None,
        noise_out: NoiseManipulator | None = None,
        noise_in: NoiseManipulator | None = None,
    ) -> None:
        super().__init__(noise_out=noise_out, noise_in=noise_in)
        self.link_path = link_path
        self._master_fd = -1
        # We hold the slave open ourselves (and never read it) so the master does not see EIO while the
        # controller has the port closed between reconnects, just as a UART's line exists unopened.
        self._slave_fd = -1
        self.slave_name = ""
        self._backlog: deque[bytes] = deque()
        self._backlog_bytes = 0
        self._writer_armed = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return str(self.link_path) if self.link_path is not None else self.slave_name

    async def plug(self) -> None:
        if self.plugged:
            return
        self._loop = asyncio.get_running_loop()
        master_fd, slave_fd = os.openpty()
        tty.setraw(slave_fd)
        os.set_blocking(master_fd, False)
        self._master_fd, self._slave_fd = master_fd, slave_fd
        self.slave_name = os.ttyname(slave_fd)
        if self.link_path is not None:
            # Replace the link atomically: a reader never sees it missing or half-made.
            with tempfile.TemporaryDirectory(dir=self.link_path.parent) as scratch:
                temporary = Path(scratch) / "link"
                temporary.symlink_to(self.slave_name)
                os.replace(temporary, self.link_path)
        self._loop.add_reader(master_fd, self._on_readable)
        self._up()

    async def unplug(self) -> None:
        if not self.plugged:
            return
        self.plugged = False
        assert self._loop is not None
        self._loop.remove_reader(self._master_fd)
        if self._writer_armed:
            self._loop.remove_writer(self._master_fd)
            self._writer_armed = False
        self._backlog.clear()
        self._backlog_bytes = 0
        if self.link_path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.link_path.unlink()
        os.close(self._master_fd)
        os.close(self._slave_fd)
        self._master_fd = self._slave_fd = -1
        self._down()

    def _on_readable(self) -> None:
        try:
            data = os.read(self._master_fd, 65536)
        except BlockingIOError:
            return
        except OSError as error:
            if error.errno == errno.EIO:  # no slave open; cannot happen while we hold ours
                return
            raise
        self._deliver(data)

    def _transmit(self, data: bytes) -> None:
        if self._backlog:
            self._queue(data)
            return
        try:
            written = os.write(self._master_fd, data)
        except BlockingIOError:
            written = 0
        if written < len(data):
            self._queue(data[written:])

    def _queue(self, data: bytes) -> None:
        if self._backlog_bytes + len(data) > PTY_WRITE_BACKLOG_LIMIT_BYTES:
            return  # the wire drops what nobody reads
        self._backlog.append(data)
        self._backlog_bytes += len(data)
        if not self._writer_armed:
            assert self._loop is not None
            self._loop.add_writer(self._master_fd, self._on_writable)
            self._writer_armed = True

    def _on_writable(self) -> None:
        while self._backlog:
            head = self._backlog[0]
            try:
                written = os.write(self._master_fd, head)
            except BlockingIOError:
                return
            self._backlog_bytes -= written
            if written < len(head):
                self._backlog[0] = head[written:]
                return
            self._backlog.popleft()
        assert self._loop is not None
        self._loop.remove_writer(self._master_fd)
        self._writer_armed = False


class _TcpConnection(asyncio.Protocol):
    def __init__(self, port: TcpPort) -> None:
        self.port = port
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.port._client_connected(self)

    def data_received(self, data: bytes) -> None:
        if self.port._client is self:
            self.port._deliver(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.port._client_gone(self)


class TcpPort(DevicePort):
    """A TCP listener on 127.0.0.1, like a serial device server; one controller at a time.

    A new connection replaces the old one (the controller reconnecting after it lost the old socket).
    The device's line is "up" while a controller is connected.
    """

    kind = "tcp"

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        noise_out: NoiseManipulator | None = None,
        noise_in: NoiseManipulator | None = None,
    ) -> None:
        super().__init__(noise_out=noise_out, noise_in=noise_in)
        self.host = host
        self.port = port
        self._server: asyncio.Server | None = None
        self._client: _TcpConnection | None = None
        self._listening = False

    @property
    def url(self) -> str:
        return f"socket://{self.host}:{self.port}"

    async def plug(self) -> None:
        if self._listening:
            return
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: _TcpConnection(self), self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._listening = True

    async def unplug(self) -> None:
        if not self._listening:
            return
        self._listening = False
        assert self._server is not None
        self._server.close()
        client = self._client
        if client is not None and client.transport is not None:
            client.transport.abort()
        await self._server.wait_closed()
        self._server = None
        if self.plugged:
            self.plugged = False
            self._client = None
            self._down()

    async def stop(self) -> None:
        await self.unplug()

    def _client_connected(self, connection: _TcpConnection) -> None:
        old = self._client
        self._client = connection
        if old is not None and old.transport is not None:
            old.transport.abort()
            self.plugged = False
            self._down()
        self._up()

    def _client_gone(self, connection: _TcpConnection) -> None:
        if self._client is connection:
            self._client = None
            self._line_lost()

    def _transmit(self, data: bytes) -> None:
        client = self._client
        if client is not None and client.transport is not None and not client.transport.is_closing():
            client.transport.write(data)


class SimLine:
    """The controller's end of an in-process ``sim://`` line (drivers.transports.sim uses it)."""

    def __init__(self, port: SimPort) -> None:
        self._port = port
        self._incoming: asyncio.Queue[bytes] = asyncio.Queue()
        self.closed = False

    async def read(self) -> bytes:
        """The next chunk from the device; b"" once the line is closed (unplugged)."""
        if self.closed and self._incoming.empty():
            return b""
        return await self._incoming.get()

    def write(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError("sim line closed")
        asyncio.get_running_loop().call_soon(self._port._from_controller, self, data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._incoming.put_nowait(b"")
            self._port._line_closed(self)

    def _push(self, data: bytes) -> None:
        if not self.closed:
            self._incoming.put_nowait(data)


class SimHub:
    """In-process ``sim://NAME`` registry for unit tests: no file descriptor, no socket.

    The hub is an object handed to the driver (drivers.transports.open_transport(..., sim_hub=hub)),
    never a module global.
    """

    def __init__(self) -> None:
        self._ports: dict[str, SimPort] = {}

    def add(self, name: str, port: SimPort) -> None:
        self._ports[name] = port
        port.name = name

    def connect_sim(self, name: str) -> SimLine:
        port = self._ports.get(name)
        if port is None:
            raise ConnectionRefusedError(f"sim://{name}: no such simulated device")
        return port._connect()


class SimPort(DevicePort):
    kind = "sim"

    def __init__(
        self, *, noise_out: NoiseManipulator | None = None, noise_in: NoiseManipulator | None = None
    ) -> None:
        super().__init__(noise_out=noise_out, noise_in=noise_in)
        self.name = ""
        self._present = False
        self._line: SimLine | None = None

    @property
    def url(self) -> str:
        return f"sim://{self.name}"

    async def plug(self) -> None:
        self._present = True

    async def unplug(self) -> None:
        self._present = False
        if self._line is not None:
            self._line.close()

    def _connect(self) -> SimLine:
        if not self._present:
            raise ConnectionRefusedError(f"sim://{self.name}: unplugged")
        if self._line is not None:
            self._line.close()
        self._line = SimLine(self)
        self._up()
        return self._line

    def _line_closed(self, line: SimLine) -> None:
        if self._line is line:
            self._line = None
            self._line_lost()

    def _from_controller(self, line: SimLine, data: bytes) -> None:
        if line is self._line:
            self._deliver(data)

    def _transmit(self, data: bytes) -> None:
        if self._line is not None:
            self._line._push(data)
