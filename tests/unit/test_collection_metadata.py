"""The collection's metadata stays what Galaxy, ansible-lint and ansible-builder expect."""

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load(rel):
    return yaml.safe_load((ROOT / rel).read_text())


def test_galaxy_identity_and_license():
    galaxy = load("galaxy.yml")
    assert (galaxy["namespace"], galaxy["name"]) == ("llmserve", "sglang")
    assert re.fullmatch(r"\d+\.\d+\.\d+", galaxy["version"])
    assert galaxy["license"] == ["GPL-3.0-or-later"]
    # galaxy[tags]: at least one of the tags Galaxy's importer requires
    assert {"infrastructure", "linux", "tools"} & set(galaxy["tags"])
    for key in ("repository", "documentation", "issues"):
        assert galaxy[key].startswith("https://")


def test_build_ignores_test_and_ci_material():
    ignored = set(load("galaxy.yml")["build_ignore"])
    assert {"tests", "tools", "molecule", ".ci", "*.tar.gz"} <= ignored
    # the EE requirement files must ship, or ansible-builder cannot read them from an installed collection
    assert not {"requirements.txt", "bindep.txt", "meta"} & ignored


def test_runtime_requires_ansible_is_the_tested_floor():
    # the floor is the ansible-core `make compat` runs sanity and the unit tests on, and every role says the same
    floor = load("meta/runtime.yml")["requires_ansible"]
    assert floor == ">=2.20.0"
    compat = (ROOT / "requirements-compat.txt").read_text().splitlines()
    assert any(line.startswith("ansible-core==2.20.") for line in compat)
    for meta in sorted(ROOT.glob("roles/*/meta/main.yml")):
        assert load(str(meta.relative_to(ROOT)))["galaxy_info"]["min_ansible_version"] == "2.20", meta


def test_execution_environment_points_at_existing_files():
    ee = load("meta/execution-environment.yml")
    assert ee["version"] == 3
    deps = ee["dependencies"]
    for key in ("python", "system"):
        # resolved from meta/ by `ansible-builder create -f meta/...`, from the root by introspection
        assert (ROOT / "meta" / deps[key]).is_file()
        assert (ROOT / deps[key]).is_file()
    runtime = {line.split(">=")[0] for line in (ROOT / "requirements.txt").read_text().splitlines()
               if line and not line.startswith("#")}
    assert {"jmespath", "netaddr"} <= runtime


@pytest.mark.parametrize("name, core", [("requirements-dev.txt", "2.21"), ("requirements-compat.txt", "2.20"),
                                        ("tools/galaxy_importer/requirements.txt", "2.21")])
def test_dev_requirements_are_exact_pins(name, core):
    lines = [line.strip() for line in (ROOT / name).read_text().splitlines()]
    pins = [line for line in lines if line and not line.startswith("#")]
    assert pins, f"{name} lists no packages"
    for line in pins:
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.+]*", line), line
    assert any(line.startswith(f"ansible-core=={core}.") for line in pins)


def pins(rel):
    return dict(line.strip().split("==", 1) for line in (ROOT / rel).read_text().splitlines()
                if line.strip() and not line.startswith("#"))


def test_galaxy_importer_lints_with_the_tools_of_the_dev_venv():
    # make build-check's galaxy-importer runs its own ansible-core and ansible-lint: the same as make lint's, so the
    # two cannot disagree about the collection
    importer, dev = pins("tools/galaxy_importer/requirements.txt"), pins("requirements-dev.txt")
    assert "galaxy_importer" in importer or "galaxy-importer" in importer
    for name in ("ansible-core", "ansible-lint", "ansible-builder", "yamllint"):
        assert importer[name] == dev[name], name


def test_ansible_lint_config_ships_for_galaxy():
    # Galaxy's importer runs ansible-lint in the extracted tarball: without the collection's .ansible-lint it lints
    # changelogs/fragments/*playbooks*.yml as playbooks and calls requires_ansible >=2.20 unsupported
    assert ".ansible-lint" not in load("galaxy.yml")["build_ignore"]
    lint = load(".ansible-lint")
    assert "changelogs/" in lint["exclude_paths"]
    floor = load("meta/runtime.yml")["requires_ansible"].removeprefix(">=").rsplit(".", 1)[0]
    assert floor in lint["supported_ansible_also"]
