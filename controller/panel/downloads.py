"""A CSV download as both panels send it (the table's, docs/panel.md "CSV"; the floor's, docs/floor.md
"CSV"): one response, so the two cannot differ in how they name the file or cache it."""

from __future__ import annotations

import re

from fastapi.responses import Response

_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_FILE_NAME_MAX_CHARS = 120


def csv_response(text: str, filename: str) -> Response:
    """A download: text/csv, the file's name given (only characters safe in any header and file system)."""
    safe = _UNSAFE_IN_NAME.sub("_", filename)[:_FILE_NAME_MAX_CHARS]
    return Response(
        text,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{safe}"', "Cache-Control": "no-store"},
    )
