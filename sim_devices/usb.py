"""A virtual USB bus for pyusb: ``VirtualUsbBackend(usb.backend.IBackend)`` and a ``UsbPort``.

The controller finds a simulated device exactly as it finds a real one, with
``usb.core.find(idVendor=..., idProduct=..., backend=backend)``; the backend is handed over as an
object, never switched on through an environment variable or a patched module global. Each device has
a device descriptor (VID/PID, manufacturer, product and serial number strings), one configuration with
one vendor-specific interface, and two bulk endpoints (OUT 0x01, IN 0x81) whose transfers reach the
device's firmware. Unplugging removes the device from enumeration and fails every transfer on an old
handle with ENODEV, as libusb does.

pyusb calls this backend from whatever thread the driver uses (the driver keeps them off the event
loop); the firmware runs on the event loop, so bytes cross with ``call_soon_threadsafe``.
"""

from __future__ import annotations

import array
import asyncio
import errno
import itertools
import threading
import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import usb.backend
import usb.core

from sim_devices.noise import NoiseManipulator
from sim_devices.ports import DevicePort

ENDPOINT_OUT = 0x01
ENDPOINT_IN = 0x81
BULK_MAX_PACKET_BYTES = 64
_LANGID_EN_US = 0x0409
_GET_DESCRIPTOR = 0x06
_DESC_TYPE_DEVICE = 0x01
_DESC_TYPE_STRING = 0x03
_STRING_MANUFACTURER, _STRING_PRODUCT, _STRING_SERIAL = 1, 2, 3
_LIBUSB_ERROR_NO_DEVICE = -4
_LIBUSB_ERROR_TIMEOUT = -7
_addresses = itertools.count(2)


def _no_device() -> usb.core.USBError:
    return usb.core.USBError(
        "No such device (it may have been disconnected)", _LIBUSB_ERROR_NO_DEVICE, errno.ENODEV
    )


@dataclass(eq=False)
class VirtualUsbDevice:
    """One device on the virtual bus: its descriptors and the bytes waiting on its IN endpoint."""

    vendor_id: int
    product_id: int
    serial_number: str
    manufacturer: str = "flushtable sim"
    product: str = "simulated table device"
    present: bool = False
    generation: int = 0  # bumped at every unplug: handles from before are dead
    address: int = field(default_factory=lambda: next(_addresses))
    _pending_in: bytearray = field(default_factory=bytearray)
    _condition: threading.Condition = field(default_factory=threading.Condition)
    on_host_bytes: Any = None  # Callable[[bytes], None], called from a pyusb thread

    def push_in(self, data: bytes) -> None:
        """The firmware sends: the bytes wait on the IN endpoint for the host's next bulk read."""
        with self._condition:
            self._pending_in += data
            self._condition.notify_all()

    def set_present(self, present: bool) -> None:
        with self._condition:
            if not present:
                self.generation += 1
                self._pending_in.clear()
            self.present = present
            self._condition.notify_all()

    def strings(self) -> dict[int, str]:
        return {
            _STRING_MANUFACTURER: self.manufacturer,
            _STRING_PRODUCT: self.product,
            _STRING_SERIAL: self.serial_number,
        }


@dataclass(eq=False)
class _Handle:
    device: VirtualUsbDevice
    generation: int
    closed: bool = False


class VirtualUsbBackend(usb.backend.IBackend):  # type: ignore[misc]  # pyusb ships no type hints
    """pyusb backend whose bus holds only simulated devices."""

    def __init__(self) -> None:
        self._devices: list[VirtualUsbDevice] = []
        self._lock = threading.Lock()

    def add(self, device: VirtualUsbDevice) -> None:
        with self._lock:
            self._devices.append(device)

    # --- enumeration and descriptors --------------------------------------------------------------
    def enumerate_devices(self) -> list[VirtualUsbDevice]:
        with self._lock:
            return [device for device in self._devices if device.present]

    def get_parent(self, dev: VirtualUsbDevice) -> None:
        return None

    def get_device_descriptor(self, dev: VirtualUsbDevice) -> SimpleNamespace:
        return SimpleNamespace(
            bLength=18,
            bDescriptorType=_DESC_TYPE_DEVICE,
            bcdUSB=0x0200,
            bDeviceClass=0x00,  # class defined per interface
            bDeviceSubClass=0x00,
            bDeviceProtocol=0x00,
            bMaxPacketSize0=64,
            idVendor=dev.vendor_id,
            idProduct=dev.product_id,
            bcdDevice=0x0100,
            iManufacturer=_STRING_MANUFACTURER,
            iProduct=_STRING_PRODUCT,
            iSerialNumber=_STRING_SERIAL,
            bNumConfigurations=1,
            address=dev.address,
            bus=1,
            port_number=dev.address,
            port_numbers=(dev.address,),
            speed=3,  # full speed
        )

    def get_configuration_descriptor(self, dev: VirtualUsbDevice, config: int) -> SimpleNamespace:
        if config != 0:
            raise IndexError("configuration index out of range")
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=0x02,
            wTotalLength=9 + 9 + 7 + 7,
            bNumInterfaces=1,
            bConfigurationValue=1,
            iConfiguration=0,
            bmAttributes=0x80,  # bus powered
            bMaxPower=50,  # units of 2 mA
            extra_descriptors=[],
        )

    def get_interface_descriptor(
        self, dev: VirtualUsbDevice, intf: int, alt: int, config: int
    ) -> SimpleNamespace:
        if (intf, alt, config) != (0, 0, 0):
            raise IndexError("interface index out of range")
        return SimpleNamespace(
            bLength=9,
            bDescriptorType=0x04,
            bInterfaceNumber=0,
            bAlternateSetting=0,
            bNumEndpoints=2,
            bInterfaceClass=0xFF,  # vendor specific: the flushtable firmware protocol
            bInterfaceSubClass=0x00,
            bInterfaceProtocol=0x00,
            iInterface=0,
            extra_descriptors=[],
        )

    def get_endpoint_descriptor(
        self, dev: VirtualUsbDevice, ep: int, intf: int, alt: int, config: int
    ) -> SimpleNamespace:
        if ep not in (0, 1) or (intf, alt, config) != (0, 0, 0):
            raise IndexError("endpoint index out of range")
        return SimpleNamespace(
            bLength=7,
            bDescriptorType=0x05,
            bEndpointAddress=ENDPOINT_OUT if ep == 0 else ENDPOINT_IN,
            bmAttributes=0x02,  # bulk
            wMaxPacketSize=BULK_MAX_PACKET_BYTES,
            bInterval=0,
            bRefresh=0,
            bSynchAddress=0,
            extra_descriptors=[],
        )

    # --- handles ------------------------------------------------------------------------------------
    def open_device(self, dev: VirtualUsbDevice) -> _Handle:
        if not dev.present:
            raise _no_device()
        return _Handle(dev, dev.generation)

    def close_device(self, dev_handle: _Handle) -> None:
        dev_handle.closed = True
        with dev_handle.device._condition:
            dev_handle.device._condition.notify_all()  # wake a read blocked on this handle

    def _check(self, handle: _Handle) -> VirtualUsbDevice:
        device = handle.device
        if handle.closed or not device.present or handle.generation != device.generation:
            raise _no_device()
        return device

    def set_configuration(self, dev_handle: _Handle, config_value: int) -> None:
        self._check(dev_handle)

    def get_configuration(self, dev_handle: _Handle) -> int:
        self._check(dev_handle)
        return 1

    def set_interface_altsetting(self, dev_handle: _Handle, intf: int, altsetting: int) -> None:
        self._check(dev_handle)

    def claim_interface(self, dev_handle: _Handle, intf: int) -> None:
        self._check(dev_handle)

    def release_interface(self, dev_handle: _Handle, intf: int) -> None:
        return None

    def clear_halt(self, dev_handle: _Handle, ep: int) -> None:
        self._check(dev_handle)

    def reset_device(self, dev_handle: _Handle) -> None:
        self._check(dev_handle)

    def is_kernel_driver_active(self, dev_handle: _Handle, intf: int) -> bool:
        return False

    def detach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        return None

    def attach_kernel_driver(self, dev_handle: _Handle, intf: int) -> None:
        return None

    # --- transfers --------------------------------------------------------------------------------
    def bulk_write(
        self, dev_handle: _Handle, ep: int, intf: int, data: array.array[int], timeout: int
    ) -> int:
        device = self._check(dev_handle)
        if ep != ENDPOINT_OUT:
            raise usb.core.USBError("Pipe error (no such OUT endpoint)", -9, errno.EPIPE)
        payload = bytes(data)
        if device.on_host_bytes is not None:
            device.on_host_bytes(payload)
        return len(payload)

    def bulk_read(self, dev_handle: _Handle, ep: int, intf: int, buff: array.array[int], timeout: int) -> int:
        if ep != ENDPOINT_IN:
            raise usb.core.USBError("Pipe error (no such IN endpoint)", -9, errno.EPIPE)
        device = dev_handle.device
        deadline = None if timeout == 0 else time.monotonic() + timeout / 1000.0  # 0: no limit (libusb)
        with device._condition:
            while True:
                self._check(dev_handle)
                if device._pending_in:
                    count = min(len(buff), len(device._pending_in))
                    buff[:count] = array.array("B", device._pending_in[:count])
                    del device._pending_in[:count]
                    return count
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise usb.core.USBTimeoutError(
                        "Operation timed out", _LIBUSB_ERROR_TIMEOUT, errno.ETIMEDOUT
                    )
                device._condition.wait(remaining)

    def ctrl_transfer(  # noqa: PLR0913, PLR0917 - the positional signature is pyusb\'s IBackend
        self,
        dev_handle: _Handle,
        bmRequestType: int,
        bRequest: int,
        wValue: int,
        wIndex: int,
        data: array.array[int],
        timeout: int,
    ) -> int:
        device = self._check(dev_handle)
        descriptor_type, descriptor_index = wValue >> 8, wValue & 0xFF
        if bmRequestType & 0x80 and bRequest == _GET_DESCRIPTOR and descriptor_type == _DESC_TYPE_STRING:
            if descriptor_index == 0:
                body = _LANGID_EN_US.to_bytes(2, "little")
            else:
                text = device.strings().get(descriptor_index)
                if text is None:
                    raise usb.core.USBError("Pipe error (no such string)", -9, errno.EPIPE)
                body = text.encode("utf-16-le")
            descriptor = bytes([2 + len(body), _DESC_TYPE_STRING]) + body
            count = min(len(data), len(descriptor))
            data[:count] = array.array("B", descriptor[:count])
            return count
        raise usb.core.USBError("Pipe error (request not supported)", -9, errno.EPIPE)


class UsbPort(DevicePort):
    """A simulated device's USB connection: present on ``backend``'s bus while plugged."""

    kind = "usb"

    def __init__(  # noqa: PLR0913 - keyword-only options of the simulated USB device, each a scenario knob
        self,
        backend: VirtualUsbBackend,
        *,
        vendor_id: int,
        product_id: int,
        serial_number: str,
        product: str = "simulated table device",
        noise_out: NoiseManipulator | None = None,
        noise_in: NoiseManipulator | None = None,
    ) -> None:
        super().__init__(noise_out=noise_out, noise_in=noise_in)
        self.backend = backend
        self.device = VirtualUsbDevice(vendor_id, product_id, serial_number, product=product)
        self.device.on_host_bytes = self._from_host_thread
        backend.add(self.device)
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return f"usb://{self.device.vendor_id:04x}:{self.device.product_id:04x}?serial={self.device.serial_number}"

    async def plug(self) -> None:
        if self.plugged:
            return
        self._loop = asyncio.get_running_loop()
        self.device.set_present(True)
        self._up()

    async def unplug(self) -> None:
        if not self.plugged:
            return
        self.plugged = False
        self.device.set_present(False)
        self._down()

    def _from_host_thread(self, data: bytes) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._deliver_if_plugged, data)

    def _deliver_if_plugged(self, data: bytes) -> None:
        if self.plugged:
            self._deliver(data)

    def _transmit(self, data: bytes) -> None:
        self.device.push_in(data)
