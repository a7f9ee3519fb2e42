# Two commands for a fresh machine: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
OUT := demo-out

.PHONY: install test demo bench clean clean-cache

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

test: install
	$(BIN)/python -m pytest

demo: install
	@mkdir -p $(OUT)
	@echo "== pyvw-lite: logistic regression on the bundled bluebirds ratings (10 passes, holdout)"
	$(BIN)/pyvw-lite -d datasets/bluebirds/bluebirds.vw --loss_function logistic -b 20 \
		--passes 10 --cache_file $(OUT)/bluebirds.cache -k -f $(OUT)/bluebirds.pvw
	@echo "== predictions of the saved model (first 5 of $(OUT)/predictions.txt)"
	$(BIN)/pyvw-lite -d datasets/bluebirds/bluebirds.vw -t -i $(OUT)/bluebirds.pvw \
		-p $(OUT)/predictions.txt --quiet
	@head -5 $(OUT)/predictions.txt

bench: install
	$(BIN)/python -m pip install --quiet vowpalwabbit
	$(BIN)/pyvw-lite bench --repeat 5

# numba keys a cached kernel on its own file only: after editing a module that other kernels
# inline (learners/gd.py, learners/losses.py), drop the caches.
clean-cache:
	find pyvw_lite -name '*.nbi' -delete -o -name '*.nbc' -delete

clean: clean-cache
	rm -rf $(VENV) $(OUT)
