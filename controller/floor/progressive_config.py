"""The floor file's ``[progressive]``: the linked progressives the floor runs (docs/floor.md "Linked
progressive", docs/configuration.md "The floor service's file").

    [progressive]
    user = "floor-progressive"                 # its own NATS user (claims in, meters out)
    password_file = "nats-progressive.pw"      # relative to the file
    broadcast_interval_s = 0.5                 # the meter at least once a second

    [progressive.links.MAIN]                   # one link: its name is the meter's id
    tables = ["T01", "T02", "T03"]
    unit_cents = 100
    base_cents = 1000000
    reset_cents = 1000000
    increment_percent = 10
    hidden_percent = 2
    limit_cents = 10000000                     # optional
    paytable = "progressive"                   # optional, as a table's [progressive]

The NATS servers, the CA and the writer's connection string are ``[floor]``'s. Every refusal is one
line naming the key, ``FILE: progressive.KEY: reason``; a link's parameters are checked by the one
parser (controller/progressive/model.py ``parse_parameters``), as a table's own ``[progressive]`` is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.errors import UserError, shown
from controller.files import MAX_SECRET_FILE_BYTES, MAX_TOML_BYTES, FileRefused, load_toml, read_bounded_text
from controller.floor.progressive import LinkConfig, LinkedConfig
from controller.floor.service import FloorConfig
from controller.progressive.model import parse_parameters
from controller.uplink.wire import PROGRESSIVE_INBOX

# A NATS subject token: no dots, no wildcards; \Z, not $: `$` also matches before a final line break.
_NAME = re.compile(r"^[A-Za-z0-9_]{1,32}\Z")
_KEYS = ("user", "password_file", "broadcast_interval_s", "links")
MAX_BROADCAST_INTERVAL_S = 1.0  # the meter at least once a second (issue 23)


def load_linked_config(path: str | Path, floor: FloorConfig) -> LinkedConfig | None:
    """The file's linked progressives (None: the file has no ``[progressive]``), with ``floor``'s
    servers, CA and writer connection."""
    config_path = Path(path)
    try:
        document = load_toml(read_bounded_text(config_path, limit_bytes=MAX_TOML_BYTES))
    except (FileRefused, ValueError) as error:  # load_floor_config read it already: said there
        raise UserError(f"{config_path}: {error}") from None
    section = document.get("progressive")
    if section is None:
        return None
    try:
        return _linked(section, config_path.resolve().parent, floor)
    except UserError as error:
        raise UserError(f"{config_path}: {error}") from None


def _linked(section: object, base_dir: Path, floor: FloorConfig) -> LinkedConfig:  # noqa: PLR0912 - one check per key of a link, each its own one-line error
    if not isinstance(section, Mapping):
        raise UserError("progressive: must be a table like [progressive]")
    for key in section:
        if key not in _KEYS:
            raise UserError(f"progressive.{key}: unknown key (known: {', '.join(_KEYS)})")
    user = section.get("user", "floor-progressive")
    if not isinstance(user, str) or not _NAME.match(user.replace("-", "_")):
        raise UserError(f"progressive.user: a NATS user name, not {shown(user)}")
    password_name = section.get("password_file")
    if not isinstance(password_name, str) or not password_name:
        raise UserError("progressive.password_file: missing (a file holding its NATS password)")
    try:
        password = read_bounded_text(base_dir / password_name, limit_bytes=MAX_SECRET_FILE_BYTES).strip()
    except FileRefused as refused:
        raise UserError(f"progressive.password_file: {refused}") from None
    if not password:
        raise UserError(f"progressive.password_file: {base_dir / password_name}: empty")
    interval = section.get("broadcast_interval_s", 0.5)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not 0.05 <= interval <= 1.0:
        raise UserError(
            f"progressive.broadcast_interval_s: from 0.05 to {MAX_BROADCAST_INTERVAL_S:g} (the meter is "
            f"broadcast at least once a second), not {shown(interval)}"
        )
    links_raw = section.get("links")
    if not isinstance(links_raw, Mapping) or not links_raw:
        raise UserError(
            'progressive.links: at least one link, like [progressive.links.MAIN] tables = ["T01"]'
        )
    links: list[LinkConfig] = []
    seen: dict[str, str] = {}
    for link_id, raw in links_raw.items():
        where = f"progressive.links.{link_id}"
        if not _NAME.match(str(link_id)):
            raise UserError(f"{where}: a link's name is 1 to 32 letters, digits or _ (it is a subject token)")
        if not isinstance(raw, Mapping):
            raise UserError(f"{where}: must be a table")
        tables = raw.get("tables")
        if (
            not isinstance(tables, list)
            or not tables
            or not all(isinstance(t, str) and _NAME.match(t) for t in tables)
        ):
            raise UserError(f"{where}.tables: a list of table ids, not {shown(tables)}")
        for table_id in tables:
            if table_id in seen:
                raise UserError(f"{where}.tables: table {table_id} is already on link {seen[table_id]}")
            seen[table_id] = str(link_id)
        parameters = parse_parameters({k: v for k, v in raw.items() if k != "tables"}, field=where)
        links.append(LinkConfig(str(link_id), tuple(tables), parameters))
    return LinkedConfig(
        servers=floor.servers,
        user=user,
        password=password,
        ca_file=floor.ca_file,
        dsn=floor.dsn,
        links=tuple(links),
        inbox_prefix=PROGRESSIVE_INBOX,
        broadcast_interval_s=float(interval),
        backoff_initial_s=floor.backoff_initial_s,
        backoff_max_s=floor.backoff_max_s,
    )


def linked_parameters_json(link: LinkConfig) -> dict[str, Any]:
    return {"tables": list(link.tables), **link.parameters.to_json()}


__all__ = ["MAX_BROADCAST_INTERVAL_S", "linked_parameters_json", "load_linked_config"]
