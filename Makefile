# trawl: two commands a newcomer needs (see README.md).
#   make crawl DOMAIN=example.com   set up, then collect the domain's URLs from every source into trawl.db and urls.txt
#   make test                       set up, then lint and run the whole test suite
PYTHON ?= python3
VENV ?= .venv
DOMAIN ?= example.com
SOURCE ?= all
BIN := $(VENV)/bin

.PHONY: setup crawl test bench clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

setup: $(BIN)/.installed

crawl: setup
	$(BIN)/scrapy crawl $(SOURCE) -a domain=$(DOMAIN) -O urls.txt

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

bench: setup
	$(BIN)/python bench/bench_wayback.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
