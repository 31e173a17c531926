"""A short run of bench/fuzz_protocol.py (the million-input run is in bench/, not here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

FUZZ_SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "fuzz_protocol.py"


def load_fuzzer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_protocol", FUZZ_SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_four_thousand_fuzz_inputs_raise_nothing() -> None:
    summary = load_fuzzer().run(inputs=4_000, workers=1, seed=99, chunk=2_000)
    assert summary["inputs"] == 4_000
    assert summary["exceptions"] == 0, summary["first_failures"]
    # The mutator must still leave some frames intact, or the check of what verifies proves nothing.
    assert summary["verified_frames_in_mutated_captures"] > 0
