# -*- coding: utf-8 -*-
# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations


class ModuleDocFragment(object):
    # What holds for every module of the collection. The descriptions come from
    # ansible.builtin.action_common_attributes, which every module extends as well; a module states
    # only what differs or what it adds (details, facts).
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

    # A module that is only documentation for an action plugin of the same name, which does the work on the
    # controller (and may run other modules on the host). In place of ansible.builtin.action_common_attributes.flow,
    # with its words.
    CONTROLLER_ACTION = r"""
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
  async:
    description: Supports being used with the C(async) keyword.
    support: none
  bypass_host_loop:
    description:
      - Forces a 'global' task that does not execute per host, this bypasses per host templating and serial,
        throttle and other loop considerations.
      - Conditionals will work as if C(run_once) is being used, variables used will be from the first available host.
      - This action will not work normally outside of lockstep strategies.
    support: none
"""
