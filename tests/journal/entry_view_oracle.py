"""The field tables of controller/journal/entry_view.py, derived from the typed entries' classes
(controller/journal/entries/) by msgspec's own inspection: what tests/journal/test_entry_view.py holds
the written-out tables to, so the view reads every kind's fields by the same names, with the same
defaults and the same types as the typed entry does.

``python -m tests.journal.entry_view_oracle`` prints the tables as entry_view.py writes them (after a
change to an entry's class: paste, then `ruff format`)."""

from __future__ import annotations

from typing import Any

import msgspec
import msgspec.inspect as mi

from controller.journal import entries as e
from controller.journal.entry_view import REASON_TYPE

# The kinds read through their typed entry only (never a view): the Progressive's meter model and the
# two-person changes' fold take the typed classes (controller/progressive/model.py, proposals.py), and a
# claimed award's amounts may be floats (a JSON integer is a float there, which the view would not make).
TYPED_ONLY_KINDS = frozenset(kind for kind in e.KINDS if kind.startswith(("progressive_", "change_")))


def type_spec(info: Any) -> Any:
    """A field's type as entry_view.py's tables spell it."""
    name = type(info).__name__
    simple = {
        "IntType": "int",
        "StrType": "str",
        "BoolType": "bool",
        "NoneType": "none",
        "AnyType": "any",
    }
    if name in simple:
        return simple[name]
    if name == "LiteralType":
        return ("lit", *sorted(info.values))
    if name == "ListType":
        return ("list", type_spec(info.item_type))
    if name == "DictType":
        return ("dict", type_spec(info.key_type), type_spec(info.value_type))
    if name == "UnionType":
        return ("union", *(type_spec(t) for t in info.types))
    if name == "StructType":
        if info.cls is e.Reason:
            return REASON_TYPE
        return ("part", info.cls.__name__)
    raise ValueError(f"no view of a field of type {name}")


def _fields(cls: type[Any]) -> tuple[tuple[str, str, Any, bool, Any], ...]:
    rows = []
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType), cls
    for field in info.fields:
        default = None if field.default is msgspec.NODEFAULT else field.default
        assert field.default_factory is msgspec.NODEFAULT, f"{cls.__name__}.{field.name}: a default factory"
        rows.append((field.name, field.encode_name, type_spec(field.type), field.required, default))
    return tuple(rows)


def kind_fields() -> dict[str, tuple[tuple[str, str, Any, bool, Any], ...]]:
    """kind -> its public fields (the private part's field ``private`` with the part's type), for every
    kind read through a view."""
    return {kind: _fields(e.CLASS_BY_KIND[kind]) for kind in sorted(e.KINDS - TYPED_ONLY_KINDS)}


def part_fields() -> dict[str, tuple[tuple[str, str, Any, bool, Any], ...]]:
    """A private part's class name -> its fields, for every part of a kind read through a view."""
    parts = {
        cls.PRIVATE
        for kind, cls in e.CLASS_BY_KIND.items()
        if kind not in TYPED_ONLY_KINDS and cls.PRIVATE is not None
    }
    return {part.__name__: _fields(part) for part in sorted(parts, key=lambda p: p.__name__)}


def reason_fields() -> tuple[tuple[str, str, Any, bool, Any], ...]:
    return _fields(e.Reason)


if __name__ == "__main__":
    print("KIND_FIELDS: dict[str, Fields] = " + repr(kind_fields()))
    print("PART_FIELDS: dict[str, Fields] = " + repr(part_fields()))
    print("REASON_FIELDS: Fields = " + repr(reason_fields()))
