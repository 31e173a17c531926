"""The virtual USB bus behaves as pyusb expects of a backend: found with usb.core.find(backend=...),
descriptors and strings read through pyusb, bulk transfers reaching the device, unplug = ENODEV."""

from __future__ import annotations

import errno

import pytest
import usb.core
import usb.util

from sim_devices.usb import ENDPOINT_IN, ENDPOINT_OUT, VirtualUsbBackend, VirtualUsbDevice


def make_bus() -> tuple[VirtualUsbBackend, VirtualUsbDevice, list[bytes]]:
    backend = VirtualUsbBackend()
    device = VirtualUsbDevice(0x1209, 0x0001, "SHOE-42", product="test shoe")
    received: list[bytes] = []
    device.on_host_bytes = received.append
    backend.add(device)
    device.set_present(True)
    backend.add(VirtualUsbDevice(0x1209, 0x0001, "SHOE-43"))  # same ids, never plugged in
    return backend, device, received


def test_find_by_ids_and_serial_number_reads_the_descriptors_through_pyusb() -> None:
    backend, _, _ = make_bus()
    found = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=backend)
    assert found is not None
    assert (found.idVendor, found.idProduct) == (0x1209, 0x0001)
    assert found.serial_number == "SHOE-42"
    assert found.product == "test shoe"
    assert usb.core.find(idVendor=0x1209, idProduct=0x0002, backend=backend) is None
    assert (
        usb.core.find(custom_match=lambda d: d.serial_number == "SHOE-43", backend=backend) is None
    )  # absent
    found.set_configuration()
    interface = found.get_active_configuration()[(0, 0)]
    addresses = sorted(ep.bEndpointAddress for ep in interface)
    assert addresses == [ENDPOINT_OUT, ENDPOINT_IN]
    assert all(usb.util.endpoint_type(ep.bmAttributes) == usb.util.ENDPOINT_TYPE_BULK for ep in interface)
    usb.util.dispose_resources(found)


def test_bulk_transfers_reach_the_device_both_ways_and_a_read_times_out_when_idle() -> None:
    backend, device, received = make_bus()
    found = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=backend)
    assert found is not None
    assert found.write(ENDPOINT_OUT, b"\x00hello\x00") == 7
    assert received == [b"\x00hello\x00"]
    device.push_in(b"abcdef")
    assert bytes(found.read(ENDPOINT_IN, 4)) == b"abcd"
    assert bytes(found.read(ENDPOINT_IN, 64)) == b"ef"
    with pytest.raises(usb.core.USBTimeoutError):
        found.read(ENDPOINT_IN, 64, timeout=10)
    usb.util.dispose_resources(found)


def test_unplugged_the_device_leaves_the_bus_and_old_handles_fail_with_enodev() -> None:
    backend, device, _ = make_bus()
    found = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=backend)
    assert found is not None
    found.set_configuration()
    device.set_present(False)
    with pytest.raises(usb.core.USBError) as raised:
        found.write(ENDPOINT_OUT, b"x")
    assert raised.value.errno == errno.ENODEV
    assert usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=backend) is None
    device.set_present(True)
    with pytest.raises(usb.core.USBError):
        found.read(ENDPOINT_IN, 8, timeout=10)  # the old handle stays dead after a replug
    again = usb.core.find(idVendor=0x1209, idProduct=0x0001, backend=backend)
    assert again is not None
    assert again.serial_number == "SHOE-42"
    usb.util.dispose_resources(found)
