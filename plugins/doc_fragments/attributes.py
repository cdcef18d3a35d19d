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
    # controller (and may run other modules on the host).
    CONTROLLER_ACTION = r"""
options: {}
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
"""
