"""controller/checked.py against pydantic itself (still installed: the panel's request bodies use it).

The configuration's sections moved from pydantic's models to controller/checked.py's (issue 28: `config`
loads no pydantic) with their declarations unchanged; tests/config holds the refusals' words. Here the
same declarations, made once with each library, read the same generated inputs: each input is accepted
by both with the same values, or refused by both with the same problems (kind and key, in the same
order), which is what controller.settings.one_line words a refusal from."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_core import PydanticCustomError

from controller import checked
from controller.settings import KeyRefusal, one_line


def _positive(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("must be a whole number of at least 1")
    return value


def _word(value: object) -> object:
    if not isinstance(value, str) or not value.isalpha():
        raise checked.Refusal("a word of letters")
    return value.lower()


def _word_pydantic(value: object) -> object:
    try:
        return _word(value)
    except checked.Refusal as refused:
        raise PydanticCustomError(checked.REFUSED, "{reason}", {"reason": refused.reason}) from None


class CheckedInner(checked.Model):
    model_config = checked.ConfigDict(strict=True)
    a: int
    b: str = "x"

    @checked.model_validator(mode="after")
    def _small(self) -> CheckedInner:
        if self.a > 3:
            raise KeyRefusal("inner.a", "more than 3")
        return self


class CheckedOuter(checked.Model):
    model_config = checked.ConfigDict(strict=True)
    missing_hints: ClassVar[dict[str, str]] = {"n": "a number"}
    n: int
    f: float = 1.0
    flag: bool = False
    s: str | None = None
    items: list[int] = checked.Field(default_factory=list)
    table: dict[str, int] = checked.Field(default_factory=dict)
    inner: CheckedInner | None = None
    choice: Literal["a", "b"] = "a"
    count: Annotated[int, checked.BeforeValidator(_positive)] = 1
    word: Annotated[str, checked.BeforeValidator(_word)] | None = None

    @checked.field_validator("s")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise checked.Refusal("blank")
        return value


class PydanticInner(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)
    a: int
    b: str = "x"

    @pydantic.model_validator(mode="after")
    def _small(self) -> PydanticInner:
        if self.a > 3:
            raise KeyRefusal("inner.a", "more than 3")
        return self


class PydanticOuter(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)
    n: int
    f: float = 1.0
    flag: bool = False
    s: str | None = None
    items: list[int] = pydantic.Field(default_factory=list)
    table: dict[str, int] = pydantic.Field(default_factory=dict)
    inner: PydanticInner | None = None
    choice: Literal["a", "b"] = "a"
    count: Annotated[int, pydantic.BeforeValidator(_positive)] = 1
    word: Annotated[str, pydantic.BeforeValidator(_word_pydantic)] | None = None

    @pydantic.field_validator("s")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise PydanticCustomError(checked.REFUSED, "{reason}", {"reason": "blank"})
        return value


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 5),
    st.floats(-2, 5, allow_nan=False, width=32),
    st.sampled_from(["", " ", "a", "b", "Ok", "x1"]),
    st.lists(st.one_of(st.integers(-2, 2), st.sampled_from(["1", 1.5])), max_size=3),
    st.dictionaries(st.sampled_from(["k", "l"]), st.one_of(st.integers(0, 2), st.just("2")), max_size=2),
)
_INNER = st.dictionaries(st.sampled_from(["a", "b", "c"]), _SCALARS, max_size=3)
_KEYS = [*CheckedOuter.model_fields, "extra", "flg"]
_INPUTS = st.dictionaries(st.sampled_from(_KEYS), st.one_of(_SCALARS, _INNER), max_size=6)


def _read(model: Any, data: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", model.model_validate(data).model_dump()
    except (pydantic.ValidationError, checked.ValidationError) as error:
        problems = [(item["type"], tuple(item["loc"])) for item in error.errors(include_url=False)]
        refusals = [
            item["ctx"]["reason"] for item in error.errors(include_url=False) if item["type"] == "refused"
        ]
        return "refused", (problems, refusals)
    except KeyRefusal as refused:
        return "key refusal", (refused.key, refused.reason)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_INPUTS)
def test_the_checked_models_read_every_input_as_pydantic_does(data: dict[str, Any]) -> None:
    assert _read(CheckedOuter, data) == _read(PydanticOuter, data)


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({}, ("n", "missing (a number)")),
        ({"n": 1, "flg": True}, ("flg", "unknown key (did you mean 'flag'?)")),
        ({"n": 1.5}, ("n", "must be a whole number, not a float 1.5")),
        ({"n": 1, "flag": 1}, ("flag", "must be true or false, not an integer")),
        ({"n": 1, "inner": 3}, ("inner", "must be a table, not an integer")),
        ({"n": 1, "items": [1, "2"]}, ("items[1]", "must be a whole number, not a string '2'")),
        ({"n": 1, "word": "x1"}, ("word", "a word of letters")),
        ({"n": 1, "s": " "}, ("s", "blank")),
    ],
)
def test_one_line_words_a_checked_refusal(data: dict[str, Any], line: tuple[str, str]) -> None:
    with pytest.raises(checked.ValidationError) as refused:
        CheckedOuter.model_validate(data)
    assert one_line(refused.value, CheckedOuter) == line


def test_a_checked_model_is_frozen_and_compares_by_value() -> None:
    first = CheckedOuter(n=2, inner=CheckedInner(a=1))
    assert first == CheckedOuter.model_validate({"n": 2, "inner": {"a": 1}})
    assert first.model_fields_set == {"n", "inner"}
    with pytest.raises(AttributeError):
        first.n = 3  # type: ignore[misc]
