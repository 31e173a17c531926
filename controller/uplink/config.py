"""The uplink's settings: the ``[uplink]`` table of the table's configuration file (docs/floor.md).

Read here, apart from controller/config.py, so the table's own configuration stays what it was: a table
without ``[uplink]`` runs as before, with no broker.

    [uplink]
    servers = ["tls://floor-nats.example:4222"]
    site = "main"
    user = "table-T01"
    password_file = "/etc/flushtable/nats.pw"
    ca_file = "/etc/flushtable/floor-ca.pem"
    # stream = "FLUSHTABLE_east"   # at a site: the site's stream on its leaf server (docs/floor.md "Sites")
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.floor.servers import STREAM_NAME


class UplinkConfigError(UserError):
    pass


@dataclass(frozen=True, slots=True)
class UplinkConfig:
    servers: tuple[str, ...]
    site: str
    user: str
    password: str
    ca_file: Path
    connect_timeout_s: float = 5.0
    ack_timeout_s: float = 5.0
    poll_interval_s: float = 0.1  # how often the journal is checked for new entries when not woken
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    hwm_persist_interval_s: float = 0.25  # at most this often the acked mark is written to the journal
    stream: str = STREAM_NAME  # the stream its server keeps: the hub's, or at a site its leaf's


_KEYS = {
    "servers",
    "site",
    "user",
    "password",
    "password_file",
    "ca_file",
    "connect_timeout_s",
    "ack_timeout_s",
    "poll_interval_s",
    "backoff_initial_s",
    "backoff_max_s",
    "stream",
}


def parse_uplink(section: dict[str, Any], *, source: str, base_dir: Path) -> UplinkConfig:
    def error(key: str, reason: str) -> UplinkConfigError:
        return UplinkConfigError(f"{source}: uplink.{key}: {reason}")

    for key in section:
        if key not in _KEYS:
            raise error(key, f"unknown key (known: {', '.join(sorted(_KEYS))})")
    servers = section.get("servers")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
        raise error("servers", "a non-empty list of URLs like tls://host:4222")
    for server in servers:
        if not server.startswith("tls://"):
            raise error("servers", f"{server!r}: the floor is reached over TLS only (tls://host:port)")
    texts: dict[str, str] = {}
    for key in ("site", "user", "stream"):
        if key == "stream" and key not in section:
            texts[key] = STREAM_NAME
            continue
        value = section.get(key)
        if not isinstance(value, str) or not value or any(c in value for c in " .*>\t"):
            raise error(key, "a non-empty name without spaces, '.', '*' or '>'")
        texts[key] = value
    if ("password" in section) == ("password_file" in section):
        raise error("password", "give exactly one of password, password_file")
    if "password_file" in section:
        path = base_dir / str(section["password_file"])
        try:
            password = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise error("password_file", f"{path}: {exc.strerror}") from None
    else:
        password = str(section["password"])
    ca_file = base_dir / str(section.get("ca_file", ""))
    if not ca_file.is_file():
        raise error("ca_file", f"{ca_file}: no such file (the floor CA's certificate)")
    numbers: dict[str, float] = {}
    for key in (
        "connect_timeout_s",
        "ack_timeout_s",
        "poll_interval_s",
        "backoff_initial_s",
        "backoff_max_s",
    ):
        if key in section:
            value = section[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 600:
                raise error(key, "a number of seconds, more than 0 and at most 600")
            numbers[key] = float(value)
    return UplinkConfig(
        tuple(servers), texts["site"], texts["user"], password, ca_file, stream=texts["stream"], **numbers
    )


def load_uplink_config(path: str | Path) -> UplinkConfig | None:
    """The ``[uplink]`` table of the configuration file at ``path``; None when it has none."""
    config_path = Path(path)
    try:
        document = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UplinkConfigError(f"{config_path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UplinkConfigError(f"{config_path}: not TOML: {exc}") from None
    section = document.get("uplink")
    if section is None:
        return None
    if not isinstance(section, dict):
        raise UplinkConfigError(f"{config_path}: uplink: must be a table")
    return parse_uplink(section, source=str(config_path), base_dir=config_path.parent)
