"""The plain records (table_names/records.py) behave as the dataclasses they replaced (issue 28: the fast
commands load no `dataclasses`): each record class of the product is held to a dataclass with the same
fields, defaults and frozenness, made here by `dataclasses` itself, on the same values: the same repr,
equality, hash (or none), pattern-matching order, pickling, copying, refusal to change a frozen field
(in the same words) and replace."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from table_names import records
from table_names.records import FrozenRecord, Record

# Every module that makes records (a new one is found by the check below that they are all listed).
MODULES = (
    "controller.money",
    "controller.locale",
    "controller.rules.catalogue",
    "controller.rules.round_input",
    "controller.rules.settlement",
    "controller.rules.settle",
    "controller.journal.rows",
    "controller.journal.totals",
    "controller.journal.state_parts",
    "controller.config.resolved",
    "controller.config.sections",
    "controller.checked",
    "drivers.urls",
)


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def record_classes() -> list[type[Record]]:
    for name in MODULES:
        importlib.import_module(name)
    return [cls for cls in _subclasses(Record) if cls is not FrozenRecord and cls.__module__ in MODULES]


def _twin(record: type[Record]) -> Any:
    """The dataclass this record stands for: its fields, its ``__init__``'s defaults, frozen or not, the
    fields it leaves out of its repr (a key, a password) with ``repr=False``."""
    parameters = inspect.signature(record.__init__).parameters
    fields: list[Any] = []
    for name in record._fields:
        default = parameters[name].default
        shown = name not in record._unshown
        if default is inspect.Parameter.empty:
            fields.append((name, Any, dataclasses.field(repr=shown)))
        else:
            fields.append((name, Any, dataclasses.field(default=default, repr=shown)))
    twin = dataclasses.make_dataclass(
        record.__name__, fields, frozen=issubclass(record, FrozenRecord), slots=True
    )
    twin.__qualname__ = record.__qualname__
    return twin


def _values(record: type[Record], salt: str) -> dict[str, Any]:
    """Values for the required fields (and a few with defaults), of kinds that compare and hash."""
    parameters = inspect.signature(record.__init__).parameters
    values: dict[str, Any] = {}
    for index, name in enumerate(record._fields):
        if parameters[name].default is inspect.Parameter.empty:
            values[name] = (f"{salt}{index}", index)
    return values


def _outcome(again: Callable[[Any], object], value: object) -> object:
    """Whether ``value`` made again is equal to it, or how making it again was refused."""
    try:
        return again(value) == value
    except Exception as refused:
        return f"{type(refused).__name__}: {refused}"


def _hash_or_refusal(value: object) -> int | str:
    try:
        return hash(value)
    except TypeError as refused:  # a frozen record holding a dict: unhashable, as its dataclass
        return str(refused)


def test_every_record_class_is_held_here() -> None:
    found = {cls.__module__ for cls in _subclasses(Record) if cls is not FrozenRecord}
    assert found - set(MODULES) - {__name__} == set()
    assert len(record_classes()) >= 30


@pytest.mark.parametrize("record", record_classes(), ids=lambda cls: f"{cls.__module__}.{cls.__name__}")
def test_a_record_behaves_as_its_dataclass(record: type[Record]) -> None:
    twin = _twin(record)
    values, other_values = _values(record, "a"), _values(record, "b")
    made, same = record(**values), record(**values)
    # The twin is given every value the record holds (a record makes a field's default from its factory
    # where the twin's default is None: the defaults are held by the byte-for-byte comparison of the
    # commands' outputs, bench/compare_cli_outputs.py).
    twin_made = twin(**made.as_dict())
    assert repr(made) == repr(twin_made)
    assert getattr(record, "__match_args__", None) == twin.__match_args__
    assert made == same
    fields = dataclasses.fields(twin_made)
    assert list(made.as_dict().items()) == [(field.name, getattr(twin_made, field.name)) for field in fields]
    other = record(**other_values)
    if other_values != values:
        assert made != other
        assert (twin_made == twin(**other.as_dict())) is False
    assert made.__eq__(twin_made) is NotImplemented  # another class is never equal, as a dataclass's
    frozen = issubclass(record, FrozenRecord)
    assert (record.__hash__ is None) is (twin.__hash__ is None) is (not frozen)
    if frozen:
        assert _hash_or_refusal(made) == _hash_or_refusal(twin_made)
    # Pickled and copied whole, as far as its values are (a value that cannot be pickled, one of the
    # configuration's checked sections, refuses the record as it refused the dataclass).
    for again in (lambda value: pickle.loads(pickle.dumps(value)), copy.copy, copy.deepcopy):
        assert _outcome(again, made) == _outcome(again, made.as_dict())
    first = record._fields[0]
    if frozen:
        with pytest.raises(AttributeError) as refused:
            setattr(made, first, "x")
        with pytest.raises(dataclasses.FrozenInstanceError) as twin_refused:
            setattr(twin_made, first, "x")
        assert str(refused.value) == str(twin_refused.value)
    changes = {first: getattr(other, first)}
    assert repr(records.replace(made, **changes)) == repr(dataclasses.replace(twin_made, **changes))


def test_a_secret_is_never_in_a_repr() -> None:
    from controller.config import load_config

    config = load_config(None)
    assert "key=" not in repr(config.devices)
    assert "secret" not in repr(records.replace(config, journal_anchor_key=b"secret"))


def test_a_record_of_a_subclass_has_its_base_fields_first_and_its_own_class() -> None:
    from controller.journal.state_parts import Meters, MetersBeforeProgressiveNet

    assert MetersBeforeProgressiveNet._fields == Meters._fields
    assert Meters() != MetersBeforeProgressiveNet()
    assert repr(MetersBeforeProgressiveNet()).startswith("MetersBeforeProgressiveNet(rounds_started=0, ")


def test_fields_dict_gives_a_record_s_or_a_dataclass_s_fields_in_order_the_given_ones_replaced() -> None:
    from controller.progressive.controller import ClaimAnswer
    from controller.rules.settlement import RakeLine

    line = RakeLine(3, 25, designated_player=True)
    assert (
        records.fields_dict(line)
        == line.as_dict()
        == {"seat": 3, "amount_cents": 25, "designated_player": True}
    )
    answer = ClaimAnswer("T1", "R1", (), replayed=True)
    shown = records.fields_dict(answer, awards=["as JSON"])
    # The given value in its field's place, the others themselves (not copies, as dataclasses.asdict).
    assert list(shown.items()) == [
        ("table_id", "T1"),
        ("round_id", "R1"),
        ("awards", ["as JSON"]),
        ("replayed", True),
    ]
    assert records.fields_dict(answer)["awards"] is answer.awards


def test_fields_dict_refuses_a_given_name_that_is_no_field_as_dataclasses_replace_does() -> None:
    """A misspelled name in ``given`` would be dropped and the raw field used (its objects, not their
    JSON, in a to_json): refused instead, a TypeError naming it, as ``dataclasses.replace`` refuses one."""
    from controller.progressive.controller import ClaimAnswer
    from controller.rules.settlement import RakeLine

    answer = ClaimAnswer("T1", "R1", (), replayed=True)
    misspelled: dict[str, Any] = {"award": ["as JSON"]}
    with pytest.raises(TypeError, match="ClaimAnswer has no field 'award'"):
        records.fields_dict(answer, **misspelled)
    with pytest.raises(TypeError, match="RakeLine has no field 'cents'"):
        records.fields_dict(RakeLine(3, 25, designated_player=True), seat=3, cents=25)
    with pytest.raises(TypeError):  # the refusal it matches, for a dataclass
        dataclasses.replace(answer, **misspelled)
