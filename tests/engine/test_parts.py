"""The engine in parts: each event and action has one handler, found by its type; the largest class
stays under 450 lines; ``held`` is a nested state that remembers where the round was, and the round's
lifecycle is read from the machine, not stored beside it."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from pathlib import Path

from controller.engine import JournalRecord, TableConfig, TableEngine
from controller.engine import actions as a
from controller.engine import machine as m
from controller.engine.flow import RoundFlow
from controller.engine.round import LiveRound
from drivers.events import DeviceLost, Shuffle
from tests.engine.table import Table, stack, the_round
from tests.engine.test_rounds import HCF_DEALER, HCF_SEAT1, HCF_SEAT3

ENGINE_DIR = Path(__file__).resolve().parents[2] / "controller" / "engine"


def class_sizes() -> dict[str, int]:
    sizes: dict[str, int] = {}
    for path in sorted(ENGINE_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                assert node.end_lineno is not None
                sizes[f"{path.name}:{node.name}"] = node.end_lineno - node.lineno + 1
    return sizes


def test_the_largest_engine_class_is_under_450_lines() -> None:
    sizes = class_sizes()
    largest = max(sizes, key=lambda name: sizes[name])
    assert sizes[largest] < 450, f"{largest} has {sizes[largest]} lines"
    assert "engine.py:TableEngine" in sizes  # the walk found the engine (the check is not vacuous)


def test_every_action_has_exactly_one_handler() -> None:
    engine = TableEngine(TableConfig())
    handlers = engine._handlers
    for action in typing.get_args(a.OperatorAction):
        assert action in handlers, f"{action.__name__} has no handler"
    # Dispatch is by type: an object of another type is refused, not matched by a subclass check.
    outputs = engine.handle(object(), 1_800_000_000.0)
    fault = [o for o in outputs if isinstance(o, JournalRecord) and o.kind == "fault_raised"]
    assert fault
    assert "unknown event refused: object" in fault[0].payload["reason"]["message"]


def test_the_lifecycle_is_not_stored_beside_the_machine() -> None:
    fields = {f.name for f in dataclasses.fields(LiveRound)}
    assert not fields & {"closed", "closed_dead", "finished", "deal_finished"}
    assert "resume_target" not in RoundFlow.__init__.__code__.co_names
    assert "__getattr__" not in vars(RoundFlow)


def state(engine: TableEngine) -> str:
    """The engine's state, read afresh (a function call: no narrowing from an earlier assert)."""
    return engine.view().state


def held_from(engine: TableEngine) -> str | None:
    return m.held_from(engine._flow.state)


def closed(live: LiveRound) -> bool:
    return live.closed


def finished(engine: TableEngine) -> bool:
    return engine._ctx.round_finished


def test_held_is_a_nested_state_that_remembers_where_the_round_was() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER), auto_shuffle=False)
    engine = table.engine
    table.call(engine.handle, a.StartRound(), table.now_s)
    table.bet(1, "ante", 500)
    table.call(engine.handle, a.NoMoreBets(), table.now_s)
    assert state(engine) == m.BETS_LOCKED  # waiting for the deck
    table.event(DeviceLost("sensors", "cable"))
    assert state(engine) == m.HELD
    assert engine._flow.state == m.held_in(m.BETS_LOCKED)
    assert held_from(engine) == m.BETS_LOCKED
    (fault_id,) = engine.view().latched
    outputs = table.call(engine.handle, a.ClearFault(fault_id, "sue", "cable back"), table.now_s)
    assert state(engine) == m.BETS_LOCKED  # resumed where it was, with a fresh shuffle asked for
    assert held_from(engine) is None
    assert table.of_type(Shuffle, outputs) == [Shuffle("shuffler")]
    changes = [r.payload for r in table.journal("state_changed")][-2:]
    assert changes == [
        {"machine": "round", "from": "bets_locked", "to": "held", "trigger": "hold"},
        {"machine": "round", "from": "held", "to": "bets_locked", "trigger": "resume"},
    ]


def test_the_round_is_finished_when_the_machine_has_left_it() -> None:
    table = Table(TableConfig(), stack(HCF_SEAT1, HCF_SEAT3, HCF_DEALER))
    engine = table.engine
    table.start()
    table.bet(1, "ante", 500)
    table.bet(3, "ante", 500)
    table.lock()
    assert engine.view().round is not None
    assert not closed(the_round(engine))
    table.key("fold_seat", 1)
    table.key("fold_seat", 3)
    table.key("confirm")
    assert state(engine) == m.PAYING
    assert closed(the_round(engine))
    assert not the_round(engine).closed_dead
    assert not finished(engine)
    table.key("next")
    assert state(engine) == m.IDLE
    assert finished(engine)
    # The state change out of the round is the table's, not the round's.
    assert table.journal("state_changed")[-1].round_id is None
    assert table.journal("state_changed")[-2].round_id == the_round(engine).round_id


# The parts by the names they go by (a door held as ``self._bets`` is the bets), and the methods that
# change a dict, set or list in place.
_PARTS = frozenset(
    {"flow", "deal", "bets", "decisions", "bank", "faults", "settings", "progressive", "kills"}
)
_MUTATORS = frozenset(
    {"add", "append", "clear", "discard", "pop", "popitem", "remove", "setdefault", "update"}
)


def reaches_into_another_part(path: Path) -> list[str]:
    """Each ``<...>.<part>.<field>.<mutator>(...)`` and ``del``/assignment of ``<...>.<part>.<field>[...]``
    in ``path``: a part changing another part's collection behind its back."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        target: ast.expr | None = None
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and call.attr in _MUTATORS:
            target = call.value
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            subscripts = [t for t in targets if isinstance(t, ast.Subscript)]
            target = subscripts[0].value if subscripts else None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute):
            owner = target.value.attr.lstrip("_")
            if owner in _PARTS and f"{owner}.py" != path.name:
                found.append(f"{path.name}:{target.lineno}: {owner}.{target.attr}")
    return sorted(found)


def test_no_part_changes_another_parts_collections() -> None:
    """A part's sets and maps change only through its own methods (flow asks the bets to start a round
    afresh; the faults ask the bets to forget a released past-posting), never cleared from outside."""
    reaches = [reach for path in sorted(ENGINE_DIR.glob("*.py")) for reach in reaches_into_another_part(path)]
    assert reaches == []


def test_the_reach_check_sees_a_reach(tmp_path: Path) -> None:
    """Not vacuous: a part that clears the bets' set, or deletes from their map, from outside is found."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(ctx: object) -> None:\n    ctx.bets.excluded.clear()\n    del ctx.bets.spots[1]\n"
    )
    assert reaches_into_another_part(probe) == ["probe.py:2: bets.excluded", "probe.py:3: bets.spots"]


# Issue 29 item 1 (docs/engine.md "The parts and their doors"): every part is given the few others it
# asks as doors; none is reached through the shared context, the round changes only through its own
# methods, and no engine module imports another in a circle.
_PART_MODULES = (
    "bank",
    "bets",
    "deal",
    "decisions",
    "faults",
    "kills",
    "progressive",
    "settings",
    "settling",
    "shoe_faults",
)


def parts_asked_through_the_context(path: Path) -> list[str]:
    """Each ``ctx.<part>`` in ``path``: another part reached through the shared context."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in _PARTS:
            holder = node.value
            if isinstance(holder, ast.Name) and holder.id == "ctx":
                found.append(f"{path.name}:{node.lineno}: ctx.{node.attr}")
            elif isinstance(holder, ast.Attribute) and holder.attr == "ctx":
                found.append(f"{path.name}:{node.lineno}: self.ctx.{node.attr}")
    return sorted(found)


def test_no_part_is_asked_through_the_context() -> None:
    asked = [
        reach for path in sorted(ENGINE_DIR.glob("*.py")) for reach in parts_asked_through_the_context(path)
    ]
    assert asked == []
    # The context holds no part: only the shared record (and where the round stands, a door).
    context = next(
        node
        for node in ast.parse((ENGINE_DIR / "context.py").read_text()).body
        if isinstance(node, ast.ClassDef) and node.name == "TableContext"
    )
    annotated = {
        item.target.id
        for item in context.body
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
    }
    assert not annotated & _PARTS, annotated


def test_the_context_check_sees_a_part_asked_through_it(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(ctx: object, part: object) -> None:\n    ctx.flow.hold_table()\n    part.ctx.bets\n"
    )
    assert parts_asked_through_the_context(probe) == ["probe.py:2: ctx.flow", "probe.py:3: self.ctx.bets"]


def _round_fields() -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse((ENGINE_DIR / "round.py").read_text()).body:
        if isinstance(node, ast.ClassDef):
            names.update(
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            )
    return frozenset(names)


def _rooted_in_self(node: ast.expr) -> bool:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and node.id == "self"


def round_written_from_outside(path: Path, fields: frozenset[str]) -> list[str]:
    """Each assignment to a field of ``LiveRound``/``SeatPlay``/``DealStep`` (or into one of their
    collections), and each change of one in place (``.add``, ``.append``...), on anything but ``self``."""

    def a_field(node: ast.expr) -> bool:
        if isinstance(node, ast.Subscript):
            node = node.value
        return isinstance(node, ast.Attribute) and node.attr in fields and not _rooted_in_self(node)

    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            found += [f"{path.name}:{node.lineno}: {ast.unparse(t)}" for t in targets if a_field(t)]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in (*_MUTATORS, "extend")
            and a_field(node.func.value)
        ):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node.func)}(...)")
    return found


def test_the_round_changes_only_through_its_own_methods() -> None:
    fields = _round_fields()
    assert {"seats", "deal", "settlement", "status", "completed"} <= fields  # the walk found them
    writes = [
        write
        for path in sorted(ENGINE_DIR.glob("*.py"))
        if path.name != "round.py"
        for write in round_written_from_outside(path, fields)
    ]
    assert writes == []


def test_the_round_check_sees_a_write(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(live: object, play: object) -> None:\n"
        "    live.settlement = None\n"
        "    play.status = 'dead'\n"
        "    live.seen_cards.add(3)\n"
        "    live.deal.completed.add(1)\n"
    )
    assert round_written_from_outside(probe, _round_fields()) == [
        "probe.py:2: live.settlement",
        "probe.py:3: play.status",
        "probe.py:4: live.seen_cards.add(...)",
        "probe.py:5: live.deal.completed.add(...)",
    ]


def engine_import_graph(engine_dir: Path) -> dict[str, set[str]]:
    """Each controller/engine module's imports of its siblings, TYPE_CHECKING blocks included."""
    modules = {path.stem for path in engine_dir.glob("*.py")} - {"__init__"}
    graph: dict[str, set[str]] = {}
    for name in sorted(modules):
        imported: set[str] = set()
        for node in ast.walk(ast.parse((engine_dir / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "controller.engine":
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("controller.engine."):
                imported.add((node.module or "").rsplit(".", 1)[1])
        graph[name] = imported & modules
    return graph


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Each module that reaches itself through its imports."""
    found: list[str] = []
    for start in sorted(graph):
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:  # bounded: each module is visited once
            name = todo.pop()
            if name == start:
                found.append(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(graph[name])
    return found


def test_no_engine_module_imports_another_in_a_circle_and_no_part_imports_a_part() -> None:
    graph = engine_import_graph(ENGINE_DIR)
    assert circles(graph) == []
    assert set(_PART_MODULES) <= set(graph)
    for part in _PART_MODULES:
        assert graph[part] & set(_PART_MODULES) == set(), part


def test_the_circle_check_sees_a_circle(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from controller.engine.b import B\n"
    )
    (tmp_path / "b.py").write_text("from controller.engine import a\n")
    (tmp_path / "c.py").write_text("from controller.engine.b import x\n")
    assert circles(engine_import_graph(tmp_path)) == ["a", "b"]


def unused_doors(engine_dir: Path) -> list[str]:
    """The Protocols of doors.py that no other engine module names and no other door extends."""
    doors_text = (engine_dir / "doors.py").read_text()
    doors = [node for node in ast.parse(doors_text).body if isinstance(node, ast.ClassDef)]
    extended = {base.id for door in doors for base in door.bases if isinstance(base, ast.Name)}
    others = " ".join(path.read_text() for path in engine_dir.glob("*.py") if path.name != "doors.py")
    return [
        door.name
        for door in doors
        if door.name not in extended and not re.search(rf"\b{door.name}\b", others)
    ]


def test_every_door_is_used() -> None:
    """Nothing unused: each door is a part's parameter (or a wider door's base)."""
    assert unused_doors(ENGINE_DIR) == []


def context_written_from_outside(path: Path) -> list[str]:
    """Each assignment to a field of the shared context (``ctx.<field> = ...``, ``self.ctx.<field> += ...``)
    in ``path``: the record changes through its own methods only (``replace_config``, ``lock_round``...)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                holder = target.value if isinstance(target, ast.Attribute) else None
                if (isinstance(holder, ast.Name) and holder.id == "ctx") or (
                    isinstance(holder, ast.Attribute) and holder.attr == "ctx"
                ):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(target)}")
    return found


def test_the_context_changes_only_through_its_own_methods() -> None:
    writes = [
        write
        for path in sorted(ENGINE_DIR.glob("*.py"))
        if path.name != "context.py"
        for write in context_written_from_outside(path)
    ]
    assert writes == []


def test_the_context_check_sees_a_write(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def f(ctx: object, part: object) -> None:\n    ctx.round = None\n    part.ctx.now_s += 1\n"
    )
    assert context_written_from_outside(probe) == ["probe.py:2: ctx.round", "probe.py:3: part.ctx.now_s"]
