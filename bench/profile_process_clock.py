"""Run a module under cProfile timed by the process's CPU clock (``time.process_time``), not the wall
clock: on a shared, loaded machine a wall-clock profile counts the time the process waited for a core
as the time of whatever function it was in, so only CPU time says where the process's work went.

    python bench/profile_process_clock.py OUT.prof -m MODULE [ARGS ...]

The profile is written when the module returns or raises (the floor service returns on SIGTERM).
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main() -> None:
    if len(sys.argv) < 4 or sys.argv[2] != "-m":
        raise SystemExit("usage: profile_process_clock.py OUT.prof -m MODULE [ARGS ...]")
    out, module = sys.argv[1], sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    profiler = cProfile.Profile(time.process_time)
    try:
        profiler.runcall(runpy.run_module, module, run_name="__main__", alter_sys=True)
    finally:
        profiler.dump_stats(out)


if __name__ == "__main__":
    main()
