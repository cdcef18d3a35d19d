# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Importing a filter file costs only that file.

To resolve one collection filter, Ansible imports every file of plugins/filter/ and calls its
``FilterModule().filters()``, in each forked worker. A plugin_utils or module_utils import at the top of any
filter file is then paid by every task that uses any of the collection's filters, on every host.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.llmserve.sglang.plugins.filter import checks
from ansible_collections.llmserve.sglang.tests.unit.collection_tree import collections_path

COLLECTION = "ansible_collections.llmserve.sglang"
FILTER_DIR = os.path.dirname(checks.__file__)
FILTER_FILES = sorted(name[:-3] for name in os.listdir(FILTER_DIR) if name.endswith(".py"))
HELPERS = (COLLECTION + ".plugins.plugin_utils", COLLECTION + ".plugins.module_utils")

# Runs in a fresh interpreter: which helper modules each filter file (in turn) brought in.
_IMPORT_EACH = """
import importlib, json, sys
package, helpers = sys.argv[1], tuple(sys.argv[2].split(","))
loaded, seen = {}, set()
for name in sys.argv[3:]:
    importlib.import_module(package + "." + name).FilterModule().filters()
    now = set(m for m in sys.modules if m.startswith(helpers))
    loaded[name] = sorted(now - seen)
    seen |= now
print(json.dumps(loaded))
"""

# Runs in a fresh interpreter: what Ansible's templating loads to resolve one collection filter.
_RESOLVE_ONE = """
import json, os, sys
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[os.environ["ANSIBLE_COLLECTIONS_PATH"]])._install()
templar = Templar(loader=DataLoader(), variables={"rules": {"port": [9, 0, 5]}})
result = templar.template(trust_as_template("{{ rules | llmserve.sglang.range_problems }}"))
helpers = tuple(sys.argv[2].split(","))
print(json.dumps({"result": list(result), "loaded": sorted(m for m in sys.modules if m.startswith(helpers))}))
"""

# Runs in a fresh interpreter: what importing one helper module loads.
_IMPORT_HELPER = """
import importlib, json, sys
importlib.import_module(sys.argv[3])
print(json.dumps(sorted(m for m in sys.modules if m.startswith(tuple(sys.argv[2].split(","))))))
"""


def _run(tmp_path, code, *args):
    tree = collections_path()
    env = dict(os.environ, PYTHONPATH=tree, ANSIBLE_COLLECTIONS_PATH=tree, ANSIBLE_HOME=str(tmp_path / "home"))
    argv = [sys.executable, "-c", code, checks.__name__.rpartition(".")[0], ",".join(HELPERS)] + list(args)
    result = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_every_filter_file_is_checked():
    # a renamed directory or file must not leave the check below with nothing to import
    assert {"checks", "deploy_report", "iommu_preflight", "nvidia", "sglang"} <= set(FILTER_FILES)


def test_filter_files_import_no_helper_module(tmp_path):
    loaded = _run(tmp_path, _IMPORT_EACH, *FILTER_FILES)
    assert set(loaded) == set(FILTER_FILES)
    offenders = dict((name, modules) for name, modules in loaded.items() if modules)
    assert offenders == {}, "import these inside the filter functions: %s" % offenders


def test_ansible_resolves_one_filter_with_its_own_helper_only(tmp_path):
    answer = _run(tmp_path, _RESOLVE_ONE)
    assert answer["result"] == ["port: must be an integer from 0 to 5, got 9"]
    # what the filter's own module needs, nothing that another filter file needs
    assert answer["loaded"] == _run(tmp_path, _IMPORT_HELPER, COLLECTION + ".plugins.plugin_utils.ranges")


def test_sglang_default_prefix_is_the_one_of_sglang_args():
    # the filter file writes the prefix out instead of importing it
    from ansible_collections.llmserve.sglang.plugins.filter import sglang
    from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_args

    assert sglang.DEFAULT_PREFIX == sglang_args.DEFAULT_PREFIX
