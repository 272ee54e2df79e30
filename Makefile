# accelops.gpu: `make demo` and `make test` do all set-up on a fresh Debian 12 machine (as root).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV ?= .venv
BIN := $(CURDIR)/$(VENV)/bin
BUILD := $(CURDIR)/build
FAKENVML := $(BUILD)/fakenvml/libnvidia-ml.so.1
PROMTOOL := $(BUILD)/prometheus/usr/bin/promtool
# Keep every ansible cache inside the checkout; molecule's plays take the collection from the checkout itself.
export ANSIBLE_HOME := $(CURDIR)/.ansible
export ANSIBLE_COLLECTIONS_PATH := $(BUILD)/collections
export PATH := $(BIN):$(PATH)
export MIRROR_PORT ?= 18080

.PHONY: help venv lint sanity units browser pkgtools podman check sim mirror molecule release compat docs test demo bench lock clean

help:
	@echo "make demo     run site.yml on a simulated 8-GPU DGX H100 node in Docker (a one-node Slurm cluster, its GPU exporter) and show what it found"
	@echo "make test     everything CI runs: lint, sanity, unit tests, molecule scenarios, release check, the oldest and the newest ansible-core"
	@echo "make check    lint, sanity and unit tests (no Docker; a few minutes)"
	@echo "make bench    benchmarks (results in docs/performance.md)"
	@echo "make docs     the documentation site, offline: build/docs/html/index.html"

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt tests/setup-venv.sh
	tests/setup-venv.sh $(VENV)
	touch $@

lock:
	python3 -m venv $(BUILD)/lock-venv && $(BUILD)/lock-venv/bin/pip install -q -r requirements.in
	{ echo "# Generated from requirements.in by 'make lock': every package pinned, for reproducible venvs."; \
	  $(BUILD)/lock-venv/bin/pip freeze --exclude-editable; } > requirements.txt

$(FAKENVML): $(wildcard tests/sim/nvml/fakenvml/*.[ch]) tests/sim/nvml/fakenvml/exports.map
	tests/sim/nvml/fakenvml/build.sh $(BUILD)/fakenvml

# The checkout itself, importable as ansible_collections.accelops.gpu (for ansible-lint and the unit tests).
LINKED := $(BUILD)/collections/ansible_collections/accelops/gpu
$(LINKED):
	mkdir -p $(dir $@) && ln -sfn $(CURDIR) $@

lint: venv $(LINKED)
	yamllint -s .
	ruff check .
	# The checkout itself is the collection here, not molecule's copy of it under .ansible.
	ANSIBLE_HOME=$(BUILD)/lint-ansible ANSIBLE_COLLECTIONS_PATH=$(BUILD)/collections ansible-lint

sanity: venv
	tests/sanity.sh

units: venv $(FAKENVML) browser pkgtools $(PROMTOOL)
	LD_LIBRARY_PATH=$(BUILD)/fakenvml python -m pytest

# Prometheus' promtool and server from the distribution's package, unpacked under build/ (not installed: no server
# starts on this machine), for the alert rules' tests (tests/unit/roles/gpu_monitoring/test_rules.py) and the slurm
# scenario's Prometheus, which runs inside its controller's container.
$(PROMTOOL):
	rm -rf $(BUILD)/prometheus && mkdir -p $(BUILD)/prometheus/deb
	cd $(BUILD)/prometheus/deb && { apt-get download -q prometheus 2>/dev/null || { apt-get update -q && apt-get download -q prometheus; }; }
	dpkg-deb -x $(BUILD)/prometheus/deb/prometheus_*.deb $(BUILD)/prometheus
	rm -rf $(BUILD)/prometheus/deb
	$@ --version

# A real browser for the fleet report's test (tests/playbooks/test_report_playbook.py): Chromium from the distribution, and
# pdftotext to read what it rendered.
browser:
	command -v chromium >/dev/null && command -v pdftotext >/dev/null || { apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium poppler-utils fonts-dejavu-core; }

# The package managers' own version order, which tests/unit/plugins/plugin_utils/test__pkgversion.py asks: dpkg is
# the machine's, rpm comes from the distribution.
pkgtools:
	command -v dpkg >/dev/null && command -v rpm >/dev/null || { apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rpm; }

# Podman and crun from the distribution, on this machine: the real CDI consumer that the gpu_settings scenario's
# verification asks to resolve the CDI spec written on a simulated node (docs/containers.md).
podman:
	command -v podman >/dev/null && command -v crun >/dev/null || { apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends podman crun; }

# The simulated GPU node's parts: Docker, base images, fake NVML, the mirror the roles install from, and Podman.
sim: venv $(FAKENVML) $(LINKED) $(PROMTOOL) podman
	tests/sim/images/docker-up.sh
	tests/sim/images/build-image.sh bookworm
	tests/sim/images/build-image.sh trixie
	python3 tests/sim/mirror/cudamirror/build.py $(BUILD)/mirror/cuda --fake-nvml $(FAKENVML)
	tests/sim/mirror/wheelhouse.sh fill
	tests/sim/mirror/mirror.sh start

molecule: sim
	molecule test --all

# The release check (the tarball, Galaxy's import, ansible-doc of everything, syntax checks), then the facts playbook
# and the gpu_settings role run for real on this machine against the fake NVML: on the newest ansible-core, the
# project's own (the sanity stage covers it there).
release: venv $(FAKENVML)
	tests/compat.sh venv $(BUILD)/release

# The collection's documentation site, offline: build/docs/html/index.html.
docs: venv $(LINKED)
	tests/docs-site.sh $(BUILD)/docs

# The same and ansible-test sanity on the oldest ansible-core that meta/runtime.yml claims, in a venv of its own; then
# the same checks on the newest ansible-core that PyPI offers, pinned here, in a container of the Debian 13
# simulated-node image (it needs Python 3.12 or later; the image has 3.13). tests/newest-ansible-core.sh says when
# PyPI has a newer one (a notice, not a failure: CI stays reproducible, and offline it says it could not ask).
OLDEST_ANSIBLE_CORE := $(shell sed -n 's/^requires_ansible: *["'"'"']>=\([0-9.]*\)["'"'"'].*/\1/p' meta/runtime.yml)
NEWEST_ANSIBLE_CORE := 2.21.5
compat: venv $(FAKENVML)
	tests/compat.sh $(OLDEST_ANSIBLE_CORE) $(BUILD)/compat/$(OLDEST_ANSIBLE_CORE)
	tests/sim/images/docker-up.sh
	tests/sim/images/build-image.sh trixie
	tests/newest-ansible-core.sh $(NEWEST_ANSIBLE_CORE) || true
	tests/compat.sh $(NEWEST_ANSIBLE_CORE) $(BUILD)/compat/$(NEWEST_ANSIBLE_CORE) accelops-sim/debian13:latest

# Quick work: what needs no Docker.
check: lint sanity units
	@echo "make check: lint, sanity and unit tests passed"

# Everything CI runs, stage by stage (each molecule scenario one), with the time of each at the end.
test: venv
	+tests/stages.sh
	@echo "make test: all checks passed"

demo: sim
	tests/sim/images/demo.sh

bench: sim
	tests/bench/run.sh

clean:
	-tests/sim/mirror/mirror.sh stop
	rm -rf $(BUILD) .ansible
