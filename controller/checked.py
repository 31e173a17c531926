"""Checked models: the part of pydantic v2's model API the configuration's sections use, in plain Python.

Issue 28: `flushtable config` (and `run`'s start) paid ~75% of its CPU for importing pydantic and
building its validators, for a file of a few dozen keys read once. This module keeps the sections'
declarations as they were (annotated fields, ``Annotated[T, BeforeValidator(check)]``, ``Field(...)``
defaults, ``field_validator`` and ``model_validator(mode="after")``) and checks them the same way:

- a model refuses unknown keys and, unless ``ConfigDict(strict=False)``, never coerces (a float where an
  integer goes, a string where a boolean goes);
- fields are checked in their declared order, every problem recorded (not only the first), each as a
  dict shaped like pydantic's ``ValidationError.errors()`` items (``type``, ``loc``, ``msg``, ``input``,
  ``ctx``), field problems before the model's unknown keys; so controller/settings.py's ``one_line``
  words them exactly as before;
- a model's after-validators run only when all its fields are valid; an exception that is not a
  ``Refusal``, ValueError or AssertionError (controller/settings.py's ``KeyRefusal``) leaves at once.

What it does not have (none of the sections needs it): aliases, serialisation, JSON schema, ``Field``
constraints (``ge``, ``max_length``...), unions of several non-None types beyond "the first that fits".
The panel's request bodies stay pydantic models (FastAPI's own); they are never loaded by `config`,
`recall` or the start of `run --no-panel` (tests/cli/test_cli_import_budget.py).
"""

from __future__ import annotations

import enum
import functools
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypedDict, dataclass_transform

from table_names.records import FrozenRecord

REFUSED = "refused"  # the error type of a Refusal: its message is already in our words


class Refusal(Exception):
    """A refusal raised inside a validator, in the caller's words: recorded at the field being checked
    (as pydantic's ``PydanticCustomError``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ValidationError(Exception):
    """Every problem found, as pydantic's ``ValidationError`` lists them (``errors()``)."""

    def __init__(self, title: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(f"{len(errors)} validation error(s) for {title}")
        self.title = title
        self._errors = errors

    def errors(self, *, include_url: bool = False) -> list[dict[str, Any]]:
        del include_url  # no documentation links to leave out
        return list(self._errors)


class BeforeValidator(FrozenRecord):
    """``Annotated[T, BeforeValidator(check)]``: ``check(value)`` runs first; what it returns is checked
    as a ``T``."""

    __slots__ = ("func",)
    func: Callable[[Any], Any]

    def __init__(self, func: Callable[[Any], Any]) -> None:
        object.__setattr__(self, "func", func)


class ConfigDict(TypedDict, total=False):
    strict: bool
    extra: str  # always "forbid": the only behaviour there is
    frozen: bool  # always True
    arbitrary_types_allowed: bool  # always: an arbitrary class is checked by isinstance


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()


class FieldInfo:
    """One field's default and how to make it, as pydantic's ``model_fields`` values; ``annotation`` is
    the field's type, resolved when first asked."""

    __slots__ = ("default", "default_factory", "name", "owner", "validate_default", "written")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Callable[[], Any] | None = None,
        validate_default: bool = False,
    ) -> None:
        self.default = default
        self.default_factory = default_factory
        self.validate_default = validate_default
        self.name = ""
        self.owner: type[Model] | None = None
        self.written: Any = None  # the annotation as the class body wrote it (a string, usually)

    @property
    def annotation(self) -> Any:
        assert self.owner is not None  # set when the class that declares it is made
        return self.owner.hints()[self.name]

    def is_required(self) -> bool:
        return self.default is MISSING and self.default_factory is None


def Field(
    default: Any = MISSING,
    *,
    default_factory: Callable[[], Any] | None = None,
    validate_default: bool = False,
) -> Any:
    """A field's default (or the function that makes one, for a mutable default)."""
    return FieldInfo(default, default_factory, validate_default)


class _FieldValidator:
    __slots__ = ("fields", "func")

    def __init__(self, fields: tuple[str, ...], func: Callable[..., Any]) -> None:
        self.fields = fields
        self.func = func


class _ModelValidator:
    __slots__ = ("func",)

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func


def field_validator(*fields: str, mode: str = "after") -> Callable[[Any], Any]:
    """``@field_validator("name") @classmethod def check(cls, value)``: runs once the field's own type
    is checked; what it returns is the field's value."""
    if mode != "after":
        raise ValueError(f"only 'after' field validators are supported, not {mode!r}")

    def wrap(method: Any) -> Any:
        func = method.__func__ if isinstance(method, classmethod) else method
        return _FieldValidator(fields, func)

    return wrap


def model_validator(*, mode: str) -> Callable[[Callable[..., Any]], Any]:
    """``@model_validator(mode="after") def check(self)``: runs once every field is valid."""
    if mode != "after":
        raise ValueError(f"only 'after' model validators are supported, not {mode!r}")

    def wrap(func: Callable[..., Any]) -> Any:
        return _ModelValidator(func)

    return wrap


_BAD: Any = object()  # a value that failed its check (its problem recorded)
_Loc = tuple[int | str, ...]


def _error(errors: list[dict[str, Any]], kind: str, loc: _Loc, value: object, msg: str, **ctx: Any) -> Any:
    item: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx:
        item["ctx"] = ctx
    errors.append(item)
    return _BAD


def _is_classvar(annotation: object) -> bool:
    if isinstance(annotation, str):  # `from __future__ import annotations`: still a string here
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    return typing.get_origin(annotation) is ClassVar or annotation is ClassVar


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(Field, FieldInfo))
class Model:
    """A frozen, checked record: ``Model.model_validate(mapping)`` or ``Model(**fields)``."""

    model_config: ClassVar[ConfigDict] = ConfigDict(strict=True)
    model_fields: ClassVar[dict[str, FieldInfo]] = {}
    # Per class, made when the class is: the after-validators of each field and of the model.
    _field_checks: ClassVar[dict[str, list[Callable[..., Any]]]] = {}
    _model_checks: ClassVar[list[Callable[..., Any]]] = []
    _hints: ClassVar[dict[str, Any] | None] = None
    __slots__ = ("__dict__", "_fields_given")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: dict[str, FieldInfo] = {}
        field_checks: dict[str, list[Callable[..., Any]]] = {}
        model_checks: list[Callable[..., Any]] = []
        for klass in reversed(cls.__mro__):  # the bases' fields first, as pydantic orders them
            if not (isinstance(klass, type) and issubclass(klass, Model)) or klass is Model:
                continue
            if klass is not cls:
                fields.update(klass.model_fields)
                for name, checks in klass._field_checks.items():
                    field_checks.setdefault(name, []).extend(checks)
                model_checks.extend(klass._model_checks)
                continue
            # This class's own annotations (inspect.get_annotations would import inspect: ~5 ms a start).
            own = klass.__dict__.get("__annotations__", {})  # noqa: RUF063
            for name, annotation in own.items():
                if _is_classvar(annotation):
                    continue
                given = klass.__dict__.get(name, MISSING)
                info = given if isinstance(given, FieldInfo) else FieldInfo(given)
                if isinstance(given, FieldInfo):
                    delattr(cls, name)  # the instance's value, not the FieldInfo, is read
                info.name, info.owner, info.written = name, cls, annotation
                fields[name] = info
            for attribute in list(klass.__dict__.values()):
                if isinstance(attribute, _FieldValidator):
                    for name in attribute.fields:
                        field_checks.setdefault(name, []).append(attribute.func)
                elif isinstance(attribute, _ModelValidator):
                    model_checks.append(attribute.func)
        cls.model_fields = fields
        cls._field_checks = field_checks
        cls._model_checks = model_checks
        cls._hints = None

    @classmethod
    def hints(cls) -> dict[str, Any]:
        """The fields' types, ``Annotated`` kept, resolved on first use (the annotations are strings).
        Each field's in its declaring class's module, and only the fields' (typing.get_type_hints would
        evaluate every ClassVar of every base too: half the work, at every start that checks a file)."""
        hints = cls.__dict__.get("_hints")
        if hints is None:
            hints = {}
            for name, info in cls.model_fields.items():
                owner = info.owner
                assert owner is not None  # set when the declaring class is made
                annotation = info.written
                if isinstance(annotation, str):  # our own source's annotation, in its module's names
                    annotation = eval(annotation, vars(sys.modules[owner.__module__]))
                hints[name] = annotation
            cls._hints = hints
        return typing.cast(dict[str, Any], hints)

    def __init__(self, **data: Any) -> None:
        checked = type(self).model_validate(data)
        object.__setattr__(self, "__dict__", checked.__dict__)
        object.__setattr__(self, "_fields_given", checked.model_fields_set)

    @classmethod
    def model_validate(cls, data: object) -> typing.Self:
        """The checked model, or ValidationError listing every problem (pydantic's ``model_validate``)."""
        errors: list[dict[str, Any]] = []
        made = _check(cls, data, (), errors, strict=cls.model_config.get("strict", True))
        if errors:
            raise ValidationError(cls.__name__, errors)
        return typing.cast(typing.Self, made)

    @classmethod
    def _from_mapping(cls, data: Mapping[str, Any], loc: _Loc, errors: list[dict[str, Any]]) -> Any:  # noqa: PLR0912 - one branch per step of pydantic's model order
        strict = cls.model_config.get("strict", True)
        # The annotations are resolved only for a field given (or a default to check): a section left
        # out of the file, or a default instance made at import, resolves none (as pydantic, defaults
        # are not checked unless validate_default).
        values: dict[str, Any] = {}
        given: set[str] = set()
        found = len(errors)
        for name, info in cls.model_fields.items():
            where = (*loc, name)
            checking = name in data or info.validate_default  # a default is trusted, as pydantic's
            if name in data:
                given.add(name)
                value = _check(cls.hints()[name], data[name], where, errors, strict=strict)
            elif info.default_factory is not None:
                value = info.default_factory()
            elif info.default is not MISSING:
                value = info.default
                if info.validate_default:
                    value = _check(cls.hints()[name], value, where, errors, strict=strict)
            else:
                value = _error(errors, "missing", where, data, "Field required")
            if value is not _BAD and checking:
                for check in cls._field_checks.get(name, ()):
                    value = _call(functools.partial(check, cls), value, where, errors)
                    if value is _BAD:
                        break
            values[name] = value
        for key, value in data.items():
            if key not in cls.model_fields:
                _error(errors, "extra_forbidden", (*loc, key), value, "Extra inputs are not permitted")
        if len(errors) > found:
            return _BAD
        made = object.__new__(cls)
        object.__setattr__(made, "__dict__", values)
        object.__setattr__(made, "_fields_given", given)
        for check in cls._model_checks:
            made = _call(check, made, loc, errors)
            if made is _BAD:
                return _BAD
        return made

    @property
    def model_fields_set(self) -> set[str]:
        """The fields the input gave (not defaulted)."""
        given: set[str] = object.__getattribute__(self, "_fields_given")
        return given

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: {name} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: {name} cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{type(self).__name__}({shown})"

    def model_dump(self) -> dict[str, Any]:
        """The fields as plain values (nested models as dicts)."""
        return {name: _dumped(value) for name, value in self.__dict__.items()}


def _dumped(value: Any) -> Any:
    if isinstance(value, Model):
        return value.model_dump()
    if isinstance(value, dict):
        return {key: _dumped(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_dumped(item) for item in value)
    return value


def _call(check: Callable[[Any], Any], value: Any, loc: _Loc, errors: list[dict[str, Any]]) -> Any:
    """A validator's result, or its refusal recorded at ``loc`` (other exceptions leave as they are)."""
    try:
        return check(value)
    except Refusal as refused:
        return _error(errors, REFUSED, loc, value, refused.reason, reason=refused.reason)
    except ValueError as error:
        return _error(errors, "value_error", loc, value, f"Value error, {error}", error=error)
    except AssertionError as error:
        return _error(errors, "assertion_error", loc, value, f"Assertion failed, {error}", error=error)


_UNION_TYPES = (typing.Union, types.UnionType)
_LAX_TRUE = frozenset(("1", "on", "t", "true", "y", "yes"))
_LAX_FALSE = frozenset(("0", "off", "f", "false", "n", "no"))


def _check(annotation: Any, value: Any, loc: _Loc, errors: list[dict[str, Any]], *, strict: bool) -> Any:  # noqa: PLR0912 - one branch per annotation form
    """``value`` checked as an ``annotation``: the value (converted where pydantic converts it) or _BAD
    with its problems recorded in ``errors``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *metadata = typing.get_args(annotation)
        for item in reversed(metadata):  # pydantic runs the last-written before-validator first
            if isinstance(item, BeforeValidator):
                value = _call(item.func, value, loc, errors)
                if value is _BAD:
                    return _BAD
        return _check(inner, value, loc, errors, strict=strict)
    if origin in _UNION_TYPES:
        choices = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if value is None and len(choices) < len(typing.get_args(annotation)):
            return None
        if len(choices) == 1:
            return _check(choices[0], value, loc, errors, strict=strict)
        tried: list[dict[str, Any]] = []
        for choice in choices:  # the first that fits (the sections' unions are all "T | None")
            attempt: list[dict[str, Any]] = []
            made = _check(choice, value, loc, attempt, strict=strict)
            if not attempt:
                return made
            tried.extend(attempt)
        errors.extend(tried)
        return _BAD
    if annotation is Any or annotation is object:
        return value
    if origin is typing.Literal:
        allowed = typing.get_args(annotation)
        if any(value == choice and type(value) is type(choice) for choice in allowed):
            return value
        expected = " or ".join(repr(choice) for choice in allowed)
        return _error(errors, "literal_error", loc, value, f"Input should be {expected}", expected=expected)
    if origin is list:
        if not isinstance(value, list) and (strict or not isinstance(value, tuple | set | frozenset)):
            return _error(errors, "list_type", loc, value, "Input should be a valid list")
        (item_type,) = typing.get_args(annotation) or (Any,)
        items = [_check(item_type, item, (*loc, i), errors, strict=strict) for i, item in enumerate(value)]
        return _BAD if _BAD in items else items
    if origin is tuple:
        if not isinstance(value, tuple) and (strict or not isinstance(value, list)):
            return _error(errors, "tuple_type", loc, value, "Input should be a valid tuple")
        args = typing.get_args(annotation)
        if len(args) == 2 and args[1] is Ellipsis:
            item_types = [args[0]] * len(value)
        else:
            item_types = list(args)
            if len(item_types) != len(value):
                return _error(errors, "tuple_type", loc, value, f"Tuple should have {len(args)} items")
        items = [
            _check(kind, item, (*loc, i), errors, strict=strict)
            for i, (kind, item) in enumerate(zip(item_types, value, strict=True))
        ]
        return _BAD if _BAD in items else tuple(items)
    if origin is dict:
        if not isinstance(value, dict) and (strict or not isinstance(value, Mapping)):
            return _error(errors, "dict_type", loc, value, "Input should be a valid dictionary")
        key_type, value_type = typing.get_args(annotation) or (Any, Any)
        checked: dict[Any, Any] = {}
        bad = False
        for key, item in value.items():
            made_key = _check(key_type, key, (*loc, key, "[key]"), errors, strict=strict)
            made_item = _check(value_type, item, (*loc, key), errors, strict=strict)
            bad = bad or made_key is _BAD or made_item is _BAD
            checked[made_key] = made_item
        return _BAD if bad else checked
    if isinstance(annotation, type):
        return _check_class(annotation, value, loc, errors, strict=strict)
    raise TypeError(f"controller.checked cannot check a {annotation!r}")


# pydantic's error types and messages for the two numbers (what readers of the errors match).
_NUMBER_WORDS: dict[type, tuple[str, str]] = {
    int: ("int", "Input should be a valid integer"),
    float: ("float", "Input should be a valid number"),
}


def _check_number(
    kind: type[int] | type[float], value: Any, loc: _Loc, errors: list[dict[str, Any]], *, strict: bool
) -> Any:
    """An int or a float by pydantic's rules. Strict: the type itself (an int for a float too), never a
    bool. Lax, also: a bool, a string of the number, and for an int a float with no fraction."""
    name, message = _NUMBER_WORDS[kind]
    if isinstance(value, int if kind is int else float | int) and not isinstance(value, bool):
        return value if kind is int else float(value)
    if not strict:
        if isinstance(value, bool):
            return kind(value)
        if isinstance(value, float):  # only an int gets here with a float (a float took it above)
            if value.is_integer():
                return int(value)
            return _error(errors, "int_from_float", loc, value, message)
        if isinstance(value, str):
            try:
                return kind(value.strip())
            except ValueError:
                return _error(errors, f"{name}_parsing", loc, value, message)
    return _error(errors, f"{name}_type", loc, value, message)


def _check_class(kind: type, value: Any, loc: _Loc, errors: list[dict[str, Any]], *, strict: bool) -> Any:  # noqa: PLR0912 - one branch per scalar type's strict rule
    if issubclass(kind, Model):
        if isinstance(value, kind):
            return value
        if isinstance(value, dict) or (not strict and isinstance(value, Mapping)):
            return kind._from_mapping(value, loc, errors)
        return _error(
            errors,
            "model_type",
            loc,
            value,
            f"Input should be a valid dictionary or instance of {kind.__name__}",
        )
    if kind is bool:
        if isinstance(value, bool):
            return value
        if not strict:
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.lower() in _LAX_TRUE | _LAX_FALSE:
                return value.lower() in _LAX_TRUE
        return _error(errors, "bool_type", loc, value, "Input should be a valid boolean")
    if kind is int or kind is float:
        return _check_number(kind, value, loc, errors, strict=strict)
    if kind is str:
        if isinstance(value, str):
            return value
        return _error(errors, "string_type", loc, value, "Input should be a valid string")
    if issubclass(kind, enum.Enum):
        if isinstance(value, kind):
            return value
        if not strict:
            try:
                return kind(value)
            except ValueError:
                pass
        expected = " or ".join(repr(member.value) for member in kind)
        return _error(errors, "enum", loc, value, f"Input should be {expected}", expected=expected)
    if isinstance(value, kind):
        return value
    return _error(
        errors,
        "is_instance_of",
        loc,
        value,
        f"Input should be an instance of {kind.__name__}",
        class_=kind.__name__,
    )


__all__ = [
    "MISSING",
    "REFUSED",
    "BeforeValidator",
    "ConfigDict",
    "Field",
    "FieldInfo",
    "Model",
    "Refusal",
    "ValidationError",
    "field_validator",
    "model_validator",
]
