# trawl: two commands a newcomer needs (see README.md).
#   make crawl DOMAIN=example.com   set up, then collect the domain's URLs from every source into the store and urls.txt
#   make test                       set up, then lint and run the whole test suite
#   make check                      set up, then lint and run the fast tier (about 2 minutes; docs/development.md)
#   make services                   Redis and PostgreSQL for distributed runs, without Docker (docs/distributed.md):
#                                   eval "$$(make services)" exports TRAWL_REDIS_URL and TRAWL_STORE_URI
#   make services-stop              end them (their files stay in .services/ for the next start)
# make's own exit status is 0 or 2: a crawl that exits 1 (partial, failed) makes make exit 2, after
# "make: *** [...] Error 1". Scripts that need the crawl's status run .venv/bin/trawl crawl ... directly.
PYTHON ?= python3
VENV ?= .venv
DOMAIN ?= example.com
SOURCE ?= all
ARGS ?=
BIN := $(VENV)/bin
# make services: the folder of both servers' files, and their ports (0: free ones, kept for the next start).
SERVICES_DIR ?= .services
REDIS_PORT ?= 0
POSTGRES_PORT ?= 0

.PHONY: setup crawl test check bench clean services services-stop

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pip install --quiet --no-deps 'pywb>=2.8'
	$(PYTHON) -m venv $(VENV)-pywb
	$(VENV)-pywb/bin/python -m pip install --quiet 'pywb>=2.8'
	touch $@

setup: $(BIN)/.installed

crawl: setup
	$(BIN)/trawl crawl $(SOURCE) -a domain=$(DOMAIN) -O urls.txt $(ARGS)

# Three test workers on two cores: half of the suite's time is waiting (servers starting, rate
# windows, timeouts), and with two workers it kept 1.09 cores busy (11 min 44 s, 647 s user + 128 s system).
test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --durations=40

check: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 3 --dist loadfile -m "not slow"

bench: setup
	$(BIN)/python bench/bench_wayback.py

# Standard library only: runs before make setup. Status on stderr, the two export lines on stdout.
services:
	@$(PYTHON) scripts/services.py start --dir $(SERVICES_DIR) --redis-port $(REDIS_PORT) --postgres-port $(POSTGRES_PORT)

services-stop:
	@$(PYTHON) scripts/services.py stop --dir $(SERVICES_DIR)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
