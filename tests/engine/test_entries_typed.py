"""Every entry the engine writes is built as its typed class where it is decided (docs/engine.md
"Journal entries"): ``ctx.journal(entries.SomeEntry(...))``, never a kind's name and a dict of fields
looked up at run time. Read from the source with ``ast``: a call that goes back to the string form is
found here, before any round is played."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controller.engine.context import TableContext
from controller.engine.state import TableConfig
from controller.journal import entries

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ROOT / "controller"


def _string_form_calls(path: Path, root: Path = ROOT) -> list[str]:
    """Where a ``.journal(...)`` call gives a kind's name (a string) or a dict rather than an entry, and
    where the engine builds an entry from a name and fields (``entries.build``, ``JournalRecord.of``)."""
    text = path.read_text(encoding="utf-8")
    if "journal(" not in text and "build(" not in text and ".of(" not in text:
        return []  # parsed only where such a call can be (the tree has ~500 modules)
    tree = ast.parse(text, filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        where = f"{path.relative_to(root)}:{node.lineno}"
        if node.func.attr == "journal" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant | ast.JoinedStr | ast.Dict) or len(node.args) > 1:
                found.append(f"{where}: .journal({ast.unparse(first)}, ...)")
        # The engine's records are typed where decided; JournalRecord.of (outputs.py) stays as the
        # adapter of the daemon's own records (start, stop, configuration and clock checks) only.
        engine = path.is_relative_to(root / "controller" / "engine")
        if engine and node.func.attr in ("build", "of") and path.name != "outputs.py":
            found.append(f"{where}: {ast.unparse(node.func)}(...)")
    return found


def test_no_production_call_writes_an_entry_from_a_name_and_a_dict() -> None:
    found = [hit for path in sorted(PRODUCTION.rglob("*.py")) for hit in _string_form_calls(path)]
    assert found == [], "entries built from a kind's name and fields:\n" + "\n".join(found)


def test_the_check_finds_the_string_form(tmp_path: Path) -> None:
    """The check above is not vacuous: the string form it looks for is found in a module that has it."""
    engine = tmp_path / "controller" / "engine"
    engine.mkdir(parents=True)
    module = engine / "bad.py"
    module.write_text('ctx.journal("dp_waived", {"seat": 3})\nentries.build("dp_waived", {})\n')
    assert len(_string_form_calls(module, tmp_path)) == 2


def test_the_context_takes_a_typed_entry_only() -> None:
    """The context's one way in is an entry: its kind is the entry's own tag."""
    ctx = TableContext(TableConfig(table_id="T1"), rounds_started=0)
    ctx.journal(entries.DpWaived(seat=2))
    (record,) = ctx.out
    assert record.kind == "dp_waived"  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        ctx.journal("dp_waived", {"seat": 2})  # type: ignore[arg-type,call-arg]


def test_the_registry_is_written_once() -> None:
    """docs/journal.md "Adding a kind": a kind's class is listed in one place (the ``EntryType`` union),
    and every ``Entry`` class of the module is in it: a class defined and not listed is no kind."""
    package = ROOT / "controller" / "journal" / "entries"
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in sorted(package.glob("*.py"))]
    classes = {cls.__name__ for cls in entries.ENTRY_CLASSES}
    # The modules' own assignments (registries), not their functions (which read the classes by name).
    assignments = [
        node for tree in trees for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)
    ]
    # A class named alone or through its domain module (``rounds.RoundSettled``).
    named = [
        node.id if isinstance(node, ast.Name) else node.attr
        for statement in assignments
        for node in ast.walk(statement)
        if (isinstance(node, ast.Name) and node.id in classes)
        or (isinstance(node, ast.Attribute) and node.attr in classes)
    ]
    listed_twice = sorted(name for name in classes if named.count(name) > 1)
    assert listed_twice == [], f"listed more than once in controller/journal/entries/: {listed_twice}"
    defined = {
        value.__name__
        for value in vars(entries).values()
        if isinstance(value, type) and issubclass(value, entries.Entry) and value is not entries.Entry
    }
    renamed = {cls.__name__ for cls in entries.RENAMED_KINDS.values()}  # read only: earlier releases' kinds
    assert defined == classes | renamed
    assert not classes & renamed


# The readers that take the typed entry (not its payload merged back into a dict): the daemon's run
# tallies, the journal watch, the panel's range meters, the reducer's settings and the floor's operator
# events, the integrity watch's window. (The text renderers still read the gate's payloads: docs/engine.md
# "Journal entries".)
TYPED_READERS = (
    ("controller/daemon_outputs.py", "_after_record"),
    ("controller/daemon_watches.py", "journal_watch"),
    ("controller/panel/shift_meters.py", "fold_range"),
    ("controller/journal/state.py", "_on_limits_set"),
    ("controller/journal/state.py", "_on_paytable_set"),
    ("controller/floor/surveillance.py", "_operator_event"),
    ("controller/integrity_watch.py", "window_records"),
)


def test_the_readers_read_typed_entries() -> None:
    reading_payloads = []
    for module, function in TYPED_READERS:
        tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
        (node,) = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function
        ]
        if any(isinstance(n, ast.Attribute) and n.attr == "payload" for n in ast.walk(node)):
            reading_payloads.append(f"{module}: {function}")
    assert reading_payloads == []


# The records made through the adapter from a kind's name and fields (JournalRecord.of): none in
# production (docs/engine.md "Journal entries"): every producer builds its typed class, and the adapter
# is left to the tests and benches that rebuild a record from a stored row's fields.
ADAPTER_CALLS: set[str] = set()


def test_no_producer_goes_through_the_adapter() -> None:
    calls = set()
    for path in sorted(PRODUCTION.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "JournalRecord.of(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "of"
                and ast.unparse(node.func.value) == "JournalRecord"
            ):
                calls.add(f"{path.relative_to(ROOT)}: {ast.unparse(node.args[0])}")
    assert calls == ADAPTER_CALLS


# The rows handed to the journal as a kind's name and a dict literal (``PendingEntry("kind", {...})``):
# only the linked tables' simulation (controller/simulation/linked_tables.py), which writes whole rounds
# of a settlement it makes up as the settle output's JSON, not a producer of the table's own decisions.
PENDING_FROM_DICTS = {
    "controller/simulation/linked_tables.py: 'round_started'",
    "controller/simulation/linked_tables.py: 'bets_locked'",
    "controller/simulation/linked_tables.py: 'round_settled'",
}


def test_no_production_row_is_a_name_and_a_dict() -> None:
    rows = set()
    for path in sorted(PRODUCTION.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "PendingEntry(" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func).endswith("PendingEntry")
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Dict)
            ):
                rows.add(f"{path.relative_to(ROOT)}: {ast.unparse(node.args[0])}")
    assert rows == PENDING_FROM_DICTS
