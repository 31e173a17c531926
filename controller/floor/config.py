"""`flushtable floor serve --config FILE`: the floor service's settings (docs/floor.md "Operations").

[floor]
servers = ["tls://floor-nats.example:4222"]
user = "floor-reader"
password_file = "nats-floor.pw"          # relative to this file
ca_file = "floor-ca.pem"
dsn_file = "floor-writer.dsn"            # a libpq connection string for the writer role
batch_size = 1000                        # = the consumer's max_ack_pending
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from controller.errors import UserError
from controller.floor.service import FloorConfig

_KEYS = {"servers", "user", "password_file", "ca_file", "dsn_file", "batch_size"}


class FloorConfigError(UserError):
    pass


def _read(base: Path, section: dict[str, Any], key: str, source: str) -> str:
    value = section.get(key)
    if not isinstance(value, str) or not value:
        raise FloorConfigError(f"{source}: floor.{key}: a file name")
    path = base / value
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise FloorConfigError(f"{source}: floor.{key}: {path}: {error.strerror}") from None


def load_floor_config(path: str | Path) -> FloorConfig:
    config_path = Path(path)
    source = str(config_path)
    try:
        document = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except OSError as error:
        raise FloorConfigError(f"{source}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise FloorConfigError(f"{source}: not TOML: {error}") from None
    section = document.get("floor")
    if not isinstance(section, dict):
        raise FloorConfigError(f"{source}: no [floor] table")
    unknown = sorted(set(section) - _KEYS)
    if unknown:
        raise FloorConfigError(
            f"{source}: floor.{unknown[0]}: unknown key (known: {', '.join(sorted(_KEYS))})"
        )
    servers = section.get("servers")
    if (
        not isinstance(servers, list)
        or not servers
        or not all(isinstance(s, str) and s.startswith("tls://") for s in servers)
    ):
        raise FloorConfigError(f"{source}: floor.servers: a non-empty list of tls://host:port URLs")
    user = section.get("user")
    if not isinstance(user, str) or not user:
        raise FloorConfigError(f"{source}: floor.user: the floor reader's NATS user")
    base = config_path.parent
    ca_file = base / str(section.get("ca_file", ""))
    if not ca_file.is_file():
        raise FloorConfigError(f"{source}: floor.ca_file: {ca_file}: no such file")
    batch_size = section.get("batch_size", 1000)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 10_000:
        raise FloorConfigError(f"{source}: floor.batch_size: an integer from 1 to 10000")
    return FloorConfig(
        servers=tuple(servers),
        user=user,
        password=_read(base, section, "password_file", source),
        ca_file=ca_file,
        dsn=_read(base, section, "dsn_file", source),
        batch_size=batch_size,
    )


def write_floor_config(directory: Path, config: FloorConfig) -> Path:
    """Write a config and its secret files (mode 0600) for ``config``: what the demo and tests run."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in (("nats-floor.pw", config.password), ("floor-writer.dsn", config.dsn)):
        secret = directory / name
        secret.write_text(text + "\n")
        secret.chmod(0o600)
    path = directory / "floor.toml"
    servers = ", ".join(f'"{s}"' for s in config.servers)
    path.write_text(
        "[floor]\n"
        f"servers = [{servers}]\n"
        f'user = "{config.user}"\n'
        'password_file = "nats-floor.pw"\n'
        f'ca_file = "{config.ca_file}"\n'
        'dsn_file = "floor-writer.dsn"\n'
        f"batch_size = {config.batch_size}\n"
    )
    return path
