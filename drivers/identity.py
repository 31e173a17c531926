"""The device_id a device provisioned only with a key uses (docs/devices.md, "Keys and ids").

The table configuration gives each device a URL and a 32-byte key. A device id is derived from the key
so the configuration needs nothing more: the first four bytes, big-endian, of
SHA-256("flushtable/1 device id" || key), or 1 if those are zero. sim_devices.firmware derives it the
same way (tests/sim/test_firmware.py checks they agree); a real device is provisioned with it.
"""

from __future__ import annotations

import hashlib

DEVICE_ID_INFO = b"flushtable/1 device id"


def device_id_for_key(key: bytes) -> int:
    value = int.from_bytes(hashlib.sha256(DEVICE_ID_INFO + key).digest()[:4], "big")
    return value or 1
