# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`ansible-playbook -i inventories/<yours> site.yml` from a clone's root: each operator playbook has a wrapper there,
the committed collections/ tree resolves llmserve.sglang to the checkout with nothing on the collection path, and
the built tarball ships neither (an installed collection has llmserve.sglang.site)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.path.dirname(sys.executable)
OPERATOR_PLAYBOOKS = ("site", "preflight", "restart", "rollback", "gateway", "monitoring")


def run(args, tmp_path, collections_path):
    # ANSIBLE_COLLECTIONS_PATH names an empty directory: only the playbook-adjacent collections/ can provide
    # llmserve.sglang, as for a user who just cloned the repository
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_path), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"))
    env.pop("ANSIBLE_COLLECTIONS_PATHS", None)
    return subprocess.run([os.path.join(BIN, "ansible-playbook")] + args, capture_output=True, text=True,
                          timeout=300, check=False, cwd=ROOT, env=env)


@pytest.mark.parametrize("name", OPERATOR_PLAYBOOKS)
def test_each_root_playbook_imports_its_playbook(name):
    with open(os.path.join(ROOT, name + ".yml")) as handle:
        plays = yaml.safe_load(handle)
    assert len(plays) == 1 and plays[0]["ansible.builtin.import_playbook"] == "playbooks/%s.yml" % name
    assert set(plays[0]) == {"name", "ansible.builtin.import_playbook"}


def test_the_committed_tree_links_the_checkout():
    link = os.path.join(ROOT, "collections", "ansible_collections", "llmserve", "sglang")
    assert os.path.islink(link) and os.readlink(link) == os.path.join("..", "..", "..")
    assert os.path.realpath(link) == os.path.realpath(ROOT)


@pytest.mark.parametrize("name", OPERATOR_PLAYBOOKS)
def test_syntax_check_from_the_root_with_nothing_on_the_collection_path(tmp_path, name):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run(["-i", "inventories/demo", "--syntax-check", name + ".yml"], tmp_path, empty)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_list_tasks_from_the_root_lists_what_the_collection_playbook_lists(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    root = run(["-i", "inventories/demo", "--list-tasks", "site.yml"], tmp_path, empty)
    assert root.returncode == 0, root.stdout[-3000:] + root.stderr[-3000:]
    # the playbooks run the sglang_rollout role, which includes the steps' roles when it runs
    assert "llmserve.sglang.sglang_rollout : " in root.stdout
    direct = run(["-i", "inventories/demo", "--list-tasks", "playbooks/site.yml"], tmp_path,
                 os.path.join(ROOT, "collections"))
    assert direct.returncode == 0, direct.stdout[-3000:] + direct.stderr[-3000:]

    def plays(text):
        return [line for line in text.splitlines() if not line.startswith("playbook: ")]
    assert plays(root.stdout) == plays(direct.stdout)


def test_the_tarball_ships_the_collection_playbooks_and_not_the_clone_wrappers(tmp_path):
    result = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path",
                             str(tmp_path), ROOT], capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    (tarball,) = tmp_path.glob("llmserve-sglang-*.tar.gz")
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    for name in OPERATOR_PLAYBOOKS:
        assert "playbooks/%s.yml" % name in names
        assert name + ".yml" not in names
    assert not [n for n in names if n == "collections" or n.startswith(("collections/", ".venv"))]
