"""The cost of the records that set their fields from ``locals()`` (table_names/records.py
``_set_fields``): importing the games' catalogue (which builds its ``Wager`` and ``GameSpec`` records),
one ``load_config`` of examples/progressive-table.toml (the resolved configuration's records) and one
``Wager`` built. Run it once per checkout (``PYTHONPATH=DIR python bench/bench_record_init.py DIR``) to
compare two; prints one JSON object. Start-up figures of whole commands: bench/bench_cli.py."""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

CONFIG_LOADS = 300
WAGER_BATCHES = 20
WAGERS_PER_BATCH = 10_000


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]
    started_ns = time.perf_counter_ns()
    import controller.rules.catalogue  # noqa: PLC0415 - timed: builds the catalogue's records

    import_ms = (time.perf_counter_ns() - started_ns) / 1e6
    from controller.config import load_config  # noqa: PLC0415 - after the timed import

    path = root / "examples" / "progressive-table.toml"
    loads_ns: list[int] = []
    for _ in range(CONFIG_LOADS):
        started_ns = time.perf_counter_ns()
        load_config(path)
        loads_ns.append(time.perf_counter_ns() - started_ns)
    wager_ns: list[float] = []
    for _ in range(WAGER_BATCHES):
        started_ns = time.perf_counter_ns()
        for _ in range(WAGERS_PER_BATCH):
            controller.rules.catalogue.Wager(
                "ante", "ante", {"g": 0}, "banker", "ante", "base", required=True
            )
        wager_ns.append((time.perf_counter_ns() - started_ns) / WAGERS_PER_BATCH)
    print(
        json.dumps(
            {
                "root": str(root),
                "catalogue_import_ms": round(import_ms, 2),
                "load_config_median_us": round(statistics.median(loads_ns) / 1e3, 1),
                "load_config_min_us": round(min(loads_ns) / 1e3, 1),
                "wager_construct_median_ns": round(statistics.median(wager_ns)),
                "wager_construct_min_ns": round(min(wager_ns)),
            }
        )
    )


if __name__ == "__main__":
    main()
