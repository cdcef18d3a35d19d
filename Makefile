# llmserve.sglang — developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

export LLMSERVE_CACHE ?= /var/cache/llmserve
# The controller venv (tools/devenv.sh builds it from requirements-dev.txt); LLMSERVE_VENV points elsewhere
# for a checkout whose requirements differ from those of the others sharing the cache.
export LLMSERVE_VENV ?= $(LLMSERVE_CACHE)/venv
export LLMSERVE_VENV_REQUIREMENTS ?= $(CURDIR)/requirements-dev.txt
VENV := $(LLMSERVE_VENV)
# The oldest supported ansible-core (meta/runtime.yml), from requirements-compat.txt: `make compat` runs sanity and
# the unit tests with a venv of its own.
export LLMSERVE_COMPAT_VENV ?= $(LLMSERVE_CACHE)/venv-core-compat
# galaxy-importer (what Galaxy and Automation Hub run on an upload) for `make build-check`, in a venv of its own built
# from tools/galaxy_importer/requirements.txt: it pins its own ansible-lint and ansible-builder.
export LLMSERVE_GALAXY_IMPORTER_VENV ?= $(LLMSERVE_CACHE)/venv-galaxy-importer
# The real SGLang on CPU (tools/engine): offline wheelhouse, a venv from it, a tiny local model.
export LLMSERVE_SGLANG_WHEELHOUSE ?= $(LLMSERVE_CACHE)/wheelhouse/sglang-cpu
export LLMSERVE_SGLANG_VENV ?= $(LLMSERVE_CACHE)/venv-sglang-cpu
export LLMSERVE_SGLANG_MODEL ?= $(LLMSERVE_CACHE)/models/tiny-llama
# The real SGLang model gateway (smg 1.13.0) for tests/functional/gateway: its wheels and a venv from them.
export LLMSERVE_SMG_WHEELHOUSE ?= $(LLMSERVE_CACHE)/wheelhouse/smg
export LLMSERVE_SMG_VENV ?= $(LLMSERVE_CACHE)/venv-smg
# A real Hugging Face mirror (olah 0.5.4, offline, tools/model) for tests/functional/model and the model scenario.
export LLMSERVE_OLAH_VENV ?= $(LLMSERVE_CACHE)/venv-olah
export LLMSERVE_TINY_MODEL ?= $(LLMSERVE_SGLANG_MODEL)
DEVENV := source tools/devenv.sh
HOSTS := source tools/hosts/testhosts.sh
# Scenarios in the order `make test` runs them; `make molecule S=name` runs one.
# Longest first: they are dealt out to two parallel lanes (tools/molecule_lanes.sh).
# `fleet` (about 17 min alone, with 300-token streams) goes first: it runs in one lane while the other works through
# the rest. Not among them, for CI's 60 minutes on 2 cores: `monitoring` (about 7 min alone;
# `make molecule S=monitoring`), `prewarm` and `swap` (make bench runs them). `nextboot` takes 2 to 3 min alone, 5.5 min beside
# another scenario (preflight, driver: about 4 min each there).
SCENARIOS ?= fleet multinode default model engine hardening nextboot preflight driver wait
S ?= $(SCENARIOS)

# Every ansible/molecule call sees the checkout as llmserve.sglang and no injected fact vars.
RUN = $(DEVENV); TREE=$$(dev_tree); export PATH="$(VENV)/bin:$$PATH" ANSIBLE_COLLECTIONS_PATH="$$TREE" \
      MOLECULE_GLOB='molecule/*/molecule.yml' ANSIBLE_INJECT_FACT_VARS=false ANSIBLE_PIPELINING=true ANSIBLE_FORCE_COLOR=0 \
      PY_COLORS=0 NO_COLOR=1 ANSIBLE_NOCOLOR=1;

.PHONY: check validation-messages machine-check test-lint-sanity test-hosts-compat-sanity compat-sanity compat-unit fixtures engine-assets big-model gateway-assets model-assets wheelhouse-standin help venv hosts lint sanity unit rules-test compat functional build-check molecule test demo bench gpu-check clean

help:
	@echo "make check   - first run this: yamllint, ansible-lint and the unit tests, as any user, in a venv in the checkout (.venv)"
	@echo "make test    - every test: yamllint, ansible-lint, ansible-test sanity, pytest (unit tests and sanity on 2.20 too), build check, molecule"
	@echo "make compat  - ansible-test sanity and the unit tests on the oldest supported ansible-core (2.20)"
	@echo "make validation-messages - every validation message for a corpus of bad inputs vs docs/validation-messages.md (issue 47)"
	@echo "make rules-test - the sglang_monitoring role's Prometheus rules: promtool check rules and promtool test rules (tests/prometheus)"
	@echo "make demo    - run site.yml against the local demo test hosts (inventories/demo)"
	@echo "make bench   - benchmarks: readiness waits (stand-in and real SGLang), site.yml no-change one host vs two (demo hosts), model download role vs curl and no-change cost, rolling restart through the gateway (fleet), pre-warm, revision change by restart vs in-place weight swap (real CPU SGLang), controller CPU and memory per host at 1-8 hosts (docs/scale.md), a rollout through two gateway pools in the sliding window vs lockstep batches, the canary gate (a slow change caught, a good one rolled on)"
	@echo "make molecule S='default preflight' - run some molecule scenarios"
	@echo "make gpu-check - on a real NVIDIA host: facts, preflight, driver, device access, P2P; one JSON verdict"

venv:
	@$(DEVENV); dev_venv

# The contributor's quick path: lint and unit tests as any user, writing nothing outside the checkout but ~/.ansible
# and the temp directory: the venv is .venv (requirements-dev.txt, the first Python >= 3.12 that devenv.sh finds,
# LLMSERVE_PYTHON to choose), the collection tree the committed collections/. No root, podman, /var/cache, engine or
# gateway assets; the unit tests that need one of those say so in their skip reason.
check:
	@start=$$(date +%s); \
	  $(MAKE) --no-print-directory lint unit LLMSERVE_VENV="$(CURDIR)/.venv" LLMSERVE_TREE="$(CURDIR)/collections" \
	    LLMSERVE_VENV_REQUIREMENTS="$(CURDIR)/requirements-dev.txt" LLMSERVE_SYSTEM_PACKAGES=no PYTEST_ARGS=-rs; \
	  echo "make check: lint and unit tests passed in $$(( $$(date +%s) - start ))s"

# What test, demo and bench assume about the machine (root, Debian 12, Python 3.12, disk, loopback, the checkout's
# path), checked in a fraction of a second before minutes of work; LLMSERVE_MACHINE_CHECK=warn goes on regardless.
machine-check:
	@python3 tools/machine_check.py $(MACHINE_CHECK_FOR)

hosts:
	@$(HOSTS); th_host_setup; th_build_images

lint: venv
	@$(RUN) echo "== yamllint"; yamllint -s . && echo "yamllint: clean"
	@$(RUN) echo "== ansible-lint (production profile)"; ansible-lint --offline -q

sanity: venv
	@$(RUN) echo "== ansible-test sanity ($$(ansible --version | sed -n 1p))"; dev_ansible_test_pip; \
	  dir=$$(dev_sanity_tree); cd "$$dir"; ansible-test sanity --python 3.12 --color no 2>&1 | grep -v '^WARNING: Location'

# unit: the code alone (no engine, no gateway build); functional: real servers (SGLang on CPU, smg, stand-ins).
# The unit tests run in PYTEST_WORKERS processes (pytest-xdist); each test builds its own files and ports, so
# their order does not matter. PYTEST_WORKERS=0 runs them in this process. A file's tests stay in one process
# (--dist loadfile): several files render dozens of configurations in one module fixture (about 80 s for the
# SGLang unit's), which each process would otherwise render again; that took 4m48 instead of 4m03.
PYTEST_WORKERS ?= 2
unit: venv
	@$(RUN) echo "== pytest tests/unit ($$(ansible --version | sed -n 1p))"; \
	  pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) tests/unit

# The validation messages (issue 47): every user-facing validation entry point fed its corpus of bad inputs (the
# Python filters and model_check's check directly, the roles' YAML checks through one generated playbook per role on
# localhost, check mode) and compared with the committed docs/validation-messages.md; exits 1 with a diff. After an
# intended change of a message: python tools/validation_messages.py --write docs/validation-messages.md
validation-messages: venv
	@$(RUN) echo "== validation messages (docs/validation-messages.md)"; \
	  python tools/validation_messages.py --check docs/validation-messages.md

# The Prometheus rules of sglang_monitoring, rendered by the role itself with its defaults
# (tests/prometheus/render_rules.yml; the role's template task has promtool check the file), then checked and
# unit-tested with the real promtool of Debian 12's Prometheus 2.42 (tools/prometheus/get_promtool.sh: extracted
# from the package, never installed).
rules-test: venv
	@$(RUN) echo "== promtool check rules / test rules (roles/sglang_monitoring, tests/prometheus)"; \
	  promtool=$$(bash tools/prometheus/get_promtool.sh); out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	  ansible-playbook -i localhost, -c local -e "ansible_python_interpreter=$(VENV)/bin/python" \
	    -e "llmserve_rules_test_dir=$$out llmserve_rules_test_promtool=$$promtool" tests/prometheus/render_rules.yml \
	    >"$$out/render.log" 2>&1 || { cat "$$out/render.log"; exit 1; }; \
	  "$$promtool" check rules "$$out/llmserve_sglang.rules.yml"; \
	  cp tests/prometheus/*.test.yml "$$out/"; cd "$$out"; "$$promtool" test rules *.test.yml

# The same sanity and unit tests on the oldest ansible-core that meta/runtime.yml admits (requirements-compat.txt).
# Its ansible-test keeps its sanity virtualenvs under a home of its own (COMPAT_HOME; pip's configuration and cache
# stay the user's), so that make test can run it beside the sanity test of the newest ansible-core: the two would
# otherwise build the same ~/.ansible/test/venv directories at once.
COMPAT_HOME ?= $(LLMSERVE_CACHE)/home-core-compat
COMPAT = LLMSERVE_VENV="$(LLMSERVE_COMPAT_VENV)" LLMSERVE_VENV_REQUIREMENTS="$(CURDIR)/requirements-compat.txt"
compat: compat-sanity compat-unit

compat-sanity:
	@mkdir -p "$(COMPAT_HOME)"; XDG_CONFIG_HOME="$${XDG_CONFIG_HOME:-$$HOME/.config}" \
	  XDG_CACHE_HOME="$${XDG_CACHE_HOME:-$$HOME/.cache}" HOME="$(COMPAT_HOME)" $(MAKE) --no-print-directory sanity $(COMPAT)

# without the differential tests (tests/unit/conftest.py): they compare two implementations, not ansible-core's
compat-unit:
	@LLMSERVE_UNIT_SKIP_DIFFERENTIAL=1 $(MAKE) --no-print-directory unit $(COMPAT)

functional: venv engine-assets gateway-assets model-assets
	@$(RUN) echo "== pytest tests/functional (real SGLang on CPU, real smg, stand-ins)"; \
	  pytest -q -p no:cacheprovider tests/functional

# The tarball as Galaxy takes it: it installs, ansible-doc lists its plugins and roles, ansible-builder reads its EE
# definition, and galaxy-importer imports it with no error or warning (tools/galaxy_importer/import_check.sh; offline,
# without ansible-test's containers), from a venv of its own.
build-check: venv
	@$(RUN) echo "== ansible-galaxy collection build/install + ansible-doc"; \
	  out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	  ansible-galaxy collection build --force --output-path "$$out" . >/dev/null; \
	  ansible-galaxy collection install --force -p "$$out/installed" "$$out"/llmserve-sglang-*.tar.gz >/dev/null; \
	  ANSIBLE_COLLECTIONS_PATH="$$out/installed" ansible-doc -l llmserve.sglang | tee "$$out/doc.txt"; \
	  ANSIBLE_COLLECTIONS_PATH="$$out/installed" ansible-doc -t role -l llmserve.sglang; \
	  ansible-builder create -f meta/execution-environment.yml --output-filename Containerfile --context "$$out/ee" >/dev/null; \
	  test -s "$$out/ee/Containerfile"; echo "ansible-builder create: Containerfile written"; \
	  echo "== galaxy-importer"; \
	  LLMSERVE_VENV="$(LLMSERVE_GALAXY_IMPORTER_VENV)" LLMSERVE_SYSTEM_PACKAGES=no \
	    LLMSERVE_VENV_REQUIREMENTS="$(CURDIR)/tools/galaxy_importer/requirements.txt" dev_venv; \
	  bash tools/galaxy_importer/import_check.sh "$(LLMSERVE_GALAXY_IMPORTER_VENV)" "$$out"/llmserve-sglang-*.tar.gz; \
	  echo "build-check: $$(ls "$$out"/llmserve-sglang-*.tar.gz | xargs -n1 basename) installs; $$(wc -l < "$$out/doc.txt") modules listed"

model-assets:
	@echo "== a Hugging Face mirror for tests: olah venv, mirror directory"
	@bash tools/model/install_olah_venv.sh "$(LLMSERVE_OLAH_VENV)" >/dev/null
	@mkdir -p "$(LLMSERVE_CACHE)/model-mirror"
	@echo "model assets: $(LLMSERVE_OLAH_VENV), $(LLMSERVE_CACHE)/model-mirror"

engine-assets:
	@echo "== real SGLang on CPU: wheelhouse, venv, tiny model"
	@bash tools/engine/build_wheelhouse.sh "$(LLMSERVE_SGLANG_WHEELHOUSE)" >/dev/null
	@bash tools/engine/install_sglang_venv.sh "$(LLMSERVE_SGLANG_VENV)" "$(LLMSERVE_SGLANG_WHEELHOUSE)" >/dev/null
	@test -f "$(LLMSERVE_SGLANG_MODEL)/config.json" || \
	  HF_HUB_OFFLINE=1 "$(LLMSERVE_SGLANG_VENV)/bin/python" tools/engine/make_tiny_model.py "$(LLMSERVE_SGLANG_MODEL)" >/dev/null
	@echo "engine assets: $(LLMSERVE_SGLANG_WHEELHOUSE), $(LLMSERVE_SGLANG_VENV), $(LLMSERVE_SGLANG_MODEL)"

# A model of 2 GiB of weights for the pre-warm benchmark (molecule/prewarm; make bench builds it too).
big-model:
	@test -f "$(LLMSERVE_CACHE)/models/big-llama/config.json" || { \
	  HF_HUB_OFFLINE=1 "$(LLMSERVE_SGLANG_VENV)/bin/python" tools/engine/make_tiny_model.py \
	    "$(LLMSERVE_CACHE)/models/big-llama.partial" --size-mib 2048 >/dev/null && \
	  mv "$(LLMSERVE_CACHE)/models/big-llama.partial" "$(LLMSERVE_CACHE)/models/big-llama"; }
	@echo "big model: $(LLMSERVE_CACHE)/models/big-llama"

gateway-assets:
	@echo "== smg (SGLang model gateway) 1.13.0: wheelhouse, venv"
	@bash tools/gateway/install_smg_venv.sh "$(LLMSERVE_SMG_VENV)" "$(LLMSERVE_SMG_WHEELHOUSE)" >/dev/null
	@echo "gateway assets: $(LLMSERVE_SMG_WHEELHOUSE), $(LLMSERVE_SMG_VENV)"

# Fixture host trees, rebuilt only when the manifests change (running test hosts bind-mount the directory).
fixtures:
	@dst="$(LLMSERVE_CACHE)/fixtures"; stamp=$$(cat tests/fixtures/hosts/*.yml tests/fixtures/hosts/materialize.py | sha256sum | cut -c1-16); \
	if [ "$$(cat "$$dst/.stamp" 2>/dev/null)" != "$$stamp" ]; then \
	  mkdir -p "$$dst"; find "$$dst" -mindepth 1 -delete; \
	  python3 tests/fixtures/hosts/materialize.py "$$dst" >/dev/null; echo "$$stamp" > "$$dst/.stamp"; \
	fi

wheelhouse-standin:
	@mkdir -p $(LLMSERVE_CACHE)/wheelhouse/standin; rm -f $(LLMSERVE_CACHE)/wheelhouse/standin/*.whl; \
	  bash tools/standin/build_wheel.sh $(LLMSERVE_CACHE)/wheelhouse/standin >/dev/null

molecule: venv hosts fixtures wheelhouse-standin engine-assets gateway-assets model-assets
	@$(RUN) $(HOSTS); th_teardown $(S); trap 'th_teardown $(S)' EXIT; \
	  for s in $(S); do rm -f $(LLMSERVE_CACHE)/molecule-logs/molecule-$$s.result; done; \
	  bash tools/molecule_lanes.sh $(LLMSERVE_CACHE)/molecule-logs $(S)

# make test: what CI runs (.ci/run), one stage after another, except that two sequences that each leave a core idle
# much of the time run side by side (make -j2, each one's output printed whole when it ends): ansible-lint and
# sanity on the newest ansible-core, beside the test hosts' images (apt, debootstrap: mostly network and disk) and
# sanity on the oldest. The venv comes first: both sides would install the host tools through apt at once.
test: MACHINE_CHECK_FOR := test
test: machine-check
	@$(MAKE) --no-print-directory venv
	@$(MAKE) --no-print-directory -j2 --output-sync=recurse test-lint-sanity test-hosts-compat-sanity
	@$(MAKE) --no-print-directory unit compat-unit rules-test functional build-check molecule

test-lint-sanity:
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory sanity

test-hosts-compat-sanity:
	@$(MAKE) --no-print-directory hosts
	@$(MAKE) --no-print-directory compat-sanity

demo: MACHINE_CHECK_FOR := demo
demo: machine-check venv hosts fixtures wheelhouse-standin engine-assets
	@$(RUN) bash tools/demo.sh

bench: MACHINE_CHECK_FOR := bench
bench: machine-check venv hosts fixtures wheelhouse-standin engine-assets big-model gateway-assets model-assets
	@$(RUN) bash tools/bench/run.sh

# On a real NVIDIA host, with the host's own Python (torch's, for the CUDA runtime); no Ansible, no network.
# GPU_CHECK_ARGS passes options (see tools/gpu/README.md); PYTHON picks another interpreter.
PYTHON ?= python3
gpu-check:
	@$(PYTHON) tools/gpu/gpu_check.py $(GPU_CHECK_ARGS)

clean:
	rm -rf build reports tests/output
