"""Plain records: the equality, representation, hash and immutability a dataclass generates, without
the `dataclasses` module (issue 28: `dataclasses` loads `inspect` with `ast`, `dis` and `tokenize`,
about 6.5 ms a start, and each class it makes compiles its methods, about 0.3 ms more).

A record class declares its fields as annotations, in the order its ``__init__`` takes them, lists
them in ``__slots__``, and writes its own ``__init__`` (mypy checks it as any other function). What it
gets from here is what the dataclass it replaces generated, in the same words:

- ``__eq__``: the fields compared as a tuple, with a record of exactly the same class only
  (``NotImplemented`` otherwise), so a mutable record has no hash, as a dataclass's;
- ``__repr__``: ``Name(field=value, ...)``, without the fields named in ``_unshown`` (a dataclass's
  ``field(repr=False)``: a key, a password);
- ``__match_args__``: the fields;
- ``as_dict()``: the fields by name (``dataclasses.asdict`` of a record of plain values);
- ``replace(record, **changes)``: a copy with some fields changed, made by its ``__init__``
  (``dataclasses.replace``);
- pickling and ``copy``: the record made again from its fields by its ``__init__``;
- a frozen record (``FrozenRecord``): no assignment or deletion after ``__init__``
  (``AttributeError: cannot assign to field 'name'``), and a hash of its fields.

A field whose name starts with ``_`` is a cache, not a field: it is not compared, shown or pickled (a
dataclass's ``field(init=False, repr=False, compare=False)``).

Used on the paths of the commands that must start at once (the journal's reader, the rules, the
configuration's checks); a class that needs `dataclasses.fields`, or is converted by msgspec by its
annotations, stays a dataclass (the reducer's records are converted through dataclass twins:
controller/journal/checkpoint.py). Here, at the bottom of the house, so that the drivers' device URLs
can use it too (this module imports nothing but the standard library)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar


def _fields_of(cls: type) -> tuple[str, ...]:
    """The fields in the order the classes declare their annotations, base first (``__slots__`` is
    kept sorted by the linter, so it says which slots exist, not their order)."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        declared = klass.__dict__.get("__annotations__", {})  # noqa: RUF063 - no inspect: the point
        names.extend(name for name in declared if name[0] != "_" and name not in names)
    return tuple(names)


class Record:
    """A mutable record (a ``@dataclass(slots=True)``'s generated methods)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    # Fields left out of the repr (a dataclass's ``field(repr=False)``: a key, a password).
    _unshown: ClassVar[frozenset[str]] = frozenset()
    _shown: ClassVar[tuple[str, ...]] = ()
    __hash__: ClassVar[None]  # type: ignore[assignment]  # mutable: no hash, as a dataclass's

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._fields = _fields_of(cls)
        cls._shown = tuple(name for name in cls._fields if name not in cls._unshown)
        # pattern matching's positional order, as a dataclass sets it (set here, not declared: mypy
        # reads a declared __match_args__ as the class's own).
        setattr(cls, "__match_args__", cls._fields)  # noqa: B010

    def _set_fields(self, values: Mapping[str, Any]) -> None:
        """Each field from ``values``, an ``__init__``'s ``locals()`` (as a dataclass's ``__init__``
        sets them, frozen or not): for a record of many fields built a few times a start."""
        for name in self._fields:
            object.__setattr__(self, name, values[name])

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
        return f"{type(self).__qualname__}({shown})"

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, in order; the values themselves (``dataclasses.asdict`` copied them
        deeply: a record of plain values reads the same either way)."""
        return {name: getattr(self, name) for name in self._fields}

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return type(self), self._values()


class FrozenRecord(Record):
    """A record that cannot change after its ``__init__`` (a ``@dataclass(frozen=True, slots=True)``'s
    generated methods). Its ``__init__`` sets each field with ``object.__setattr__``, as a frozen
    dataclass's does; a cache slot (``_name``) is set the same way."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]  # frozen: hashable, as a frozen dataclass
        return hash(self._values())


_R = TypeVar("_R", bound=Record)


def field_names(cls: type) -> tuple[str, ...]:
    """The fields of a record class, or of a dataclass, in their declared order: the readers that take
    either (the configuration's records are records, the floor's service settings a dataclass) ask here.
    ``dataclasses`` is imported only for a dataclass, so a record's path never loads it."""
    if issubclass(cls, Record):
        return cls._fields
    import dataclasses  # noqa: PLC0415 - only a dataclass's reader pays for it

    return tuple(field.name for field in dataclasses.fields(cls))  # type: ignore[arg-type]


def fields_dict(record: object, **given: Any) -> dict[str, Any]:
    """The fields of a record or a dataclass by name, in their declared order, each field named in
    ``given`` with that value instead (its JSON form, say): a ``to_json`` that is its fields but for a
    few. The values themselves, not copies (``dataclasses.asdict`` copies deeply and turns a nested
    dataclass into its fields, not into its own ``to_json``). A name in ``given`` that is no field is
    refused (``TypeError``, as ``dataclasses.replace`` refuses one): dropped, the raw field would take
    its place, objects where its JSON was meant."""
    names = field_names(type(record))
    unknown = [name for name in given if name not in names]
    if unknown:
        raise TypeError(f"{type(record).__qualname__} has no field {unknown[0]!r}")
    return {name: given[name] if name in given else getattr(record, name) for name in names}


def replace(record: _R, **changes: Any) -> _R:
    """A copy of ``record`` with ``changes``, made by its class's ``__init__`` (``dataclasses.replace``:
    an unknown name is refused by that ``__init__``, a cache is made anew)."""
    return type(record)(**{**record.as_dict(), **changes})
