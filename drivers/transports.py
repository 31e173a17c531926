"""Byte transports for the drivers, one for each form of device URL (parsed by drivers/urls.py).

- a serial device path (``/dev/ttyUSB0``, ``/dev/serial/by-id/...``, a pty's ``/dev/pts/N``) or
  ``serial:///dev/ttyUSB0?baudrate=115200``: pyserial-asyncio-fast (the port's fd is watched by the
  event loop itself, no thread per port);
- ``socket://host:port``: asyncio's own TCP connection (pyserial's socket:// would only wrap the same);
- ``usb://VID:PID?serial=SN``: pyusb; every blocking pyusb call runs on the transport's own worker
  threads, never on the event loop; the pyusb backend is passed in (``usb_backend=``), or libusb's;
- ``sim://NAME``: an in-process line to a simulated device, found through the ``sim_hub=`` object.

A transport moves bytes and nothing else: it opens, reads chunks, writes chunks and closes. When the
line goes (port closed, cable pulled, peer gone) ``read()`` raises ``TransportClosed`` with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

import serial
import serial_asyncio_fast
import usb.core
import usb.util

from drivers.urls import SerialUrl, SimUrl, SocketUrl, UsbUrl, parse_device_url

USB_READ_TIMEOUT_MS = 100  # how long one blocking bulk read may hold its worker before close is noticed
USB_WRITE_TIMEOUT_MS = 1000
USB_READ_SIZE_BYTES = 4096


class TransportError(Exception):
    """The transport could not be opened (no such port, refused, device absent)."""


class TransportClosed(Exception):
    """The line went away while open."""


class SimLineLike(Protocol):
    async def read(self) -> bytes: ...
    def write(self, data: bytes) -> None: ...
    def close(self) -> None: ...


class SimConnector(Protocol):
    """What serves ``sim://`` URLs (sim_devices.ports.SimHub); drivers do not import sim_devices."""

    def connect_sim(self, name: str) -> SimLineLike: ...


class Transport(ABC):
    """One open (or openable) line to one device."""

    def __init__(self, url: str) -> None:
        self.url = url

    @abstractmethod
    async def open(self) -> None:
        """Open the line; raise TransportError if it cannot be."""

    @abstractmethod
    async def read(self) -> bytes:
        """The next chunk of bytes (never empty); raise TransportClosed when the line is gone."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Queue bytes for sending without blocking; raise TransportClosed when the line is gone."""

    @abstractmethod
    async def close(self) -> None:
        """Close and release everything; safe to call twice or on a transport never opened."""


def make_transport(url: str, *, usb_backend: Any = None, sim_hub: SimConnector | None = None) -> Transport:
    """The transport for ``url``. ``usb_backend`` is a pyusb backend (None: libusb's)."""
    parsed = parse_device_url(url)
    if isinstance(parsed, SerialUrl):
        return SerialTransport(url, parsed)
    if isinstance(parsed, SocketUrl):
        return SocketTransport(url, parsed)
    if isinstance(parsed, UsbUrl):
        return UsbTransport(url, parsed, backend=usb_backend)
    if parsed.transport != "sim":
        raise ValueError(
            f"{url!r}: the simulator serves this device; its driver opens the URL the simulator serves"
        )
    if sim_hub is None:
        raise ValueError(f"{url!r}: sim:// is only for in-process simulations (no sim hub given)")
    return SimTransport(url, parsed, sim_hub)


# --- stream transports (serial, TCP): asyncio protocols feeding a queue ----------------------------
_CLOSED = b""


class _QueueProtocol(asyncio.Protocol):
    def __init__(self, queue: asyncio.Queue[bytes], on_lost: Any) -> None:
        self._queue = queue
        self._on_lost = on_lost

    def data_received(self, data: bytes) -> None:
        self._queue.put_nowait(bytes(data))

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(exc)
        self._queue.put_nowait(_CLOSED)


_StreamSpec = TypeVar("_StreamSpec", SerialUrl, SocketUrl)


class _StreamTransport(Transport, Generic[_StreamSpec]):
    """A line asyncio watches itself (serial, TCP): each subclass says only how it connects."""

    def __init__(self, url: str, spec: _StreamSpec) -> None:
        super().__init__(url)
        self.spec: _StreamSpec = spec
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._transport: asyncio.Transport | None = None
        self._lost_reason = "closed"
        self._lost = asyncio.Event()

    def _protocol(self) -> _QueueProtocol:
        return _QueueProtocol(self._queue, self._connection_lost)

    async def open(self) -> None:
        self._transport = await self._connect(asyncio.get_running_loop())

    @abstractmethod
    async def _connect(self, loop: asyncio.AbstractEventLoop) -> asyncio.Transport:
        """The line, open, its bytes fed to a fresh ``self._protocol()``; TransportError when it cannot be."""

    def _connection_lost(self, exc: Exception | None) -> None:
        self._lost_reason = f"line lost: {exc}" if exc is not None else "line closed by peer"
        self._lost.set()

    async def read(self) -> bytes:
        data = await self._queue.get()
        if data is _CLOSED or not data:
            self._queue.put_nowait(_CLOSED)  # every later read sees the end too
            raise TransportClosed(self._lost_reason)
        return data

    def write(self, data: bytes) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            raise TransportClosed(self._lost_reason)
        transport.write(data)

    async def close(self) -> None:
        transport, self._transport = self._transport, None
        if transport is None:
            return
        self._lost_reason = "closed"
        transport.close()
        # connection_lost follows close; wait for it so no fd outlives close().
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._lost.wait(), timeout=2.0)


class SerialTransport(_StreamTransport[SerialUrl]):
    async def _connect(self, loop: asyncio.AbstractEventLoop) -> asyncio.Transport:
        try:
            transport, _ = await serial_asyncio_fast.create_serial_connection(
                loop,
                self._protocol,
                self.spec.path,
                baudrate=self.spec.baudrate,
                exclusive=True,  # a second opener (another controller) is refused, not interleaved
            )
        except (serial.SerialException, OSError, ValueError) as error:
            raise TransportError(f"{self.spec.path}: {error}") from error
        return transport


class SocketTransport(_StreamTransport[SocketUrl]):
    async def _connect(self, loop: asyncio.AbstractEventLoop) -> asyncio.Transport:
        try:
            transport, _ = await loop.create_connection(self._protocol, self.spec.host, self.spec.port)
        except OSError as error:
            raise TransportError(f"{self.spec.host}:{self.spec.port}: {error.strerror or error}") from error
        assert isinstance(transport, asyncio.Transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # frames are small: no Nagle
        return transport


# --- USB via pyusb --------------------------------------------------------------------------------
class UsbTransport(Transport):
    """Bulk IN/OUT endpoints of interface 0. pyusb blocks, so it runs on two worker threads: one that
    reads (a bulk read waits up to USB_READ_TIMEOUT_MS, then looks whether to stop) and one for writes,
    so a write never queues behind a waiting read."""

    def __init__(self, url: str, spec: UsbUrl, *, backend: Any = None) -> None:
        super().__init__(url)
        self.spec = spec
        self._backend = backend
        self._device: Any = None
        self._ep_in: Any = None
        self._ep_out: Any = None
        self._reader_pool: ThreadPoolExecutor | None = None
        self._writer_pool: ThreadPoolExecutor | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[bytes] = asyncio.Queue()
        self._closing = False
        self._lost_reason = "closed"

    def _find_and_configure(self) -> None:
        wanted_serial = self.spec.serial_number

        def matches(device: Any) -> bool:
            if wanted_serial is None:
                return True
            try:
                return bool(device.serial_number == wanted_serial)
            except (usb.core.USBError, ValueError):
                return False  # a device we may not read strings from is not ours

        device = usb.core.find(
            idVendor=self.spec.vendor_id,
            idProduct=self.spec.product_id,
            custom_match=matches,
            backend=self._backend,
        )
        if device is None:
            raise TransportError(f"{self.url}: no such USB device on the bus")
        # A vendor interface should have no kernel driver; if one claimed it, take it back.
        with contextlib.suppress(NotImplementedError, usb.core.USBError):
            if device.is_kernel_driver_active(0):
                device.detach_kernel_driver(0)
        device.set_configuration()
        interface = device.get_active_configuration()[(0, 0)]
        self._ep_out = usb.util.find_descriptor(
            interface,
            custom_match=lambda ep: usb.util.endpoint_direction(ep.bEndpointAddress) == usb.util.ENDPOINT_OUT,
        )
        self._ep_in = usb.util.find_descriptor(
            interface,
            custom_match=lambda ep: usb.util.endpoint_direction(ep.bEndpointAddress) == usb.util.ENDPOINT_IN,
        )
        if self._ep_in is None or self._ep_out is None:
            usb.util.dispose_resources(device)
            raise TransportError(f"{self.url}: interface 0 has no bulk IN/OUT endpoint pair")
        self._device = device

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        self._reader_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="usb-read")
        self._writer_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="usb-write")
        try:
            await loop.run_in_executor(self._writer_pool, self._find_and_configure)
        except (usb.core.USBError, usb.core.NoBackendError, TransportError) as error:
            await self._shutdown_pools()
            if isinstance(error, TransportError):
                raise
            raise TransportError(f"{self.url}: {error}") from error
        self._reader_task = asyncio.create_task(self._read_loop(), name=f"usb-read {self.url}")

    def _read_blocking(self) -> bytes:
        try:
            data = self._device.read(self._ep_in, USB_READ_SIZE_BYTES, timeout=USB_READ_TIMEOUT_MS)
        except usb.core.USBTimeoutError:
            return b""
        return bytes(data)

    async def _read_loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self._closing:
                data = await loop.run_in_executor(self._reader_pool, self._read_blocking)
                if data:
                    self._queue.put_nowait(data)
        except usb.core.USBError as error:
            self._lost_reason = f"line lost: {error}"
        finally:
            self._queue.put_nowait(_CLOSED)

    async def read(self) -> bytes:
        data = await self._queue.get()
        if not data:
            self._queue.put_nowait(_CLOSED)
            raise TransportClosed(self._lost_reason)
        return data

    def write(self, data: bytes) -> None:
        if self._closing or self._device is None or self._writer_pool is None:
            raise TransportClosed(self._lost_reason)
        # One worker thread: writes go out in the order they were queued.
        self._writer_pool.submit(self._write_blocking, self._device, data, asyncio.get_running_loop())

    def _write_blocking(self, device: Any, data: bytes, loop: asyncio.AbstractEventLoop) -> None:
        try:
            device.write(self._ep_out, data, USB_WRITE_TIMEOUT_MS)
        except usb.core.USBError as error:
            self._lost_reason = f"line lost: {error}"
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._queue.put_nowait, _CLOSED)

    async def _shutdown_pools(self) -> None:
        for pool in (self._reader_pool, self._writer_pool):
            if pool is not None:
                pool.shutdown(wait=True)  # idle by now: the read loop has ended
        self._reader_pool = self._writer_pool = None

    async def close(self) -> None:
        self._closing = True
        if self._reader_task is not None:
            # The worker's bulk read returns within USB_READ_TIMEOUT_MS; only then release the device.
            await asyncio.wait({self._reader_task}, timeout=2.0)
            if not self._reader_task.done():
                self._reader_task.cancel()
            self._reader_task = None
        device, self._device = self._device, None
        if device is not None and self._writer_pool is not None:
            loop = asyncio.get_running_loop()
            with contextlib.suppress(usb.core.USBError):
                await loop.run_in_executor(self._writer_pool, usb.util.dispose_resources, device)
        await self._shutdown_pools()


# --- in-process simulation -------------------------------------------------------------------------
class SimTransport(Transport):
    def __init__(self, url: str, spec: SimUrl, hub: SimConnector) -> None:
        super().__init__(url)
        self.spec = spec
        self._hub = hub
        self._line: SimLineLike | None = None

    async def open(self) -> None:
        try:
            self._line = self._hub.connect_sim(self.spec.name)
        except ConnectionError as error:
            raise TransportError(str(error)) from error

    async def read(self) -> bytes:
        if self._line is None:
            raise TransportClosed("closed")
        data = await self._line.read()
        if not data:
            raise TransportClosed("line closed by peer")
        return data

    def write(self, data: bytes) -> None:
        if self._line is None:
            raise TransportClosed("closed")
        try:
            self._line.write(data)
        except ConnectionError as error:
            raise TransportClosed(str(error)) from error

    async def close(self) -> None:
        line, self._line = self._line, None
        if line is not None:
            line.close()
