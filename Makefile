# Two commands for a fresh machine: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT := demo-out

.PHONY: install test demo bench figures docs clean clean-cache

# The demo's environment runs every block README.md and docs/ show: matplotlib for plots, pandas
# and scikit-learn for the Python blocks (tests/test_readme.py builds it this way); the dask
# executors' extra is named where the docs use it; the tests add their own extras on top.
$(VENV)/.demo-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[plot,pandas,sklearn]'
	touch $@

$(VENV)/.installed: $(VENV)/.demo-installed
	$(BIN)/python -m pip install --quiet -e '.[test,plot,docs]'
	touch $@

install: $(VENV)/.installed

# the layers first (docs/explanation/internals.md): a second, then the tests
test: install
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m pytest

demo: $(VENV)/.demo-installed
	@mkdir -p $(OUT)
	@echo "== compiling the kernels the demo uses, in parallel (once: later runs load them)"
	$(BIN)/pyvw-lite compile binary sft sft-dyad crowd-batch
	@echo "== the seed experiment on the bundled act_MS answers: best constant, linear and dyadic"
	@echo "   k = 1..3 scoring filter trees with hinge loss, 15/16 train, 1/16 test"
	$(BIN)/pyvw-lite experiment configs/seed_table.toml --workdir $(OUT)/seed_table
	@echo "== true labels from the same crowd answers (the --batch default: BCC here), scored against the truth"
	$(BIN)/pyvw-lite crowd datasets/act_MS/answers.csv --batch --truth datasets/act_MS/truth.csv \
		-p $(OUT)/act_MS_labels.csv --workers $(OUT)/act_MS_workers.csv
	$(BIN)/pyvw-lite evaluate --labels $(OUT)/act_MS_labels.csv --truth datasets/act_MS/truth.csv \
		| head -3
	@echo "== VW-style learning: logistic regression on the bundled bluebirds ratings (10 passes)"
	$(BIN)/pyvw-lite -d datasets/bluebirds/bluebirds.vw --loss_function logistic -b 20 \
		--passes 10 --cache_file $(OUT)/bluebirds.cache -k -f $(OUT)/bluebirds.pvw --quiet
	$(BIN)/pyvw-lite -d datasets/bluebirds/bluebirds.vw -t -i $(OUT)/bluebirds.pvw \
		-p $(OUT)/predictions.txt
	@echo "== results in $(OUT)/"

# Every figure README.md and docs/ print, re-run into docs/figures.json and rendered into the
# pages (tools/figures.py; FIGURES="--fast" for the groups CI re-runs, "--only GROUP ..." for some).
# A group that needs ../shared, crowd-kit (CROWDKIT_PYTHON=...) or statsmodels is skipped without.
figures: install
	$(BIN)/python tools/figures.py $(FIGURES)

# The docs site into site/: the reference pages regenerated from the code (tools/reference.py),
# a strict build, then the browser check (tests/test_site.py: headless Chromium at 1280 px; it
# needs Debian's chromium and chromium-driver, as .ci/run installs them). Open site/index.html.
docs: install
	$(BIN)/python tools/reference.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict
	$(BIN)/python -m pytest tests/test_reference.py tests/test_site.py

bench: install
	$(BIN)/python -m pip install --quiet vowpalwabbit
	$(BIN)/pyvw-lite bench --repeat 5

# Cached kernels are stamped with a digest of every kernel source (pyvw_lite/jit.py), so an edit
# invalidates them by itself; this only frees the space.
clean-cache:
	find pyvw_lite -name '*.nbi' -delete -o -name '*.nbc' -delete

clean: clean-cache
	rm -rf $(VENV) $(OUT)
