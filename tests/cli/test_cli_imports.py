"""Each `flushtable` command loads what it needs and only that (issue 17: a command line that answers
at once). Not timed (bench/bench_cli.py prints the times): the import graph is asserted instead, in a
fresh interpreter per command, so a heavy import creeping into a fast path fails here on any machine."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import COMMANDS, build_parser, chosen_command
from tests.rules.test_settle_input import GOOD

ROOT = Path(__file__).resolve().parents[2]

# Never for a command that only reads: the web stack, the daemon, the exact mathematics and numpy.
HEAVY = ("fastapi", "uvicorn", "starlette", "controller.daemon", "controller.panel", "controller.gamemath")
HEAVY_NUMERIC = ("numpy", "scipy")
# Issue 28: never for settle, nor for a journal reader given --journal: the wire protocol, the drivers,
# the validation library, the round machine's library and the engine itself.
BELOW_THE_RULES = ("firmware_protocol", "drivers", "pydantic", "transitions", "controller.engine.engine")
# Issue 28: never for settle, nor for a journal reader given --journal: the log library (which loads
# rich, asyncio and ssl: ~60 ms; the journal logs only when it writes), the event loop, the configuration
# and its TOML parser.
NOT_FOR_A_READER = ("structlog", "rich", "asyncio", "ssl", "pydantic", "controller.config", "tomllib")

_PROBE = """
import json, sys
from controller.cli import main
try:
    status = main(json.loads(sys.argv[1]))
except SystemExit as done:
    status = done.code
sys.stdout.flush()
print(json.dumps({"status": status, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def loaded_by(argv: list[str], stdin: str = "", cwd: Path | None = None) -> set[str]:
    """The modules a fresh interpreter holds after ``flushtable ARGV`` ran (its exit status 0)."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(argv)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd or ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["status"] in (0, None), done.stderr
    return set(report["modules"])


def heavy_in(modules: set[str], heavy: tuple[str, ...]) -> list[str]:
    return sorted(name for name in modules if any(name == h or name.startswith(h + ".") for h in heavy))


def other_commands_in(modules: set[str], chosen: str | None) -> list[str]:
    own = COMMANDS[chosen][0] if chosen else None
    return sorted(
        name
        for name in modules
        if name.startswith("controller.commands.") and name not in (own, "controller.commands.journal_args")
    )


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["settle", "--help"]])
def test_version_and_help_load_no_command_and_no_library(argv: list[str]) -> None:
    modules = loaded_by(argv)
    assert heavy_in(modules, (*HEAVY, *HEAVY_NUMERIC, "structlog", "msgspec", "sqlite3")) == []
    assert other_commands_in(modules, chosen_command(argv)) == []
    if argv == ["--version"]:
        assert not any(name.startswith("controller.rules") for name in modules)


@pytest.mark.parametrize("text", [False, True])
def test_settle_loads_the_rules_and_nothing_of_the_table(text: bool, tmp_path: Path) -> None:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(GOOD))
    modules = loaded_by(["settle", *(["--text"] if text else []), str(path)])
    assert "controller.rules.settle" in modules
    assert heavy_in(modules, (*HEAVY, *HEAVY_NUMERIC, "structlog", "msgspec", "sqlite3")) == []
    assert heavy_in(modules, BELOW_THE_RULES) == []
    assert heavy_in(modules, NOT_FOR_A_READER) == []
    assert other_commands_in(modules, "settle") == []
    assert "controller.journal.store" not in modules


def test_config_loads_no_journal_store_and_no_web_stack() -> None:
    modules = loaded_by(["config"])
    assert "controller.config" in modules
    assert heavy_in(modules, (*HEAVY, *HEAVY_NUMERIC, "structlog", "controller.journal.store")) == []
    assert heavy_in(modules, ("firmware_protocol", "transitions", "controller.engine.engine")) == []
    # pydantic it needs (the configuration's checks); the log library and the event loop it does not.
    assert heavy_in(modules, ("structlog", "rich", "asyncio", "ssl")) == []


@pytest.mark.parametrize(
    "argv",
    [["recall"], ["journal", "verify"], ["journal", "show"], ["meters"]],
)
def test_journal_readers_load_no_web_stack_daemon_or_mathematics(argv: list[str], tmp_path: Path) -> None:
    from controller.journal.store import Journal

    journal_path = tmp_path / "journal.sqlite"
    Journal.open(journal_path, "t1").close()
    modules = loaded_by([*argv, "--journal", str(journal_path)])
    assert "controller.journal.store" in modules
    assert heavy_in(modules, (*HEAVY, *HEAVY_NUMERIC)) == []
    assert heavy_in(modules, BELOW_THE_RULES) == []
    # Given --journal alone, not even `journal verify` reads the configuration (its anchor key: the
    # embedded one names none, below), and no reader loads the log library: the journal logs only
    # when it writes.
    assert heavy_in(modules, NOT_FOR_A_READER) == []
    if argv != ["journal", "verify"]:  # the start-up proof (anchor, chain, triggers) is verify's alone
        assert heavy_in(modules, ("controller.journal.proof", "controller.journal.anchor")) == []
    assert other_commands_in(modules, argv[0]) == []


@pytest.mark.parametrize("action", ["verify", "show"])
def test_journal_given_a_config_still_reads_it(action: str, tmp_path: Path) -> None:
    """--config with --journal: the configuration's anchor key and table are `verify`'s, as `run`'s."""
    from controller.config import DEFAULT_CONFIG_TOML
    from controller.journal.store import Journal

    journal_path = tmp_path / "journal.sqlite"
    Journal.open(journal_path, "SIM1").close()
    config_path = tmp_path / "table.toml"
    config_path.write_text(DEFAULT_CONFIG_TOML)
    modules = loaded_by(["journal", action, "--journal", str(journal_path), "--config", str(config_path)])
    assert ("controller.config" in modules) == (action == "verify")


def test_the_embedded_configuration_names_no_anchor_key_and_no_table_for_verify() -> None:
    """`journal verify --journal PATH` reads no configuration on the strength of this: the embedded
    default would give it no anchor key (and its table is never asked without --config)."""
    from controller.config import load_config

    assert load_config(None).journal_anchor_key is None


def test_the_listed_names_and_helps_are_the_modules_own() -> None:
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        assert (name, help_text) == (module.NAME, module.HELP)


def test_a_parser_with_every_command_loaded_parses_each() -> None:
    parser = build_parser()
    assert parser.parse_args(["settle", "--text"]).text
    assert parser.parse_args(["journal", "verify"]).journal_action == "verify"


@pytest.mark.parametrize(
    ("argv", "chosen"),
    [([], None), (["--version"], None), (["-h", "settle"], "settle"), (["recall", "--last", "3"], "recall")],
)
def test_the_chosen_command_is_the_first_word_that_is_not_an_option(
    argv: list[str], chosen: str | None
) -> None:
    assert chosen_command(argv) == chosen


def test_an_unknown_command_is_refused_with_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    from controller.cli import main

    with pytest.raises(SystemExit) as done:
        main(["sette"])
    assert done.value.code == 2
    assert "invalid choice: 'sette'" in capsys.readouterr().err
