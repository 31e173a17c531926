"""Starting the panel inside the daemon: one call for ``flushtable run --panel HOST:PORT``.

    panel = await start_panel(journal, bind="127.0.0.1:8080", panel_config=config.panel,
                              actions=engine_actions, device_health=devices.health)
    ...                         # after each journal append the daemon may call panel.backend.notify()
    await panel.stop()

The users live where :func:`~controller.panel.auth.users_file_for` says ($FLUSHTABLE_USERS_FILE, else
the configuration's ``[panel] users_file``, else panel-users.json beside the journal), merged with the
configuration's ``[[panel.users]]``; ``[panel] trusted_proxies`` says whose X-Forwarded-For to believe.

No default password: with no supervisor or manager in the user file or the configuration, the user
``supervisor`` is created from FLUSHTABLE_SUPERVISOR_PASSWORD, or with a one-time password printed once
to standard error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.changes import ChangeDesk
from controller.journal import Journal
from controller.locale import DEFAULT_PROPERTY, PropertySettings
from controller.panel.app import PanelSettings, create_panel_app
from controller.panel.auth import BOOTSTRAP_USER, User, UserStore, parse_role, users_file_for
from controller.panel.backend import DeviceHealthSource, JournalPanelBackend, TableActions
from controller.panel.server import PanelServer, parse_bind


@dataclass(slots=True)
class RunningPanel:
    server: PanelServer
    backend: JournalPanelBackend

    @property
    def url(self) -> str:
        return self.server.url

    async def stop(self) -> None:
        await self.server.stop()


def users_from_config(config_users: Iterable[Any]) -> list[User]:
    """controller.config PanelUser objects (name, role, password_hash) as panel users."""
    return [
        User(u.name, parse_role(u.role, field="panel.users.role"), u.password_hash, "config")
        for u in config_users
    ]


async def start_panel(  # noqa: PLR0913 - keyword-only settings of the embedded panel, each from the table's configuration
    journal: Journal,
    *,
    bind: str = "127.0.0.1:8080",
    users_file: Path | None = None,
    panel_config: Any = None,
    config_users: Iterable[Any] | None = None,
    actions: TableActions | None = None,
    device_health: DeviceHealthSource | None = None,
    settings: PanelSettings | None = None,
    environ: Mapping[str, str] | None = None,
    announce: Callable[[str], None] | None = None,
    read_only: bool = False,
    changes: ChangeDesk | None = None,
    progressive_live: Callable[[], dict[str, Any] | None] | None = None,
    property_settings: PropertySettings = DEFAULT_PROPERTY,
) -> RunningPanel:
    """``panel_config``: the configuration's [panel] section (its users, users_file and trusted_proxies);
    ``users_file`` and ``config_users`` override what it says (``flushtable panel --users-file``)."""
    host, port = parse_bind(bind)
    if config_users is None:
        config_users = getattr(panel_config, "users", ())
    path = users_file or users_file_for(Path(journal.path), panel_config, environ)
    store = UserStore(path, users_from_config(config_users))
    one_time = store.ensure_bootstrap_user(os.environ if environ is None else environ)
    if one_time is not None:
        (announce or _to_stderr)(
            f"panel: first start: user {BOOTSTRAP_USER!r} has the one-time password {one_time} "
            f"(stored only as a hash in {store.path}; the first login must set a new one)"
        )
    if settings is None:
        settings = PanelSettings(
            trusted_proxies=tuple(getattr(panel_config, "trusted_proxies", ()) or ()),
            property_settings=property_settings,
        )
    backend = JournalPanelBackend(
        journal,
        actions=actions,
        device_health=device_health,
        read_only=read_only,
        changes=changes,
        progressive_live=progressive_live,
        # The sentences (log, stream, recall) in the money the pages write their amounts in.
        money_format=settings.property_settings.money,
    )
    app = create_panel_app(backend, users=store, settings=settings)
    server = PanelServer(app, host=host, port=port)
    await server.start()
    return RunningPanel(server, backend)


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
