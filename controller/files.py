"""Reading the files a person names, bounded and checked up front (issue 30 item 4).

Every file the product reads because a command line or a configuration names it (a configuration, a
scenario, a device key, a password file, a certificate) is read by ``read_bounded``: opened without
blocking, refused unless it is a regular file, and read to a size limit. So ``/dev/zero`` is refused at
once instead of filling memory, a FIFO is refused instead of waiting forever for a writer, and a
directory is said to be one.

TOML is parsed by ``load_toml``, which limits the nesting before parsing: ``tomllib`` parses nested
arrays and inline tables by recursion, so a file nested 3,000 deep ends in a RecursionError deep inside
it. The nesting is counted on the text first (strings and comments skipped), and the parsed document's
depth (which dotted keys can make deep without any bracket) is checked before anyone walks it.

Paths that will be written (a journal, an output file) are checked by ``check_writable_file``: the first
directory that exists on the way must be a directory the process can create a file in.

Nothing here imports the rest of the controller: a command reads its files before its heavy imports.
docs/configuration.md and docs/operations.md list the limits.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from controller.errors import UserError

# Limits (docs/operations.md "Limits on the files read"). Each is far above any real file of its kind.
MAX_KEY_FILE_BYTES = 4096  # a device key is 64 hex digits; room for a comment line and a newline
MAX_SECRET_FILE_BYTES = 4096  # a password file: one line
MAX_TOML_BYTES = 1024 * 1024  # a configuration or a scenario
MAX_CERTIFICATE_BYTES = 1024 * 1024  # a CA bundle of a few hundred certificates
MAX_TOML_DEPTH = 16  # nesting of tables, arrays and inline tables; the deepest real file has 4

TOO_LONG_NUMBER = "a number of more than 4300 digits"
NO_SUCH_FILE = "no such file"  # FileRefused.reason of a file that is not there (some callers allow that)


class FileRefused(UserError):
    """A file that cannot be read as asked: ``PATH: reason``. ``reason`` alone, for a caller that names
    the key that gave the path (``devices.shuffler.key_file: /dev/zero: not a regular file ...``)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class TomlRefused(ValueError):
    """Text that is not TOML, or nested too deep: the reason, in one line."""


def write_private_json(path: Path, document: object, *, prefix: str) -> None:
    """Write ``document`` as indented JSON to ``path``, readable by its owner alone (0600), whole or not
    at all: a temporary file beside it (named ``prefix``...), synced, then renamed over it; the temporary
    file is removed when anything fails. Both users files are written this way."""
    # Imported here: tempfile loads shutil, which the read-only commands (recall, settle) never need.
    import tempfile  # noqa: PLC0415

    fd, tmp_name = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


NUL_IN_PATH = "a NUL character in the path: no file has such a name"


def shown_path(path: str | Path) -> Path:
    """``path`` as it may be printed: a NUL (which TOML can spell, and no path can hold) shown as \\0."""
    return Path(str(path).replace("\x00", "\\0"))


def os_reason(error: OSError) -> str:
    """An OSError in one line, without the path (the caller names it)."""
    return error.strerror or str(error)


def read_bounded(path: str | Path, *, limit_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit_bytes`` of them; FileRefused otherwise.

    Opened with O_NONBLOCK so that opening a FIFO never waits for a writer; fstat of the open file (not
    of the name, which may change in between) decides whether it is a regular file; the read stops one
    byte past the limit whatever the file claims its size is (/proc files say 0)."""
    where = Path(path)
    if "\x00" in str(where):  # os.open would raise ValueError ("embedded null byte"), not OSError
        raise FileRefused(shown_path(where), NUL_IN_PATH)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(where, flags)
    except FileNotFoundError:
        raise FileRefused(where, NO_SUCH_FILE) from None
    except OSError as error:
        raise FileRefused(where, f"cannot open: {os_reason(error)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(where, f"{file_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size_bytes = 0
        while size_bytes <= limit_bytes:  # bounded: each pass adds at least one byte or ends
            chunk = os.read(fd, min(65536, limit_bytes + 1 - size_bytes))
            if not chunk:
                break
            chunks.append(chunk)
            size_bytes += len(chunk)
    except OSError as error:
        raise FileRefused(where, f"cannot read: {os_reason(error)}") from None
    finally:
        os.close(fd)
    if size_bytes > limit_bytes:
        raise FileRefused(where, f"larger than {limit_bytes:,} bytes: not a file of this kind")
    return b"".join(chunks)


def read_bounded_if_there(path: str | Path, *, limit_bytes: int) -> bytes | None:
    """``read_bounded``, but None when there is no file at ``path`` (an optional file: an anchor, a
    seal, an archive pointer); FileRefused for anything else that keeps it from being read."""
    try:
        return read_bounded(path, limit_bytes=limit_bytes)
    except FileRefused as refused:
        if refused.reason == NO_SUCH_FILE:
            return None
        raise


def read_bounded_text(path: str | Path, *, limit_bytes: int, encoding: str = "utf-8") -> str:
    """``read_bounded`` decoded; FileRefused when the bytes are not text in ``encoding``."""
    data = read_bounded(path, limit_bytes=limit_bytes)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise FileRefused(Path(path), f"not {encoding.upper()} text") from None


# The characters that matter to nesting: brackets and braces, and what hides them (strings, comments).
_INTERESTING = re.compile(r"[\[\]{}\"'#\n]")
_BASIC_END = re.compile(r'["\\\n]')  # a one-line basic string ends at '"'; '\' escapes the next character


def _bracket_depth_line(text: str, max_depth: int) -> int | None:
    """The line on which arrays and inline tables nest deeper than ``max_depth``, or None.

    A lexical scan: what is inside strings and comments is skipped; every other '[' or '{' opens a level
    and ']' or '}' closes one. A table header ([a] or [[a]]) counts too, at most 2, which only makes the
    count a little stricter. Text that is not TOML is left for tomllib to refuse in its own words."""
    depth = 0
    line = 1
    position = 0
    length = len(text)
    while position < length:  # bounded: every pass moves position forward
        found = _INTERESTING.search(text, position)
        if found is None:
            return None
        char = found.group()
        position = found.end()
        if char == "\n":
            line += 1
        elif char == "#":
            end = text.find("\n", position)
            position = length if end < 0 else end
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return line
        elif char in "]}":
            depth = max(0, depth - 1)
        else:  # a quote: skip the string
            start = position
            position = _string_end(text, position, char)
            line += text.count("\n", start, position)
    return None


def _string_end(text: str, position: int, quote: str) -> int:
    """Where the string whose opening ``quote`` ends just before ``position`` ends (past its closing)."""
    length = len(text)
    if text.startswith(quote * 2, position):  # ''' or """ (an empty "" is never followed by "): multi-line
        position += 2
        while position < length:  # bounded: position moves forward every pass
            if quote == '"' and text[position] == "\\":
                position += 2
                continue
            if text.startswith(quote * 3, position):
                position += 3
                # Up to two more quotes belong to the string's content ("""a"""" is 'a"').
                for _ in range(2):
                    if position < length and text[position] == quote:
                        position += 1
                return position
            position += 1
        return length
    if quote == "'":
        end = text.find("'", position)
        newline = text.find("\n", position)
        if end < 0 or 0 <= newline < end:
            return length if newline < 0 else newline
        return end + 1
    while position < length:  # bounded: position moves forward every pass
        found = _BASIC_END.search(text, position)
        if found is None:
            return length
        if found.group() == "\\":
            position = found.end() + 1
            continue
        return found.end() if found.group() == '"' else found.start()
    return length


def _document_depth_exceeds(document: dict[str, Any], max_depth: int) -> bool:
    """Whether tables and arrays nest deeper than ``max_depth`` (dotted keys make depth without any
    bracket). The document is depth 0, a table or an array in it 1, as the bracket count has it.
    Iterative: the document is exactly what must not be walked by recursion."""
    stack: list[tuple[Any, int]] = [(document, 0)]
    while stack:  # bounded: every container is visited once
        value, depth = stack.pop()
        if depth > max_depth:
            return True
        items = value.values() if isinstance(value, dict) else value
        stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))
    return False


def load_toml(text: str, *, max_depth: int = MAX_TOML_DEPTH) -> dict[str, Any]:
    """``tomllib.loads`` with the nesting limited before parsing; TomlRefused in one line otherwise."""
    line = _bracket_depth_line(text, max_depth)
    if line is not None:
        raise TomlRefused(f"nested more than {max_depth} deep (line {line})")
    # Loaded here, not with this module: the journal's readers (`recall`, `journal`, `meters` given
    # --journal) use this module's path checks and parse no TOML (issue 28: ~6 ms of their start).
    import tomllib  # noqa: PLC0415

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TomlRefused(str(error)) from None
    except ValueError:  # tomllib's int() of a number past Python's 4300-digit limit
        raise TomlRefused(TOO_LONG_NUMBER) from None
    except RecursionError:  # not reached within the bracket limit; kept as a last guard
        raise TomlRefused(f"nested more than {max_depth} deep") from None
    if _document_depth_exceeds(document, max_depth):
        raise TomlRefused(f"nested more than {max_depth} deep (dotted keys or table headers)")
    return document


# --- paths that will be written ----------------------------------------------------------------------
def check_writable_file(path: str | Path, what: str) -> None:
    """Refuse, in one line, a file path that cannot be created or written as a regular file: an existing
    path that is not a regular file, a path through a file, a directory that does not take new files
    (/proc, a read-only disk, no permission). Nothing is created but a probe file, removed at once.

    ``what`` names the path for the reader (``--journal``, ``journal.path``)."""
    _refuse_nul(path, what)
    target = Path(path).absolute()
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise UserError(f"{what} {target}: {_path_reason(error, target)}") from None
    if mode is not None:
        if not stat.S_ISREG(mode):
            raise UserError(f"{what} {target}: {file_kind(mode)}, not a regular file")
        if not os.access(target, os.W_OK):
            raise UserError(f"{what} {target}: not writable (permission denied)")
        return
    directory = target.parent
    for _ in range(len(target.parts)):  # bounded by the path's length
        try:
            directory_mode = directory.stat().st_mode
        except FileNotFoundError:
            directory = directory.parent
            continue
        except OSError as error:
            raise UserError(f"{what} {target}: {_path_reason(error, target)}") from None
        if not stat.S_ISDIR(directory_mode):
            raise UserError(f"{what} {target}: {directory} is {file_kind(directory_mode)}, not a directory")
        break
    # The file (and any directory missing on the way) is made in the first directory that exists: a
    # probe file there says whether it takes new files (/proc does not, nor a read-only disk).
    import tempfile  # noqa: PLC0415 (only a writer probes; with shutil and random, ~2 ms a reader need not pay)

    try:
        fd, probe = tempfile.mkstemp(prefix=".flushtable-probe-", dir=directory)
    except OSError as error:
        raise UserError(f"{what} {target}: cannot create a file in {directory}: {os_reason(error)}") from None
    os.close(fd)
    os.unlink(probe)


SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def check_database_file(path: str | Path, what: str, *, must_exist: bool) -> None:
    """Refuse, in one line, a journal path that is no SQLite database: a path that is not a regular file,
    a file with content that does not begin as every SQLite file does; with ``must_exist``, a missing
    file. A missing file that may be made is checked as ``check_writable_file`` checks it."""
    _refuse_nul(path, what)
    target = Path(path)
    if not target.exists() and not must_exist:
        check_writable_file(target, what)
        return
    check_readable_file(target, what)
    try:
        with open(target, "rb") as handle:  # a regular file (checked): open and read cannot block
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        raise UserError(f"{what} {target}: cannot read: {os_reason(error)}") from None
    if header and header != SQLITE_HEADER:
        raise UserError(f"{what} {target}: not a journal (not an SQLite database file)")


def check_no_special_file(path: str | Path, what: str) -> None:
    """Refuse, in one line, a path that exists and is not a regular file (a FIFO SQLite would wait on, a
    device, a directory) or that runs through a file. A missing file, or a regular one, is left to the
    reader's own checks and words (the journal's: docs/journal.md)."""
    _refuse_nul(path, what)
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise UserError(f"{what} {target}: {_path_reason(error, target)}") from None
    if not stat.S_ISREG(mode):
        raise UserError(f"{what} {target}: {file_kind(mode)}, not a regular file")


def check_readable_file(path: str | Path, what: str) -> None:
    """Refuse, in one line, a path that is not an existing regular file (a journal to read)."""
    _refuse_nul(path, what)
    target = Path(path)
    try:
        mode = target.stat().st_mode
    except OSError as error:
        raise UserError(f"{what} {target}: {_path_reason(error, target)}") from None
    if not stat.S_ISREG(mode):
        raise UserError(f"{what} {target}: {file_kind(mode)}, not a regular file")


def _refuse_nul(path: str | Path, what: str) -> None:
    """os.stat and os.open raise ValueError, not OSError, for a path with a NUL: refused here first."""
    if "\x00" in str(path):
        raise UserError(f"{what} {shown_path(path)}: {NUL_IN_PATH}")


def _path_reason(error: OSError, target: Path) -> str:
    if error.errno == errno.ENOENT:
        return "no such file"
    if error.errno == errno.ENOTDIR:
        for ancestor in reversed(target.parents):  # from the root down: the first that is no directory
            if ancestor.exists() and not ancestor.is_dir():
                return f"{ancestor} is not a directory"
        return "a part of the path is not a directory"
    return os_reason(error)


__all__ = [
    "MAX_CERTIFICATE_BYTES",
    "MAX_KEY_FILE_BYTES",
    "MAX_SECRET_FILE_BYTES",
    "MAX_TOML_BYTES",
    "MAX_TOML_DEPTH",
    "TOO_LONG_NUMBER",
    "FileRefused",
    "TomlRefused",
    "check_database_file",
    "check_no_special_file",
    "check_readable_file",
    "check_writable_file",
    "file_kind",
    "load_toml",
    "os_reason",
    "read_bounded",
    "read_bounded_text",
]
