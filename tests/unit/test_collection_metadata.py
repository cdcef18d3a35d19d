"""The collection's metadata stays what Galaxy, ansible-lint and ansible-builder expect."""

import pathlib
import re

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
    assert {"tests", "molecule", ".ci", "*.tar.gz"} <= ignored
    # the EE requirement files must ship, or ansible-builder cannot read them from an installed collection
    assert not {"requirements.txt", "bindep.txt", "meta"} & ignored


def test_runtime_requires_ansible():
    assert load("meta/runtime.yml")["requires_ansible"] == ">=2.21.0"


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


def test_dev_requirements_are_exact_pins():
    lines = [line.strip() for line in (ROOT / "requirements-dev.txt").read_text().splitlines()]
    pins = [line for line in lines if line and not line.startswith("#")]
    assert pins, "requirements-dev.txt lists no packages"
    for line in pins:
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.+]*", line), line
    assert any(line.startswith("ansible-core==2.21.") for line in pins)
