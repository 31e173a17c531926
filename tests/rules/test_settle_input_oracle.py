"""The plain reader of the settle input (controller/rules/settle.py, issue 28: the rules import no
pydantic) against the pydantic models it replaced (tests/rules/settle_input_reference.py): on generated
inputs, good rounds with fields changed, deleted, added, nulled or retyped at any depth, both refuse in
the same words or read the same round.

SETTLE_ORACLE_EXAMPLES=20000 runs a longer search than make test affords."""

from __future__ import annotations

import copy
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.errors import UserError
from controller.rules.settle import Round, parse_round
from tests.rules.settle_input_reference import reference_parse_round

HCF: dict[str, Any] = {
    "game": "high-card-flush",
    "dealer": ["Ts", "7s", "2s", "3d", "5d", "8c", "Jh"],
    "seats": [
        {
            "seat": 1,
            "cards": ["Ah", "Kh", "9h", "4h", "2c", "6c", "Qd"],
            "wagers": {"ante": 500, "raise": 500},
        },
        {
            "seat": 2,
            "cards": ["9d", "6d", "4d", "Kc", "2h", "3h", "6s"],
            "wagers": {"ante": 500},
            "folded": True,
        },
    ],
}
DP: dict[str, Any] = {
    **copy.deepcopy(HCF),
    "banking": {"mode": "designated-player", "seat": 4, "funds": 100_000, "bonus_cap": 5_000},
    "rake": {"method": "ii", "amount": 25},
    "paytables": {"flush": "hcf-flush-house"},
    "dead": False,
}
CHASE: dict[str, Any] = {
    "game": "chase-the-flush",
    "dealer": ["2c", "7d", "9s"],
    "community": ["Ah", "Kh", "3h", "8c"],
    "seats": [
        {
            "seat": 1,
            "cards": ["Qh", "Jh", "4d"],
            "wagers": {"ante": 100, "xtra_bonus": 100, "all_in": 300},
            "street": "preflop",
        },
        {"seat": 3, "cards": ["5s", "6s", "Td"], "wagers": {"ante": 100, "xtra_bonus": 100}, "folded": True},
    ],
}
BASES = (HCF, DP, CHASE)

# Values a field may be given: the right kinds, the wrong kinds, the edges of each.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 4, 7, 8, 500, 10**11 + 1, 10**30]),
    st.integers(min_value=-10, max_value=10_000),
    st.sampled_from([0.0, 500.0, 1.5]),
    st.sampled_from(
        [
            "",
            "i",
            "ii",
            "iv",
            "house",
            "designated-player",
            "hcf",
            "top-flush",
            "Ah",
            "As",
            "Xx",
            "flop",
            "preflop",
            "ante",
            "raise",
            "flush",
            "hcf-flush-house",
            "nope",
            "seat",
            "cards",
        ]
    ),
)
KEYS = st.sampled_from(
    [
        "game",
        "banking",
        "paytables",
        "rake",
        "dealer",
        "community",
        "seats",
        "dead",
        "mode",
        "seat",
        "funds",
        "bonus_cap",
        "method",
        "amount",
        "cards",
        "wagers",
        "folded",
        "street",
        "ante",
        "raise",
        "flush",
        "colour",
        "a",
    ]
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=3), st.tuples(inner, inner)
    ),
    max_leaves=6,
)


def _containers(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every dict's and list's path in ``obj``."""
    found: list[tuple[Any, ...]] = []
    if isinstance(obj, dict):
        found.append(path)
        for key, value in obj.items():
            found.extend(_containers(value, (*path, key)))
    elif isinstance(obj, list):
        found.append(path)
        for index, value in enumerate(obj):
            found.extend(_containers(value, (*path, index)))
    return found


@st.composite
def inputs(draw: st.DrawFn) -> Any:
    obj: Any = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        path = draw(st.sampled_from(_containers(obj)))
        target = obj
        for part in path:
            target = target[part]
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if isinstance(target, dict):
            key = draw(st.sampled_from(sorted(target))) if target and action != "add" else draw(KEYS)
            if action == "delete":
                target.pop(key, None)
            else:
                target[key] = draw(VALUES)
        elif isinstance(target, list):
            if target and action != "add":
                index = draw(st.integers(min_value=0, max_value=len(target) - 1))
                if action == "delete":
                    del target[index]
                else:
                    target[index] = draw(VALUES)
            else:
                target.append(draw(VALUES))
    if draw(st.integers(min_value=0, max_value=30)) == 17:  # not a bound: hypothesis favours those
        return draw(VALUES)  # now and then not an object at all
    return obj


def _outcome(parse: Any, obj: Any) -> Round | str:
    try:
        result: Round = parse(obj)
    except UserError as error:
        return f"refused: {error}"
    return result


@settings(
    max_examples=int(os.environ.get("SETTLE_ORACLE_EXAMPLES", "600")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(inputs())
def test_the_plain_reader_reads_every_input_as_the_pydantic_models_did(obj: Any) -> None:
    assert _outcome(parse_round, copy.deepcopy(obj)) == _outcome(reference_parse_round, copy.deepcopy(obj))


def test_the_bases_are_good_rounds() -> None:
    """The generator starts from rounds that settle, so a changed field is what a refusal is about."""
    for base in BASES:
        assert isinstance(_outcome(parse_round, copy.deepcopy(base)), Round)
