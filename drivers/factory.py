"""Make the driver for a configured device: name, kind, url, key -> a DeviceDriver."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drivers.bet_sensors import BetSensorDriver
from drivers.dealer_display import DealerDisplayDriver
from drivers.events import DomainEvent
from drivers.shuffler import ShufflerDriver
from drivers.supervisor import DeviceDriver, DeviceHealth, DriverTiming
from drivers.transports import SimConnector

DRIVER_CLASSES: dict[str, type[DeviceDriver]] = {
    "shuffler": ShufflerDriver,
    "bet_sensors": BetSensorDriver,
    "dealer_display": DealerDisplayDriver,
}


def make_driver(  # noqa: PLR0913 - the driver's constructor arguments passed through, keyword-only
    name: str,
    kind: str,
    url: str,
    key: bytes,
    *,
    publish: Callable[[DomainEvent], None],
    device_id: int | None = None,
    timing: DriverTiming | None = None,
    usb_backend: Any = None,
    sim_hub: SimConnector | None = None,
    on_health: Callable[[DeviceHealth], None] | None = None,
) -> DeviceDriver:
    """ValueError (one line, naming the device) for an unknown kind or a bad URL."""
    driver_class = DRIVER_CLASSES.get(kind)
    if driver_class is None:
        raise ValueError(f"device {name}: kind {kind!r} is not one of {', '.join(DRIVER_CLASSES)}")
    try:
        return driver_class(
            name,
            url,
            key,
            publish=publish,
            device_id=device_id,
            timing=timing,
            usb_backend=usb_backend,
            sim_hub=sim_hub,
            on_health=on_health,
        )
    except ValueError as error:
        raise ValueError(f"device {name}: {error}") from None
