# compaction-harness: property-based verification of Google ADK's event compaction.
# `make help` lists the targets. Every target creates the virtual environment
# it needs on first use (.venv/adk-<release>/).

PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
ADK ?= 2.13.0
ADK_SRC ?=
FUZZ_SECONDS ?= 120
JOBS ?= auto
PYTEST_ARGS ?=
FIXTURE ?=
RELEASES ?=
MATRIX_SECONDS ?= 30
# make bench-faults: seeded trials a fault, each a campaign of at most BENCH_SECONDS;
# BENCH_FAULTS=id,id for some faults only (their rows replace those of the record).
BENCH_TRIALS ?= 5
BENCH_SECONDS ?= 120
BENCH_FAULTS ?=
APP ?=
# make fuzz STORAGE=memory|database|sqlite|postgresql|mariadb: every drawn script on that session service.
STORAGE ?=
CHECK_SECONDS ?= 60
CHECK_ARGS ?=
FUZZ_DB ?=
# Which SDK the gate and the campaign target: python (google-adk, the default)
# or js (ADK for TypeScript, @google/adk, through the Node driver in sdks/adk-js).
SDK ?= python
# The fixed SDK: FIXES=all (every registered fix the release can take), FIXES=all,-name
# (all but those: the SDK with their faults alone) or FIXES=name,name,
# for test, fuzz, fuzz-worker, replay, show and matrix; handed on as HARNESS_FIXES (with
# SDK=js, to the Node driver: ADK-JS's own fixes).
FIXES ?= $(HARNESS_FIXES)

# Python keeps compiled modules, and pytest the tests it rewrites for assertions, in
# __pycache__/ (ignored by git). A machine that sets PYTHONDONTWRITEBYTECODE would have
# every process compile the package and rewrite the tests again: each gate worker and
# each of the CLI and pytest processes the gate's tests start (a second or more each).
export PYTHONDONTWRITEBYTECODE :=

# ADK and ADK_SRC name two different targets: refuse the pair rather than pick one.
ifneq ($(ADK_SRC),)
ifneq ($(filter command line environment environment override,$(origin ADK)),)
$(error ADK=$(ADK) and ADK_SRC=$(ADK_SRC) name two targets; give one of them)
endif
endif
TARGET := $(if $(ADK_SRC),--adk-src "$(ADK_SRC)",--adk "$(ADK)")
# Prints the target environment's python (creating it if needed); fails with one line.
ENV_PY := PYTHONPATH=src $(PYTHON) -m compaction_harness.envs $(TARGET)
PYTEST := -m pytest -p no:cacheprovider
# FIXES=: checked once (an unknown fix, or one the release cannot take: one line, exit 2),
# then handed on. With SDK=js the Node driver checks ADK-JS's names.
FIXES_ENV := HARNESS_FIXES="$(FIXES)"
# make test FIXES=...: the part of the gate that judges ADK (the properties and the fixture
# replays) on the fixed SDK; the rest is about the harness and the release as published.
FIXED_GATE := $(if $(strip $(FIXES)),-m "property or judges_adk")
CHECK_FIXES := $(if $(strip $(FIXES)),$$py -m compaction_harness.surfaces.switch$(if $(filter js,$(SDK)), --sdk=js) "$(FIXES)" >/dev/null || exit 2,true)

ifneq ($(filter-out memory database sqlite postgresql mariadb,$(STORAGE)),)
$(error STORAGE=$(STORAGE): expected memory, database, sqlite, postgresql or mariadb)
endif
ifeq ($(SDK),js)
ifneq ($(filter sqlite postgresql mariadb,$(STORAGE)),)
$(error STORAGE=$(STORAGE) is google-adk's: the Node driver keeps ADK-JS's sessions in memory or DatabaseSessionService on SQLite (STORAGE=memory|database))
endif
endif
ifeq ($(filter $(SDK),python js),)
$(error SDK=$(SDK): expected python or js)
endif
# A budget pytest would refuse with its multi-line usage message: one line instead.
# (make's own functions, no shell: what is left once the digits are gone must be nothing or one dot)
FUZZ_SECONDS_REST := $(FUZZ_SECONDS)
$(foreach d,0 1 2 3 4 5 6 7 8 9,$(eval FUZZ_SECONDS_REST := $$(subst $(d),,$$(FUZZ_SECONDS_REST))))
ifneq ($(words $(FUZZ_SECONDS))$(filter-out .,$(FUZZ_SECONDS_REST))$(filter .,$(FUZZ_SECONDS)),1)
$(error FUZZ_SECONDS=$(FUZZ_SECONDS): expected a number of seconds, such as 120)
endif
ADKJS_DIR := sdks/adk-js
# Written after a successful `npm ci`, so the install runs once (and again
# when the lock file changes). It lives inside the package, so removing
# @google/adk (or node_modules) installs again.
ADKJS_STAMP := $(ADKJS_DIR)/node_modules/@google/adk/.harness-npm-ci
# The tests that run ADK-JS through Node: every folder named adk_js under a
# purpose folder of tests/ (the plugin's ADKJS_TEST_FOLDER; tests/conftest.py
# says what each purpose folder holds).
ADKJS_TESTS := $(wildcard tests/*/adk_js)
# What the gate and the campaign collect: the JS tests alone with SDK=js;
# without, everything else (the JS tests need Node and the npm package).
SDK_PATHS := $(if $(filter js,$(SDK)),$(ADKJS_TESTS),$(addprefix --ignore=,$(ADKJS_TESTS)))
SDK_PREREQ := $(if $(filter js,$(SDK)),$(ADKJS_STAMP))
# The targets that run Node: without it on PATH, one line before anything runs
# (an installed sdks/adk-js would otherwise leave `make js-env` nothing to do,
# and every ADK-JS test would fail on its own).
ADKJS_GOALS := js-env $(if $(filter js,$(SDK)),test fuzz fuzz-worker differential bench bench-faults)
ifneq ($(filter $(ADKJS_GOALS),$(MAKECMDGOALS)),)
ifeq ($(shell command -v node 2>/dev/null),)
$(error SDK=js needs node (Node 20) on PATH, from the system packages; none is installed)
endif
endif

.DEFAULT_GOAL := help
# coverage: ADK's compaction modules, and the helpers that must reach every branch.
COVERAGE_MODULES := google.adk.apps.compaction,google.adk.flows.llm_flows.context._compaction
COVERAGE_REQUIRED := _longest_self_contained_prefix _provably_dead_call_ids \
  _safe_token_compaction_split_index

.PHONY: help env js-env test test-fast fuzz fuzz-worker differential coverage bench bench-faults gate-under-load matrix tables replay check show lint format clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'
	@echo "  variables: ADK=$(ADK) (or ADK_SRC=/path/to/adk-python), SDK=$(SDK) (or js), FUZZ_SECONDS=$(FUZZ_SECONDS), JOBS=$(JOBS), FIXTURE=path,"
	@echo "             PYTEST_ARGS='...' (passed on to pytest), RELEASES='1.26.0 2.13.0', MATRIX_SECONDS=$(MATRIX_SECONDS)"
	@echo "             FUZZ_DB=redis://HOST:PORT/N (fuzz, fuzz-worker: one example database shared by campaigns on several machines)"
	@echo "             FIXES=all or FIXES=name,name (test, fuzz, replay, show, matrix: google-adk, or with SDK=js ADK-JS, with those fixes applied; HARNESS_FIXES)"
	@echo "             STORAGE=memory|database|sqlite|postgresql|mariadb (fuzz: every script on that session service), APP=module:attr CHECK_SECONDS=$(CHECK_SECONDS) (check)"

env: ## create the target's virtual environment (done by every other target too)
	@$(ENV_PY)

js-env: $(ADKJS_STAMP) ## install ADK-JS for SDK=js: npm ci in sdks/adk-js (once; Node 20, npm, python3, make, g++ from the system)

$(ADKJS_STAMP): $(ADKJS_DIR)/package.json $(ADKJS_DIR)/package-lock.json
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || \
	  { echo "error: SDK=js needs node and npm (Node 20) from the system packages" >&2; exit 2; }
	@command -v python3 >/dev/null 2>&1 && command -v make >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1 || \
	  { echo "error: SDK=js compiles sqlite3 with node-gyp: it needs python3, make and g++ from the system packages" >&2; exit 2; }
	@echo "installing @google/adk in $(ADKJS_DIR) (npm ci)" >&2
	@cd $(ADKJS_DIR) && npm ci --no-audit --no-fund --loglevel=error >&2 || \
	  { echo "error: npm ci failed in $(ADKJS_DIR)" >&2; exit 2; }
	@touch $@

# tests/slow/test_shared_database.py starts redis-server processes of its own.
NEED_REDIS_SERVER = command -v redis-server >/dev/null || { apt-get update -qq && \
	  apt-get install -y -qq redis-server >/dev/null; } || \
	  { echo "error: the gate needs redis-server and could not install it (as root: apt-get install redis-server)" >&2; exit 2; }

# The storage kinds postgresql and mariadb keep sessions on real servers that the
# tests start on loopback (compaction_harness.store.servers): installed from the
# system packages when missing. The gate needs both; a campaign runs without
# one it cannot install (it says so) unless STORAGE= names it.
NEED_DATABASE_SERVERS = { { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } && \
	  command -v mariadb-install-db >/dev/null; } || { apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql mariadb-server >/dev/null; } || \
	  { echo "error: the gate needs PostgreSQL and MariaDB servers and could not install them (as root: apt-get install postgresql mariadb-server)" >&2; exit 2; }
# For a campaign: HARNESS_SERVERS lists the servers it starts (those installed, or
# the one STORAGE= names, which must be).
CAMPAIGN_SERVERS = servers=; \
	if [ "$(STORAGE)" = postgresql ] || [ "$(STORAGE)" = mariadb ]; then \
	  $(NEED_DATABASE_SERVERS); servers="$(STORAGE)"; \
	elif [ -z "$(STORAGE)" ] && [ "$(SDK)" = python ]; then \
	  ( $(NEED_DATABASE_SERVERS) ) 2>/dev/null && servers=postgresql,mariadb || \
	    echo "note: PostgreSQL and MariaDB are not installed: this campaign keeps no session on them" >&2; \
	fi

# Known faults are classified by re-running with their fixes, diffs that GNU patch applies.
NEED_PATCH = command -v patch >/dev/null || { apt-get update -qq && \
	  apt-get install -y -qq patch >/dev/null; } || \
	  { echo "error: classifying known faults by their fixes needs GNU patch and it could not be installed (as root: apt-get install patch)" >&2; exit 2; }

# --maxschedchunk=1: pytest-xdist hands the items out one by one as workers free
# up, in the gate's order: by folder, the slowest first (tests/conftest.py), then
# the plugin moves the longest items, marked gate_first, to the front.
test: $(SDK_PREREQ) ## the deterministic gate: derandomised properties, unit tests, fixture replay (SDK=js: ADK-JS's)
	@$(NEED_REDIS_SERVER)
	@$(NEED_DATABASE_SERVERS)
	@$(NEED_PATCH)
	@py=$$($(ENV_PY)) || exit $$?; \
	$(CHECK_FIXES); \
	FUZZ_DB= $(FIXES_ENV) $$py $(PYTEST) -n $(JOBS) --maxschedchunk=1 --hypothesis-profile=gate $(SDK_PATHS) $(FIXED_GATE) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "error: pytest collected no tests: the gate ran nothing" >&2; fi; \
	exit $$rc

test-fast: ## the fast tests alone (tests/fast/: no SDK run beyond ADK's pure helpers), in seconds
	@py=$$($(ENV_PY)) || exit $$?; \
	$$py $(PYTEST) -q -n $(JOBS) --hypothesis-profile=gate tests/fast $(PYTEST_ARGS)

fuzz: $(SDK_PREREQ) ## a random campaign of FUZZ_SECONDS against ADK (SDK=js: ADK-JS); failures become fixtures in tests/repros/ (FUZZ_DB= to share)
	@$(NEED_PATCH)
	@py=$$($(ENV_PY)) || exit $$?; \
	$(CHECK_FIXES); \
	$(CAMPAIGN_SERVERS); \
	FUZZ_DB="$(FUZZ_DB)" $(FIXES_ENV) HARNESS_STORAGE="$(STORAGE)" HARNESS_SERVERS="$$servers" HARNESS_CAMPAIGN_STARTED=$$(date +%s.%N) \
	$$py $(PYTEST) -m property -n $(JOBS) --hypothesis-profile=fuzz $(SDK_PATHS) \
	  --fuzz-seconds=$(FUZZ_SECONDS) --hypothesis-show-statistics $(PYTEST_ARGS)

fuzz-worker: $(SDK_PREREQ) ## one more campaign on FUZZ_DB=redis://HOST:PORT/N: writes no fixtures, `make fuzz` there writes them
	@$(NEED_PATCH)
	@if [ -z "$(FUZZ_DB)" ]; then echo "error: make fuzz-worker needs FUZZ_DB=redis://HOST:PORT/N (the writer's shared example database)" >&2; exit 2; fi
	@py=$$($(ENV_PY)) || exit $$?; \
	$(CHECK_FIXES); \
	FUZZ_DB="$(FUZZ_DB)" $(FIXES_ENV) HARNESS_CAMPAIGN_STARTED=$$(date +%s.%N) \
	$$py $(PYTEST) -m property -n $(JOBS) --hypothesis-profile=fuzz $(SDK_PATHS) \
	  --fuzz-seconds=$(FUZZ_SECONDS) --fuzz-worker --hypothesis-show-statistics $(PYTEST_ARGS)

differential: $(SDK_PREREQ) ## 300 derandomised scripts through both drivers: the emulating driver stores what ADK's Runner stores (SDK=js: ADK-JS's Runner)
	@py=$$($(ENV_PY)) || exit $$?; \
	if [ "$(SDK)" = js ]; then \
	  HARNESS_JS_DIFFERENTIAL_EXAMPLES=300 exec $$py $(PYTEST) --hypothesis-profile=gate \
	    tests/slow/adk_js/test_differential_js.py -k the_emulating_mapping_stores --hypothesis-show-statistics $(PYTEST_ARGS); \
	fi; \
	HARNESS_DIFFERENTIAL_EXAMPLES=150 $$py $(PYTEST) -n $(JOBS) --hypothesis-profile=gate \
	  tests/slow/test_differential.py -k the_emulating_driver_stores $(PYTEST_ARGS)

coverage: ## branch coverage of ADK's compaction code per function; fails below 100% on the three helpers
	@py=$$($(ENV_PY)) || exit $$?; \
	rm -f .coverage .coverage.*; mkdir -p build; \
	$$py -m coverage run --branch --source=$(COVERAGE_MODULES) -m pytest -p no:cacheprovider \
	  -p no:xdist -q --hypothesis-profile=gate tests/fast/test_unit_properties.py \
	  tests/fast/test_invariants_fire.py tests/corpus/test_repros.py $(PYTEST_ARGS) || exit $$?; \
	$$py -m coverage json -q -o build/coverage.json && \
	$$py -m coverage html -q -d build/coverage-html && \
	echo "HTML report: build/coverage-html/index.html" && \
	$$py -m compaction_harness.surfaces.coverage_report build/coverage.json \
	  $(foreach f,$(COVERAGE_REQUIRED),--require $(f))

bench: $(SDK_PREREQ) ## unit examples/s against the ceiling, pipeline operations/s of both drivers, seconds to find the 2.11.0 stall (SDK=js: ADK-JS scripts/s)
	@py=$$($(ENV_PY)) || exit $$?; \
	if [ "$(SDK)" = js ]; then exec $$py bench/bench.py js; fi; \
	py211=$$(PYTHONPATH=src $(PYTHON) -m compaction_harness.envs --adk 2.11.0) || exit $$?; \
	$$py bench/bench.py ceiling && $$py bench/bench.py steps && $$py bench/bench.py drivers && \
	$$py211 bench/bench.py time-to-failure

bench-faults: $(SDK_PREREQ) ## seconds for the campaign to find each known fault alone (every other fix applied), BENCH_TRIALS seeded trials of BENCH_SECONDS: docs/fault-times/ (SDK=js: ADK-JS's faults)
	@$(NEED_PATCH)
	@py=$$($(ENV_PY)) || exit $$?; \
	$(CAMPAIGN_SERVERS); \
	HARNESS_SERVERS="$$servers" $$py bench/fault_times.py --sdk $(SDK) --trials $(BENCH_TRIALS) \
	  --seconds $(BENCH_SECONDS) --jobs $(if $(filter auto,$(JOBS)),$$(nproc),$(JOBS)) \
	  $(if $(BENCH_FAULTS),--faults $(BENCH_FAULTS)) --write

gate-under-load: ## `make test` 5 times under full CPU load (stress-ng); outcomes must not differ
	@command -v stress-ng >/dev/null || { apt-get update -qq && apt-get install -y -qq stress-ng >/dev/null; } \
	  || { echo "error: could not install stress-ng from the system packages" >&2; exit 2; }
	@py=$$($(ENV_PY)) || exit $$?; \
	$$py bench/gate_under_load.py

matrix: ## replay the fixtures and a seeded campaign on every release: build/matrix/ (RELEASES=, MATRIX_SECONDS=)
	@$(NEED_PATCH)
	@py=$$($(ENV_PY)) || exit $$?; \
	$(CHECK_FIXES); \
	JOBS=$(JOBS) $(FIXES_ENV) $$py -m compaction_harness.surfaces.matrix --releases "$(RELEASES)" --seconds $(MATRIX_SECONDS) \
	  --record docs/release-matrix.json

tables: $(ADKJS_STAMP) ## rewrite the generated text: known faults' releases and fixes (docs/known-faults.md), the cross-SDK table (docs/drivers.md), the fault catalogue (docs/faults/) (after adding fixtures or make matrix)
	@py=$$($(ENV_PY)) || exit $$?; \
	$$py -m compaction_harness.surfaces.fault_headers --write docs/known-faults.md && \
	$$py -m compaction_harness.surfaces.cross_sdk --write docs/drivers.md && \
	$$py -m compaction_harness.surfaces.fault_pages --write docs/faults

replay: ## re-check fixtures against the target: make replay FIXTURE=tests/repros/x.json
	@$(NEED_PATCH)
	@py=$$($(ENV_PY)) || exit $$?; \
	$(CHECK_FIXES); \
	$(FIXES_ENV) $$py -m compaction_harness replay $(or $(FIXTURE),tests/repros)

check: ## is compaction safe for your app? make check APP=module:attr (CHECK_SECONDS=, CHECK_ARGS='--price 0.3 2.5')
	@$(NEED_PATCH)
	@if [ -z "$(APP)" ]; then echo "error: make check needs APP=module:attr (your App, for example APP=examples.support:app)" >&2; exit 2; fi
	@py=$$($(ENV_PY)) || exit $$?; \
	$$py -m compaction_harness check "$(APP)" --seconds $(CHECK_SECONDS) $(CHECK_ARGS)

show: ## print a fixture as a timeline: make show FIXTURE=tests/repros/x.json
	@py=$$($(ENV_PY)) || exit $$?; \
	$(FIXES_ENV) $$py -m compaction_harness show $(or $(FIXTURE),$(error FIXTURE= is required))

lint: ## ruff check and format check
	@py=$$($(ENV_PY)) || exit $$?; \
	$$py -m ruff check . && $$py -m ruff format --check .

format: ## apply ruff's fixes and formatting
	@py=$$($(ENV_PY)) || exit $$?; \
	$$py -m ruff check --fix . && $$py -m ruff format .

clean: ## remove the virtual environments and Hypothesis's example databases
	rm -rf .venv .hypothesis
