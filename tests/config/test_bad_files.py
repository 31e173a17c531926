"""Files named by a configuration or a command line, read bounded and checked up front (issue 30 item 4).

The reproductions of the issue, through the real `flushtable` process (bounded by a timeout and an
address-space limit set with setrlimit before exec, so that /dev/zero or a FIFO cannot hang the suite or
fill the machine): ``key_file = "/dev/zero"`` (it hung `config` and took `run` to 24 GB), a FIFO as a key
file (it hung both), a configuration nested 3,000 deep (a 3,000-line RecursionError), a journal path
through a file and one under /proc, `user --journal` through a file (tracebacks). And the TOML depth
limit proven as a property: on any nesting of arrays and inline tables (strings full of brackets
included), load_toml answers as tomllib does up to the limit and refuses in one line past it.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.config import DEFAULT_CONFIG_TOML, ConfigError, load_config
from controller.files import (
    MAX_KEY_FILE_BYTES,
    MAX_TOML_DEPTH,
    FileRefused,
    TomlRefused,
    check_writable_file,
    load_toml,
    read_bounded,
)

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60.0
MEMORY_LIMIT_BYTES = 2 * 1024**3
KEY_HEX = "5a" * 31 + "a5"


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def flushtable(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *words],
        cwd=cwd,
        input="a long enough password 123\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,  # a hang fails the test instead of the suite
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NOTIFY_SOCKET": "", "FLUSHTABLE_USERS_FILE": ""},
        preexec_fn=_limits,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-2000:]
    return lines[0]


def real_device_config(tmp_path: Path, key_file: str) -> Path:
    """The embedded default with a real shuffler whose key is read from ``key_file``."""
    text = DEFAULT_CONFIG_TOML.replace(
        'url = "sim+pty://shuffler"', f'url = "/dev/ttyUSB-none"\nkey_file = "{key_file}"'
    ).replace('path = "var/journal.sqlite"', 'path = "j.sqlite"')
    path = tmp_path / "table.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("command", [["config"], ["run", "--no-panel", "--rounds", "1"]])
def test_a_device_key_file_that_is_dev_zero_or_a_fifo(tmp_path: Path, command: list[str]) -> None:
    os.mkfifo(tmp_path / "key.fifo")
    for key_file, kind in (("/dev/zero", "a character device"), ("key.fifo", "a FIFO (named pipe)")):
        config = real_device_config(tmp_path, key_file)
        line = one_line(flushtable(*command, "--config", str(config), cwd=tmp_path))
        where = key_file if key_file.startswith("/") else str(tmp_path / key_file)
        key = "table.toml: devices.shuffler.key_file"
        assert line == f"flushtable {command[0]}: {key}: {where}: {kind}, not a regular file"
    assert not (tmp_path / "j.sqlite").exists()


def test_a_key_file_past_the_limit_is_refused(tmp_path: Path) -> None:
    (tmp_path / "huge.key").write_text(KEY_HEX + "\n" + " " * MAX_KEY_FILE_BYTES)
    with pytest.raises(ConfigError, match="larger than 4,096 bytes"):
        load_config(real_device_config(tmp_path, "huge.key"))
    (tmp_path / "good.key").write_text(KEY_HEX + "\n")
    assert load_config(real_device_config(tmp_path, "good.key")).devices["shuffler"].key == bytes.fromhex(
        KEY_HEX
    )


def test_a_configuration_nested_3000_deep(tmp_path: Path) -> None:
    for name, text in (
        ("arrays.toml", "a = " + "[" * 3000 + "]" * 3000 + "\n"),
        ("inline.toml", "a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n"),
        ("dotted.toml", "[table]\n" + "a" + ".a" * 3000 + " = 1\n"),
    ):
        (tmp_path / name).write_text(text)
        line = one_line(flushtable("config", "--config", name, cwd=tmp_path))
        assert line.startswith(
            f"flushtable config: {name}: not valid TOML: nested more than {MAX_TOML_DEPTH} deep"
        )


def test_a_journal_path_through_a_file_or_under_proc(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x\n")
    through = tmp_path / "plain" / "j.sqlite"
    line = one_line(flushtable("run", "--no-panel", "--rounds", "1", "--journal", str(through), cwd=tmp_path))
    assert line == f"flushtable run: --journal {through}: {tmp_path / 'plain'} is not a directory"
    config = tmp_path / "proc.toml"
    config.write_text(
        DEFAULT_CONFIG_TOML.replace('path = "var/journal.sqlite"', 'path = "/proc/self/j.sqlite"')
    )
    line = one_line(flushtable("run", "--no-panel", "--rounds", "1", "--config", str(config), cwd=tmp_path))
    assert line.startswith(
        "flushtable run: proc.toml: journal.path /proc/self/j.sqlite: cannot create a file in"
    )
    for action in (["list"], ["add", "bob", "--role", "viewer"]):
        line = one_line(flushtable("user", "--journal", str(through), *action, cwd=tmp_path))
        assert line == f"flushtable user: --journal {through}: {tmp_path / 'plain'} is not a directory"


def test_uplink_and_floor_secret_files_that_are_fifos(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pw.fifo")
    (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    uplink = (
        '\n[uplink]\nservers = ["tls://127.0.0.1:4222"]\nsite = "s1"\nuser = "table-SIM1"\n'
        'password_file = "pw.fifo"\nca_file = "ca.pem"\n'
    )
    (tmp_path / "table.toml").write_text(DEFAULT_CONFIG_TOML + uplink)
    line = one_line(flushtable("config", "--config", "table.toml", cwd=tmp_path))
    assert line == (
        f"flushtable config: table.toml: uplink.password_file: {tmp_path / 'pw.fifo'}: "
        "a FIFO (named pipe), not a regular file"
    )
    (tmp_path / "pw").write_text("secret\n")
    (tmp_path / "table.toml").write_text(
        DEFAULT_CONFIG_TOML + uplink.replace('"pw.fifo"', '"pw"').replace('"ca.pem"', '"pw.fifo"')
    )
    line = one_line(flushtable("config", "--config", "table.toml", cwd=tmp_path))
    assert line.endswith(f"uplink.ca_file: {tmp_path / 'pw.fifo'}: a FIFO (named pipe), not a regular file")


def test_read_bounded_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for path, reason in (
        (Path("/dev/zero"), "a character device, not a regular file"),
        (tmp_path / "fifo", "a FIFO (named pipe), not a regular file"),
        (tmp_path, "a directory, not a regular file"),
        (tmp_path / "none", "no such file"),
    ):
        with pytest.raises(FileRefused) as refused:
            read_bounded(path, limit_bytes=10)
        assert refused.value.reason == reason
    (tmp_path / "ten").write_bytes(b"0123456789")
    assert read_bounded(tmp_path / "ten", limit_bytes=10) == b"0123456789"
    with pytest.raises(FileRefused, match="larger than 9 bytes"):
        read_bounded(tmp_path / "ten", limit_bytes=9)


def test_check_writable_file(tmp_path: Path) -> None:
    check_writable_file(tmp_path / "new" / "deeper" / "j.sqlite", "--journal")  # made later: fine
    assert not (tmp_path / "new").exists()
    assert list(tmp_path.iterdir()) == []  # the probe is gone
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(Exception, match="a FIFO"):
        check_writable_file(tmp_path / "fifo", "--output")


# --- the depth limit as a property ------------------------------------------------------------------
# Strings full of what would open or close a level if it were not inside a string.
_TRICKY_TEXT = st.text(alphabet="[]{}#'\"\\ax\n", max_size=8)


def _values(depth: int) -> st.SearchStrategy[Any]:
    scalars = st.one_of(st.integers(-5, 5), _TRICKY_TEXT, st.booleans())
    if depth == 0:
        return scalars
    inner = _values(depth - 1)
    return st.one_of(
        scalars,
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["k", "l", "m"]), inner, max_size=2),
    )


def _dump(value: Any) -> str:
    """A TOML inline value (JSON strings are TOML basic strings; no single-quoted forms needed)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_dump(item) for item in value) + "]"
    return "{" + ", ".join(f"{key} = {_dump(item)}" for key, item in value.items()) + "}"


def _nesting(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_nesting(item) for item in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_nesting(item) for item in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(value=_values(6), max_depth=st.integers(1, 7), comment=_TRICKY_TEXT)
def test_load_toml_agrees_with_tomllib_within_the_limit(value: Any, max_depth: int, comment: str) -> None:
    comment_line = "# " + comment.replace("\n", " ") + "\n"
    literal = "c = '''\n" + comment.replace("'", "") + "'''\n"  # a multi-line literal string
    text = comment_line + f"a = {_dump(value)}\nb = {json.dumps(comment)}\n" + literal
    depth = _nesting(value)
    if depth <= max_depth:
        assert load_toml(text, max_depth=max_depth) == tomllib.loads(text)
    else:
        with pytest.raises(TomlRefused, match=f"nested more than {max_depth} deep"):
            load_toml(text, max_depth=max_depth)


def test_an_anchor_key_file_that_is_dev_zero_or_a_fifo(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "anchor.fifo")
    for key_file in ("/dev/zero", "anchor.fifo"):
        (tmp_path / "table.toml").write_text(
            DEFAULT_CONFIG_TOML.replace(
                'path = "var/journal.sqlite"', f'path = "j.sqlite"\nanchor_key_file = "{key_file}"'
            )
        )
        line = one_line(flushtable("config", "--config", "table.toml", cwd=tmp_path))
        assert line.startswith("flushtable config: table.toml: journal.anchor_key_file: "), line
        assert "not a regular file" in line


@pytest.mark.parametrize(
    "command", [["config"], ["run", "--no-panel", "--rounds", "1"], ["journal", "verify"], ["recall"]]
)
def test_a_path_with_a_nul_character_is_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    """TOML can spell a NUL ("\\u0000") but no path holds one: os.stat and os.open raise ValueError
    ("embedded null byte"), which reached the user as a 35-line traceback from `config` and `run` (a
    device key file) and from every command that reads journal.path (`run`, `journal verify`, `recall`,
    `meters`), while `flushtable config` accepted such a journal.path."""
    (tmp_path / "good.key").write_text(KEY_HEX + "\n")
    key_file = tmp_path / "key_file.toml"
    key_file.write_text(real_device_config(tmp_path, "k\\u0000ey").read_text())
    journal = tmp_path / "journal.toml"
    journal.write_text(
        real_device_config(tmp_path, "good.key").read_text().replace('"j.sqlite"', '"j\\u0000"')
    )
    for config, key in ((key_file, "devices.shuffler.key_file"), (journal, "journal.path")):
        line = one_line(flushtable(*command, "--config", str(config), cwd=tmp_path))
        assert key in line, line
        assert "a NUL character in the path" in line, line
    assert not (tmp_path / "j.sqlite").exists()


def test_a_users_file_with_a_nul_character_is_refused_in_one_line(tmp_path: Path) -> None:
    """`[panel] users_file` is read later (by the panel, by `flushtable user`): a NUL in it reached the
    user as a traceback from `flushtable user list`; the configuration refuses it."""
    config = tmp_path / "table.toml"
    bind = 'bind = "127.0.0.1:8080"'
    config.write_text(DEFAULT_CONFIG_TOML.replace(bind, bind + '\nusers_file = "u\\u0000"'))
    for command in (["config", "--config", str(config)], ["user", "--config", str(config), "list"]):
        line = one_line(flushtable(*command, cwd=tmp_path))
        assert "panel.users_file: a NUL character in the path" in line, line
