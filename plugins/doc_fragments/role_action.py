# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    # The action of one role that turns its variables into the checked and rendered result (server_config,
    # gateway_config, monitoring_config, nvidia_driver_config: plugins/plugin_utils/role_action.py); used with
    # llmserve.sglang.attributes.controller_action.
    DOCUMENTATION = r"""
options:
  variables:
    description:
      - Variable name to value, used instead of the host's variable of that name (for a play outside the role, or a
        test). The inventory variables the action reads (C(inventory_hostname), C(ansible_host), C(ansible_facts),
        C(hostvars), C(groups), and the role's own private ones) may be given too.
    type: dict
    default: {}
attributes:
  check_mode:
    support: full
    details:
      - Nothing on any host is read or changed, in check mode or not.
notes:
  - This module is only documentation; the work is done by the action plugin of the same name on the controller.
"""

    RETURN = r"""
problems:
  description: Every broken rule, each naming its variable, all at once (also the failure's C(msg)).
  returned: failure of the validation
  type: list
  elements: str
"""
