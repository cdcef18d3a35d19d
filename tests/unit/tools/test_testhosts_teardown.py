"""th_teardown (tools/hosts/testhosts.sh) removes the scenarios' networks only, never an operator's own.

A fake podman on PATH records what it is asked to do: `network rm -f` also removes every container on that
network, so deleting a network the test suite did not make would take other people's containers with it.
"""

from __future__ import annotations

import os
import re
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "tools", "hosts", "testhosts.sh")

FAKE_PODMAN = """#!/bin/bash
echo "$*" >> "$PODMAN_LOG"
case "$1 $2" in
  "network ls") printf 'podman\\nmn-net\\noperators-own\\nllmserve-fleet\\n' ;;
  "network exists") case "$3" in mn-net|operators-own|llmserve-fleet) exit 0 ;; *) exit 1 ;; esac ;;
esac
exit 0
"""


def teardown(tmp_path, *prefixes):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "podman").write_text(FAKE_PODMAN)
    (bindir / "podman").chmod(0o755)
    log = tmp_path / "podman.log"
    log.write_text("")
    env = dict(os.environ, PATH="%s:%s" % (bindir, os.environ["PATH"]), PODMAN_LOG=str(log))
    subprocess.run(["bash", "-c", 'source "$0"; th_teardown "$@"', SCRIPT] + list(prefixes), env=env, check=True,
                   timeout=60)
    return log.read_text().splitlines()


def declared_networks():
    names = set()
    for scenario in os.listdir(os.path.join(ROOT, "molecule")):
        path = os.path.join(ROOT, "molecule", scenario, "molecule.yml")
        if os.path.isfile(path):
            with open(path) as handle:
                names.update(re.findall(r"^\s*network:\s*(\S+)\s*$", handle.read(), re.M))
    return names


def test_only_the_networks_the_scenarios_declare_are_removed(tmp_path):
    calls = teardown(tmp_path)
    removed = {call.split()[-1] for call in calls if call.startswith("network rm")}
    assert removed == declared_networks() & {"mn-net", "llmserve-fleet", "operators-own"}
    assert "operators-own" not in removed and "mn-net" in removed


def test_with_a_prefix_no_network_is_touched(tmp_path):
    calls = teardown(tmp_path, "model")
    assert not [call for call in calls if call.startswith("network")]
    assert any("name=^model-" in call for call in calls)
