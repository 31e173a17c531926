"""Typed entries: msgspec Structs against frozen dataclasses, decode and encode, printed as JSON.

    python bench/bench_entry_types.py [--repeat N]

Why the journal's entries are msgspec Structs (controller/journal/entries/): the replay decodes every
stored public part into its class, and the append encodes every entry. Both candidates are timed on the
same entries, the ones a round really writes (an autoplay session of High Card Flush, every kind it
journals): msgspec decodes the JSON text straight into the typed object, checking every field's type;
the dataclass needs ``json.loads`` and then its constructor, and even then checks no type (the
dataclass figure here is that unchecked path, the fastest a dataclass can be, so the comparison
favours it). Encode: ``msgspec.json.encode`` of the Struct against ``json.dumps(dataclasses.asdict())``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.journal import entries as e
from tests.engine.test_autoplay import CONFIGS, play_session


def dataclass_twin(cls: type[e.Entry]) -> tuple[type[Any], dict[str, str]]:
    """A frozen dataclass with the Struct's public fields (the same names and order), and the JSON
    names that are not Python names ("from", "kind" of a device) mapped to its attribute names."""
    fields = [field for field in msgspec.structs.fields(cls) if field.encode_name != "private"]
    renames = {field.encode_name: field.name for field in fields if field.encode_name != field.name}
    names = [field.name for field in fields]
    return dataclasses.make_dataclass(f"{cls.__name__}Data", names, frozen=True, slots=True), renames


def from_json(twin: tuple[type[Any], dict[str, str]], text: str) -> Any:
    cls, renames = twin
    values = json.loads(text)
    if renames:
        values = {renames.get(key, key): value for key, value in values.items()}
    return cls(**values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="passes over the session's entries")
    args = parser.parse_args()
    table = play_session(CONFIGS["hcf-house"], rounds=40, seed=5, fault_rate=0.1)
    typed_entries = [record.entry for record in table.journal()]
    texts = [(entry.kind, json.dumps(e.public_dict(entry), sort_keys=True)) for entry in typed_entries]
    twins = {kind: dataclass_twin(cls) for kind, cls in e.CLASS_BY_KIND.items()}
    count = len(texts) * args.repeat

    started = time.perf_counter()
    for _ in range(args.repeat):
        for kind, text in texts:
            e.decode_public(kind, text)
    msgspec_decode_s = time.perf_counter() - started

    started = time.perf_counter()
    for _ in range(args.repeat):
        for kind, text in texts:
            from_json(twins[kind], text)
    dataclass_decode_s = time.perf_counter() - started

    as_dataclasses = [from_json(twins[kind], text) for kind, text in texts]
    encoder = msgspec.json.Encoder()
    started = time.perf_counter()
    for _ in range(args.repeat):
        for entry in typed_entries:
            encoder.encode(entry)
    msgspec_encode_s = time.perf_counter() - started

    started = time.perf_counter()
    for _ in range(args.repeat):
        for item in as_dataclasses:
            json.dumps(dataclasses.asdict(item))
    dataclass_encode_s = time.perf_counter() - started

    print(
        json.dumps(
            {
                "benchmark": "entry_types",
                "entries": count,
                "kinds": sorted({kind for kind, _ in texts}),
                "decode_entries_per_s": {
                    "msgspec_struct_typed_and_checked": round(count / msgspec_decode_s),
                    "frozen_dataclass_json_loads_unchecked": round(count / dataclass_decode_s),
                },
                "encode_entries_per_s": {
                    "msgspec_struct": round(count / msgspec_encode_s),
                    "frozen_dataclass_asdict_json_dumps": round(count / dataclass_encode_s),
                },
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
