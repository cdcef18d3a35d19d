# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The sglang_gateway_* filters: registered, documented, and failing with the rules' messages."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.llmserve.sglang.plugins.filter import sglang_gateway as gateway_filter
from ansible_collections.llmserve.sglang.tests.unit.plugins.plugin_utils.test_gateway_config import ADMIN, base

FILTERS = gateway_filter.FilterModule().filters()
FILTER_DIR = os.path.dirname(gateway_filter.__file__)


def test_filters_are_registered():
    assert set(FILTERS) == {"sglang_gateway_validate", "sglang_gateway_render", "sglang_gateway_workers_check"}


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_every_filter_has_its_documentation(name):
    with open(os.path.join(FILTER_DIR, name + ".yml"), encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    assert doc["DOCUMENTATION"]["name"] == name
    assert doc["DOCUMENTATION"]["options"]["_input"]["required"] is True
    assert "llmserve.sglang." + name in doc["EXAMPLES"]
    assert "_value" in doc["RETURN"]


def test_validate_and_render():
    assert FILTERS["sglang_gateway_validate"](base()) == []
    assert FILTERS["sglang_gateway_render"](base())["worker_urls"] == ["http://10.0.0.11:30000",
                                                                       "http://10.0.0.12:30000"]
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS["sglang_gateway_render"](base(admin_api_key="", policy="nope"))
    message = str(info.value)
    assert "sglang_gateway_admin_api_key: must be set" in message and "sglang_gateway_policy: must be one of" in message
    assert ADMIN not in message


def test_bad_input_types_fail_clearly():
    for name in ("sglang_gateway_validate", "sglang_gateway_render"):
        with pytest.raises(AnsibleFilterError, match="%s: the input must be a dict of role variables, got list" % name):
            FILTERS[name]([])
    with pytest.raises(AnsibleFilterError, match="the expected URLs must be a list, got str"):
        FILTERS["sglang_gateway_workers_check"]([], "http://x:1")
    assert FILTERS["sglang_gateway_workers_check"]([{"url": "http://x:1", "is_healthy": True}], ["http://x:1"])["ok"]
