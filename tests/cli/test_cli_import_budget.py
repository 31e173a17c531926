"""The fast commands' import sets, held to a budget (issue 28: `settle`, `--version`, `recall` and
`config` start in a few times a bare interpreter's time, by importing only what each needs).

tests/cli/test_cli_imports.py names what each command must never load; this holds each to the list of
what it does load today, so the set cannot grow unnoticed: every module of this project a command loads
must be on its list, and so must every installed package outside the standard library. A fresh
interpreter runs the command through ``controller.cli.main`` and reports ``sys.modules``; what a bare
interpreter from the same venv already holds (``site``'s own imports) is not counted. Not timed
(bench/bench_cli.py prints the times): an import graph is the same on a quiet machine and a loaded one.

A failure names the newcomers. Import them where they are used (inside the function that needs them,
as controller/rules/settle.py does for the Progressive's rules), or, if the command truly needs them
on every start, add them here with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.config import DEFAULT_CONFIG_TOML
from tests.cli.test_cli_imports import loaded_by

ROOT = Path(__file__).resolve().parents[2]
OWN_PACKAGES = ("controller", "table_names", "drivers", "firmware_protocol", "sim_devices")

# Never on these four commands' paths: the web stack and its validation library, the numeric stack, the
# floor's database and messaging clients, the log library (with rich), and the standard library's event
# loop, sockets, TLS and subprocesses. pydantic (with pydantic_core, annotated_types and
# typing_inspection) was three quarters of `config`'s CPU: the configuration is checked by
# controller/checked.py's models now (issue 28, docs/operations.md), and pydantic serves the panel only.
NEVER = (
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "fastapi",
    "starlette",
    "uvicorn",
    "numpy",
    "scipy",
    "psycopg",
    "psycopg_pool",
    "nats",
    "structlog",
    "rich",
    "asyncio",
    "ssl",
    "socket",
    "subprocess",
    "concurrent",
    "multiprocessing",
    "http",
    "email",
    # argparse's formatter loads shutil (with bz2 and lzma) for the terminal's width: controller/cli.py's
    # formatter reads the width itself.
    "shutil",
)
# `dataclasses` loads `inspect` with `ast`, `dis`, `tokenize` and `linecache` (about 6.5 ms a start), and
# each class it makes compiles its methods (about 0.3 ms more): the ~17 classes the journal's reader made
# with it (its rows, the fold's records, the stored totals' rows, the games' catalogue, the property and
# the money format), the 16 of settle (the round's input, its result, the bonus bets) and the 13 of
# `config` (the resolved configuration, the device URLs) are plain records now (table_names/records.py;
# issue 28, docs/operations.md "the fast commands without `dataclasses`").
_DATACLASSES = ("dataclasses", "inspect", "ast", "_ast", "dis", "tokenize", "linecache")
# And for one command: the journal's reader folds and prints, it never hashes (OpenSSL's load, ~2 ms).
# And settling: it never hashes, never reads a zone (a round's settlement has no time) and parses no
# TOML (issue 28: OpenSSL ~2 ms, zoneinfo with sysconfig ~2 ms, tomllib ~3 ms).
_SETTLE_NEVER = ("hashlib", "_hashlib", "hmac", "zoneinfo", "sysconfig", "tomllib", *_DATACLASSES)
# A settlement printed as text shows no time: the property's zone and shifts (controller/locale.py, its
# dataclasses and `datetime`: ~4 ms of CPU a start, issue 28) load with the first time a text shows.
_SETTLE_TEXT_NEVER = (*_SETTLE_NEVER, "controller.locale", "datetime", "_datetime")
# The journal's typed entries: msgspec (with typing_extensions, uuid, decimal) and its ~60 classes, and
# the upcasters that make them. A reader that folds and shows today's rows reads their views
# (controller/journal/entry_view.py): about 20 ms of CPU a start off `recall` (issue 28, "The sixth stop").
_TYPED_ENTRIES = (
    "msgspec",
    "typing_extensions",
    "controller.journal.entries",
    "controller.journal.upcast",
)

NEVER_BY_COMMAND: dict[str, tuple[str, ...]] = {
    # recall's CSV writer loads with --csv only (the standard library's csv with it). The default
    # property's zone is UTC: no zone database (zoneinfo with sysconfig) for its times.
    "recall": (
        "hashlib",
        "_hashlib",
        "controller.journal.render_csv",
        "csv",
        "_csv",
        *_TYPED_ENTRIES,
        *_DATACLASSES,
        "zoneinfo",
        "sysconfig",
    ),
    "settle": _SETTLE_NEVER,
    "settle --text": _SETTLE_TEXT_NEVER,
    # The default property's zone is UTC: checked without the zone database (zoneinfo with sysconfig).
    # And no `dataclasses`: the configuration's resolved parts, its segment policy, the checked models'
    # validator marker and the drivers' device URLs are plain records (table_names/records.py).
    "config": ("hmac", "zoneinfo", "sysconfig", *_DATACLASSES),
}
RULES = (
    "controller.rules",
    "controller.rules.amounts",
    # The games, wagers and paytable presets, written once (issue 29): what games.py and paytables.py
    # defined themselves before, so they load no more than they did together.
    "controller.rules.catalogue",
    "controller.rules.cards",
    "controller.rules.games",
    "controller.rules.hands",
    "controller.rules.paytables",
    # The plain records the catalogue, the journal's rows and fold, the property and the money format are
    # made of (table_names/records.py): a dataclass's methods without the `dataclasses` module.
    "table_names.records",
)
# What the configuration's checks and the journal's readers need of the rules: the catalogue of games,
# wagers and paytables, never the cards' codec nor the hand evaluator's tables (~5 ms to build).
CATALOGUE = tuple(name for name in RULES if name not in ("controller.rules.cards", "controller.rules.hands"))
ENTRY = ("controller", "controller.cli", "controller.errors")

SETTLE = (
    *ENTRY,
    *RULES,
    "controller.commands",
    "controller.commands.settle",
    "controller.names",
    # settle.py's round (its types, parsing and checks) and its result types, split out of it (issue 29):
    # the same code as before, in three modules.
    "controller.rules.round_input",
    "controller.rules.settle",
    "controller.rules.settlement",
    "table_names",
)

# command -> (this project's modules it may load, installed packages outside the standard library)
BUDGET: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # The version is a constant of the package: no command, no rules.
    "--version": (frozenset(ENTRY), frozenset()),
    # A round without a Progressive: the rules it settles by, nothing else (the Progressive's rules load
    # only for a round that has one; the path checks only for a file argument).
    "settle": (frozenset(SETTLE), frozenset()),
    # The same, printed as text: the recall's renderer (the same words as `flushtable recall`).
    "settle --text": (
        frozenset(
            (
                *SETTLE,
                "controller.journal",
                "controller.journal.render",
                "controller.money",  # the amounts (the property's currency only with --config)
                "controller.rules.describe",
            )
        ),
        frozenset(),
    ),
    # The journal's reader: the stored rows and their views (not the typed entries, nor msgspec), the
    # table-state fold (the Progressive's meter model only for a journal that has Progressive entries),
    # the round machine's state names, the rules it describes hands with, the viewer's redaction and
    # the text it prints.
    "recall": (
        frozenset(
            (
                *ENTRY,
                *CATALOGUE,
                "controller.commands",
                "controller.commands.journal_args",
                "controller.commands.recall",
                "controller.files",
                "controller.journal",
                "controller.journal.chain",
                "controller.journal.entry_view",
                "controller.journal.kinds",
                "controller.journal.privacy",
                "controller.journal.proposals",  # the reducer folds the two-person changes too
                "controller.journal.recall",
                "controller.journal.render",
                "controller.journal.state",
                "controller.journal.store",
                # The store's own parts: the stored totals' schema it opens and checks (the upcasters
                # load with the first row of an earlier version).
                "controller.journal.totals",
                # The store's modules since it was split (docs/journal.md "The code").
                *(
                    f"controller.journal.{name}"
                    for name in (
                        "errors",
                        "handle",
                        "indexes",
                        "reader",
                        "rows",
                        "schema",
                        "sealed",
                        "state_parts",
                        "wal",
                        "writer",
                    )
                ),
                "controller.locale",  # times in the property's zone, amounts in its currency
                "controller.money",
                "controller.names",
                "controller.phases",  # the round's phase names the fold reads (below the engine)
                "controller.rules.describe",
                "table_names",
            )
        ),
        frozenset(),
    ),
    # The configuration's checks: the settings' checked models (controller/checked.py, no library) for
    # the settings (controller/settings.py) and the configuration's sections; the Progressive's rules
    # and its controller model (and with them the journal's typed entries and msgspec) only for a table
    # with a [progressive] section.
    "config": (
        frozenset(
            (
                *ENTRY,
                *CATALOGUE,
                "controller.checked",
                "controller.commands",
                "controller.commands.config",
                "controller.config",
                "controller.config.reading",
                "controller.config.resolved",
                "controller.config.sections",
                "controller.files",
                "controller.journal",
                "controller.journal.chain",
                "controller.locale",  # [property]'s checks
                "controller.money",  # [property]'s currency format
                "controller.names",
                "controller.release_key",  # [software] public_key's one check (no cryptography)
                # Not controller.passwords: a stored password hash is read with the first panel user
                # (none in the embedded default), and `hmac` with it.
                "controller.settings",
                "drivers",
                "drivers.urls",
                "table_names",
            )
        ),
        frozenset(),
    ),
}

RUN_ONE_ROUND = ("--rounds", "1", "--seed", "1", "--no-panel", "--time-scale", "50", "--log-level", "error")
_BARE = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def bare_modules() -> set[str]:
    """What a bare interpreter from the same venv holds (``site`` and the editable install's finder)."""
    done = subprocess.run(
        [sys.executable, "-c", _BARE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(done.stdout))


def over_budget(command: str, modules: set[str]) -> dict[str, list[str]]:
    """The modules ``command`` loaded past its budget, and those it must never load."""
    own_allowed, packages_allowed = BUDGET[command]
    counted = modules - bare_modules() - {"__main__"}
    own = {name for name in counted if name.split(".")[0] in OWN_PACKAGES}
    packages = {
        name.split(".")[0]
        for name in counted - own
        if not name.startswith("_sysconfigdata")  # the standard library's build data (sysconfig's)
    } - set(sys.stdlib_module_names)
    never_here = (*NEVER, *NEVER_BY_COMMAND.get(command, ()))
    # A package by its top name (pydantic, asyncio), or one module by its full name (controller.locale).
    never = sorted(name for name in counted if name.split(".")[0] in never_here or name in never_here)
    problems = {
        "own modules past the budget": sorted(own - own_allowed),
        "packages past the budget": sorted(packages - packages_allowed),
        "never on this path": never,
    }
    return {what: names for what, names in problems.items() if names}


def _round() -> str:
    from tests.rules.test_settle_input import GOOD

    return json.dumps(GOOD)


@pytest.mark.parametrize("text", [False, True])
def test_settle_a_round_on_stdin_stays_in_its_budget(text: bool) -> None:
    command = "settle --text" if text else "settle"
    modules = loaded_by(command.split(), stdin=_round())
    assert "controller.rules.settle" in modules
    assert over_budget(command, modules) == {}


def test_version_stays_in_its_budget() -> None:
    assert over_budget("--version", loaded_by(["--version"])) == {}


def _small_journal(tmp_path: Path) -> Path:
    journal = tmp_path / "journal.sqlite"
    made = subprocess.run(
        [sys.executable, "-m", "controller.cli", "run", *RUN_ONE_ROUND, "--journal", str(journal)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert made.returncode == 0, made.stderr[-2000:]
    return journal


def test_recall_of_a_small_journal_stays_in_its_budget(tmp_path: Path) -> None:
    modules = loaded_by(["recall", "--journal", str(_small_journal(tmp_path))])
    assert "controller.journal.recall" in modules
    assert over_budget("recall", modules) == {}


def test_journal_show_reads_its_rows_without_the_typed_entries(tmp_path: Path) -> None:
    """`journal show` gates each entry by its round folded through the stored rows' views
    (controller/journal/privacy.py ``RevealOracle``): no msgspec, no typed classes, no upcasters."""
    modules = loaded_by(["journal", "show", "--journal", str(_small_journal(tmp_path))])
    assert "controller.journal.privacy" in modules
    typed = [name for name in modules if any(name == t or name.startswith(f"{t}.") for t in _TYPED_ENTRIES)]
    assert sorted(typed) == []


@pytest.mark.parametrize("given", [False, True])
def test_config_checking_a_table_stays_in_its_budget(given: bool, tmp_path: Path) -> None:
    table = tmp_path / "table.toml"
    table.write_text(DEFAULT_CONFIG_TOML)
    modules = loaded_by(["config", *(["--config", str(table)] if given else [])])
    assert "controller.config" in modules
    assert over_budget("config", modules) == {}


def test_config_of_the_embedded_default_parses_no_toml(tmp_path: Path) -> None:
    """The embedded default is checked from its document written out (controller/config/sections.py
    ``default_config_document``): no TOML parser on `flushtable config`'s path; a file still needs one."""
    assert "tomllib" not in loaded_by(["config"])
    table = tmp_path / "table.toml"
    table.write_text(DEFAULT_CONFIG_TOML)
    assert "tomllib" in loaded_by(["config", "--config", str(table)])


def test_the_budget_sees_pydantic_or_the_hand_tables_come_back_to_config_and_recall() -> None:
    """The check itself can fail for the two commands issue 28 trimmed: pydantic (with its core) on the
    configuration's path, the hand evaluator's tables on the journal reader's."""
    modules = loaded_by(["config"]) | {"pydantic", "pydantic_core"}
    assert over_budget("config", modules) == {
        "packages past the budget": ["pydantic", "pydantic_core"],
        "never on this path": ["pydantic", "pydantic_core"],
    }
    assert over_budget("recall", {"controller.rules.hands", "controller.journal.recall", "hashlib"}) == {
        "own modules past the budget": ["controller.rules.hands"],
        "never on this path": ["hashlib"],
    }


def test_the_budget_sees_a_module_past_it() -> None:
    """The check itself can fail: a rules round that loaded the Progressive's rules and pydantic."""
    modules = loaded_by(["settle"], stdin=_round()) | {"controller.rules.progressive", "pydantic"}
    assert over_budget("settle", modules) == {
        "own modules past the budget": ["controller.rules.progressive"],
        "packages past the budget": ["pydantic"],
        "never on this path": ["pydantic"],
    }
