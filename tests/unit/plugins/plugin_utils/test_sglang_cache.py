# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The compile cache layout: one directory per unit, SGLang version and architecture tag."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.filter.sglang import sglang_cache_layout
from ansible_collections.llmserve.sglang.plugins.plugin_utils import sglang_cache as sc
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_args import render_server_argv
from ansible.errors import AnsibleFilterError

H100 = {"chip": "GH100", "device_id": "0x2330"}
A100 = {"chip": "GA100", "device_id": "0x20b2"}
A40 = {"chip": "GA102", "device_id": "0x2235"}
NEW = {"chip": None, "device_id": "0x2BB5"}


@pytest.mark.parametrize("argv, gpus, expected", [
    (["--device", "cpu"], [H100], "cpu-x86_64"),
    (["--device=cpu"], [], "cpu-x86_64"),
    ([], [H100, H100], "sm90"),
    (["--device", "cuda"], [H100], "sm90"),
    # the family is not enough: GA100 and GA102 are both Ampere
    ([], [A100], "sm80"),
    ([], [A40], "sm86"),
    ([], [A40, A100, A40], "sm80+sm86"),
    ([], [NEW], "pci-2bb5"),
    ([], [], "cpu-x86_64"),
])
def test_arch_tag(argv, gpus, expected):
    assert sc.arch_tag(argv, {"gpus": gpus}, "x86_64") == expected


def test_two_versions_and_two_arches_get_disjoint_cache_environments():
    layouts = [sglang_cache_layout("/var/cache/llmserve-sglang", "sglang", version, argv, {"gpus": [H100]}, "x86_64")
               for version in ("0.5.22", "0.5.23") for argv in ([], ["--device", "cpu"])]
    dirs = [layout["dir"] for layout in layouts]
    assert dirs == ["/var/cache/llmserve-sglang/sglang/0.5.22/sm90", "/var/cache/llmserve-sglang/sglang/0.5.22/cpu-x86_64",
                    "/var/cache/llmserve-sglang/sglang/0.5.23/sm90", "/var/cache/llmserve-sglang/sglang/0.5.23/cpu-x86_64"]
    for index, layout in enumerate(layouts):
        assert set(layout["env"]) == set(sc.CACHE_ENV_NAMES)
        for name, value in layout["env"].items():
            if name == "CUDA_CACHE_MAXSIZE":
                continue
            assert value.startswith(layout["dir"] + "/")
            for other in layouts[:index] + layouts[index + 1:]:
                assert not value.startswith(other["dir"] + "/")
    assert layouts[0]["host_arches"] == ["sm90", "cpu-x86_64"]
    assert layouts[0]["unit_dir"] == "/var/cache/llmserve-sglang/sglang"


@pytest.mark.parametrize("root, unit, version, message", [
    ("relative", "sglang", "0.5.23", "must be an absolute path"),
    ("/", "sglang", "0.5.23", "must be an absolute path other than /"),
    ("/var/cache/x", "sglang", "../0.5.23", "the SGLang version '../0.5.23' cannot name a cache directory"),
    ("/var/cache/x", "a/b", "0.5.23", "the unit name 'a/b' cannot name"),
])
def test_bad_layout_values_are_refused(root, unit, version, message):
    with pytest.raises(AnsibleFilterError, match="sglang_cache_layout: .*" + message.replace("(", r"\(")
                       .replace(".", r"\.")):
        sglang_cache_layout(root, unit, version, [], {}, "x86_64")


@pytest.mark.parametrize("name", sorted(sc.CACHE_ENV_NAMES))
def test_user_env_may_not_set_a_cache_variable(name):
    cfg = {"model_path": "/m", "base_env": {"HOME": "/var/lib/sglang"}, "env": {name: "/srv/x"}}
    with pytest.raises(Exception, match="sglang_server_env.%s: is refused" % name):
        render_server_argv(cfg)


def test_base_env_holds_no_cache_variable_and_user_env_other_names_pass():
    result = render_server_argv({"model_path": "/m", "base_env": {"HOME": "/var/lib/sglang"},
                                 "env": {"HF_HUB_OFFLINE": "1"}})
    assert result["env"] == {"HOME": "/var/lib/sglang", "HF_HUB_OFFLINE": "1"}
