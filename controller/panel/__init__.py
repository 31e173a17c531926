"""The floor staff status panel (issue 6): FastAPI on the daemon's loop, SSE, logins and roles.

See docs/panel.md. Entry points: :func:`create_panel_app`, :class:`PanelServer`,
:class:`JournalPanelBackend` (the backend over the real journal), :class:`PanelBackend` and
:class:`TableActions` (what the daemon provides).
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the real names for type checkers; at run time __getattr__ loads them on first use
    from controller.panel.app import PanelSettings, create_panel_app
    from controller.panel.auth import UserStore
    from controller.panel.backend import (
        ActionRefused,
        ActionUnavailable,
        DeviceHealth,
        JournalPanelBackend,
        NotFound,
        PanelBackend,
        TableActions,
    )
    from controller.panel.server import PanelServer, parse_bind

# Lazy: `flushtable user` and the daemon's lighter paths import controller.panel.auth, which must not
# pay for FastAPI (half a second at every start of the command line).
_WHERE = {
    "PanelSettings": "controller.panel.app",
    "create_panel_app": "controller.panel.app",
    "UserStore": "controller.panel.auth",
    "ActionRefused": "controller.panel.backend",
    "ActionUnavailable": "controller.panel.backend",
    "DeviceHealth": "controller.panel.backend",
    "JournalPanelBackend": "controller.panel.backend",
    "NotFound": "controller.panel.backend",
    "PanelBackend": "controller.panel.backend",
    "TableActions": "controller.panel.backend",
    "PanelServer": "controller.panel.server",
    "parse_bind": "controller.panel.server",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'controller.panel' has no attribute {name!r}")


__all__ = [
    "ActionRefused",
    "ActionUnavailable",
    "DeviceHealth",
    "JournalPanelBackend",
    "NotFound",
    "PanelBackend",
    "PanelServer",
    "PanelSettings",
    "TableActions",
    "UserStore",
    "create_panel_app",
    "parse_bind",
]
