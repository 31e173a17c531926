"""Par sheets kept once computed, by what they were computed from (docs/math.md "Cache").

Chase the Flush's exact solution takes minutes; the same game, banking mode and paytables always give
the same par sheet, so ``flushtable math`` keeps each one in a file named by a SHA-256 of:

- the game and banking mode, and every paytable (its name and its odds, line by line);
- the source of the code that computes it (controller/gamemath and the rules it reads: cards, hands,
  games, paytables), so a corrected formula is never answered from an old file;
- the cache's format number.

Where: ``$FLUSHTABLE_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/flushtable/par-sheets``, else
``~/.cache/flushtable/par-sheets``: a par sheet belongs to the game, not to one table's journal, and a
cache is what the user's cache directory is for (deleting it only costs the time to compute again).
A file that cannot be read back (cut short, edited, of another key) is computed again and replaced;
one that cannot be written is reported and the sheet is still printed. Files are written whole
(temporary file, then rename), so two runs at once never leave half a file.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.gamemath.parsheet import ParSheetRequest, par_sheet
from controller.gamemath.progress import ProgressFn

CACHE_ENV = "FLUSHTABLE_CACHE_DIR"
CACHE_FORMAT = 1
_PACKAGE = Path(__file__).resolve().parent
_RULES = _PACKAGE.parent / "rules"
_SOURCES: tuple[Path, ...] = (
    *sorted(_PACKAGE.glob("*.py")),
    *(_RULES / name for name in ("cards.py", "hands.py", "games.py", "paytables.py")),
)


def default_cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "flushtable" / "par-sheets"


@functools.cache  # the sources do not change while the process runs; the panel asks on every page
def code_digest() -> str:
    """SHA-256 over the source files the par sheet is computed by (names and contents)."""
    digest = hashlib.sha256()
    for path in _SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def key_material(request: ParSheetRequest) -> dict[str, Any]:
    """Everything the sheet depends on, as JSON (stored in the file too, to be checked on reading)."""
    return {
        "format": CACHE_FORMAT,
        "game": request.game,
        "banking": request.banking,
        "paytables": {
            wager: {"name": table.name, "odds": table.to_json()}
            for wager, table in sorted(request.paytables.items())
        },
        "code": code_digest(),
    }


def cache_key(material: dict[str, Any]) -> str:
    text = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedSheet:
    sheet: dict[str, Any]
    path: Path | None  # the cache file, when there is one
    from_cache: bool
    note: str | None = None  # a cache problem worth one line to the person waiting


def _cache_path(request: ParSheetRequest, cache_dir: Path, material: dict[str, Any]) -> Path:
    return cache_dir / f"{request.game}-{request.banking}-{cache_key(material)[:32]}.json"


def read_cached(request: ParSheetRequest, cache_dir: Path) -> dict[str, Any] | None:
    """The request's par sheet if ``cache_dir`` holds it, else None: never computed here."""
    material = key_material(request)
    return _read(_cache_path(request, cache_dir, material), material)


def _read(path: Path, material: dict[str, Any]) -> dict[str, Any] | None:
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if (
        not isinstance(stored, dict)
        or stored.get("key") != material
        or not isinstance(stored.get("sheet"), dict)
    ):
        return None
    sheet: dict[str, Any] = stored["sheet"]
    return sheet


def _write(path: Path, material: dict[str, Any], sheet: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump({"key": material, "sheet": sheet}, out)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def cached_par_sheet(
    request: ParSheetRequest, cache_dir: Path | None, progress: ProgressFn | None = None
) -> CachedSheet:
    """The par sheet from ``cache_dir`` when it holds this request's, else computed and stored there.
    ``cache_dir`` None: computed, never stored (``flushtable math --no-cache``)."""
    if cache_dir is None:
        return CachedSheet(par_sheet(request, progress), None, from_cache=False)
    material = key_material(request)
    path = _cache_path(request, cache_dir, material)
    sheet = _read(path, material)
    if sheet is not None:
        return CachedSheet(sheet, path, from_cache=True)
    sheet = par_sheet(request, progress)
    try:
        _write(path, material, sheet)
    except OSError as error:
        note = f"cannot keep the par sheet in {path.parent}: {error.strerror or error}"
        return CachedSheet(sheet, None, from_cache=False, note=note)
    return CachedSheet(sheet, path, from_cache=False)
