# Floe: build, test and run.
#
#   make build   build bin/floe
#   make test    the whole suite: gofmt, go vet, staticcheck, go test -race, then the PyIceberg,
#                Spark and Trino interop suites against bin/floe (in .venv and
#                .venv-spark, made on first use), then the 10-minute soak, then
#                the console's browser tests
#   make doctest run every shell, SQL and Python snippet of README.md and docs/
#   make soak    the memory soak alone (FLOE_SOAK_SECONDS, default 600)
#   make console the web console's browser tests (npm; Debian's chromium and firefox-esr)
#   make run     run Floe locally with the CRM demo dataset
#
# Needs Go, Python 3.11+ (with venv), Java 17 with Maven (for the Iceberg
# Spark runtime), a JDK 24+ for Trino, Node.js with npm and Debian's chromium
# and firefox-esr (for the console tests), and access to PyPI, Maven Central and npm.
# PostgreSQL store tests run when FLOE_TEST_PG_DSN is set (see
# store/sqlstore/testdata/start-postgres.sh).

GO       ?= go
PYTHON   ?= python3
VENV     ?= .venv
FLOE_BIN ?= $(CURDIR)/bin/floe
INTEROP  := tests/interop/python
SPARK_VENV ?= .venv-spark
DBT_VENV ?= .venv-dbt
DBT_REQS := tests/interop/dbt/requirements.txt
SPARK_INTEROP := tests/interop/spark
TRINO_INTEROP := tests/interop/trino
PYTEST_ARGS ?=

.PHONY: all build test vet lint test-go interop interop-spark interop-trino rck soak run clean doctest console

all: build

# The commit and its time are stamped into the binary (floe version); Go's
# own VCS stamping may be off (GOFLAGS=-buildvcs=false).
COMMIT   := $(shell git rev-parse HEAD 2>/dev/null)
COMMITAT := $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS  := -X github.com/floe-lake/floe/internal/cli.stampCommit=$(COMMIT) -X github.com/floe-lake/floe/internal/cli.stampCommitTime=$(COMMITAT)

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/floe ./cmd/floe

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

test: lint
	$(GO) test -race -count=1 -timeout 30m ./...
	@$(MAKE) --no-print-directory interop
	@$(MAKE) --no-print-directory doctest
	@$(MAKE) --no-print-directory interop-spark
	@$(MAKE) --no-print-directory interop-trino
	@$(MAKE) --no-print-directory rck
	@$(MAKE) --no-print-directory soak
	@$(MAKE) --no-print-directory console

vet:
	$(GO) vet ./...

# lint: gofmt, go vet and staticcheck must all be clean.
lint: vet
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv*'))"; \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) run $(STATICCHECK) ./...

test-go:
	$(GO) test -race -count=1 -timeout 30m ./...

# console runs the web console's browser tests (tests/console: playwright-core
# and puppeteer-core from npm, pinned by its package-lock.json, driving
# Debian's chromium and firefox-esr headless) against bin/floe serve --demo;
# screenshots go to $(CONSOLE_ARTIFACTS).
CONSOLE_ARTIFACTS ?= $(or $(FLOE_CONSOLE_ARTIFACTS),tests/console/artifacts)
console: build
	cd tests/console && npm ci --no-audit --no-fund --silent
	FLOE_BIN=$(FLOE_BIN) FLOE_CONSOLE_ARTIFACTS=$(abspath $(CONSOLE_ARTIFACTS)) npm --prefix tests/console test

# interop runs the PyIceberg suite against a freshly built bin/floe.
interop: build $(VENV)/.requirements-installed $(DBT_VENV)/.requirements-installed
	FLOE_BIN=$(FLOE_BIN) FLOE_DBT=$(abspath $(DBT_VENV))/bin/dbt $(VENV)/bin/python -m pytest -q -p no:cacheprovider $(INTEROP) $(PYTEST_ARGS)

# The virtualenv is (re)made when missing or broken, and the pinned
# requirements are installed again whenever requirements.txt changes.
$(VENV)/.requirements-installed: $(INTEROP)/requirements.txt
	@if ! $(VENV)/bin/python -m pip --version >/dev/null 2>&1; then \
		echo "creating $(VENV) with $(PYTHON)"; \
		rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); \
	fi
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r $(INTEROP)/requirements.txt
	@touch $@

# dbt-postgres, in a virtualenv of its own, runs the dbt project of
# tests/interop/dbt in both suites (test_dbt.py, test_spark_dbt.py).
$(DBT_VENV)/.requirements-installed: $(DBT_REQS)
	@if ! $(DBT_VENV)/bin/python -m pip --version >/dev/null 2>&1; then \
		echo "creating $(DBT_VENV) with $(PYTHON)"; \
		rm -rf $(DBT_VENV) && $(PYTHON) -m venv $(DBT_VENV); \
	fi
	$(DBT_VENV)/bin/python -m pip install -q --disable-pip-version-check -r $(DBT_REQS)
	@touch $@

# doctest runs every sh/sql/python block of README.md and docs/*.md against a
# `bin/floe serve --demo` per document (tests/doctest/test_docs.py says how
# blocks are marked skip or expect-error); needs psql, jq, curl and openssl.
doctest: build $(VENV)/.requirements-installed
	FLOE_BIN=$(FLOE_BIN) $(VENV)/bin/python -m pytest -q -p no:cacheprovider -c tests/doctest/pytest.ini tests/doctest $(PYTEST_ARGS)

# interop-spark runs the Spark suite (pyspark + the Iceberg runtime from Maven
# Central, installed by scripts/install-spark.sh) against bin/floe.
interop-spark: build $(DBT_VENV)/.requirements-installed
	bash scripts/install-spark.sh $(SPARK_VENV)
	FLOE_BIN=$(FLOE_BIN) FLOE_DBT=$(abspath $(DBT_VENV))/bin/dbt $(SPARK_VENV)/bin/python -m pytest -q -p no:cacheprovider $(SPARK_INTEROP) $(PYTEST_ARGS)

# rck runs the Iceberg REST Compatibility Kit (1.11.0 and 1.10.1, from Maven
# Central into ~/.m2 once) against bin/floe with the test profile
# tests/rck/floe-rck.yaml; failures must match tests/rck/known-differences-*.txt.
rck: build
	FLOE_BIN=$(FLOE_BIN) bash scripts/run-rck.sh

# interop-trino runs the Trino suite (Trino server 476 from Maven Central and
# a JDK 24+, found or installed by scripts/install-trino.sh, which prints
# TRINO_HOME and TRINO_JAVA_HOME) against bin/floe, in the PyIceberg venv.
interop-trino: build $(VENV)/.requirements-installed
	@vars="$$(bash scripts/install-trino.sh)" && export $$vars && \
		FLOE_BIN=$(FLOE_BIN) $(VENV)/bin/python -m pytest -q -p no:cacheprovider -c $(TRINO_INTEROP)/pytest.ini $(TRINO_INTEROP) $(PYTEST_ARGS)

# soak runs mixed load (loadTable, appends, SQL, S3 reads) against one
# bin/floe for FLOE_SOAK_SECONDS and checks that its RSS and descriptors stay
# flat (issue 14).
FLOE_SOAK_SECONDS ?= 600
soak: build $(VENV)/.requirements-installed
	FLOE_BIN=$(FLOE_BIN) FLOE_SOAK_SECONDS=$(FLOE_SOAK_SECONDS) $(VENV)/bin/python -m pytest -q -s -p no:cacheprovider -c tests/soak/pytest.ini tests/soak

run:
	$(GO) run ./cmd/floe serve --demo

clean:
	rm -rf bin $(VENV) $(SPARK_VENV) $(DBT_VENV)
