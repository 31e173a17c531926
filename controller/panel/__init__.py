"""The floor staff status panel (issue 6): FastAPI on the daemon's loop, SSE, logins and roles.

See docs/panel.md. Entry points: :func:`create_panel_app`, :class:`PanelServer`,
:class:`JournalPanelBackend` (the backend over the real journal), :class:`PanelBackend` and
:class:`TableActions` (what the daemon provides).
"""

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
