# Floe: build, test and run.
#
#   make build   build bin/floe
#   make test    the whole suite: go vet, go test -race, then the PyIceberg
#                interop suite against bin/floe (in .venv, made on first use)
#   make run     run Floe locally with the CRM demo dataset
#
# Needs Go, Python 3.11+ (with venv) and access to PyPI. PostgreSQL store tests
# run when FLOE_TEST_PG_DSN is set (see store/sqlstore/testdata/start-postgres.sh).

GO       ?= go
PYTHON   ?= python3
VENV     ?= .venv
FLOE_BIN ?= $(CURDIR)/bin/floe
INTEROP  := tests/interop/python
PYTEST_ARGS ?=

.PHONY: all build test vet test-go interop run clean

all: build

build:
	$(GO) build -o bin/floe ./cmd/floe

test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	@$(MAKE) --no-print-directory interop

vet:
	$(GO) vet ./...

test-go:
	$(GO) test -race -count=1 ./...

# interop runs the PyIceberg suite against a freshly built bin/floe.
interop: build $(VENV)/.requirements-installed
	FLOE_BIN=$(FLOE_BIN) $(VENV)/bin/python -m pytest -q -p no:cacheprovider $(INTEROP) $(PYTEST_ARGS)

# The virtualenv is (re)made when missing or broken, and the pinned
# requirements are installed again whenever requirements.txt changes.
$(VENV)/.requirements-installed: $(INTEROP)/requirements.txt
	@if ! $(VENV)/bin/python -m pip --version >/dev/null 2>&1; then \
		echo "creating $(VENV) with $(PYTHON)"; \
		rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); \
	fi
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r $(INTEROP)/requirements.txt
	@touch $@

run:
	$(GO) run ./cmd/floe serve --demo

clean:
	rm -rf bin $(VENV)
