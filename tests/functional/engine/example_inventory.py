# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The example inventory read the way the sglang_server role sees it, for the real-parser tests: the variable files
in order (later ones win), its vault decrypted with the example vault password, and the role's validate.yml tasks."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / "roles" / "sglang_server"
INVENTORY = ROOT / "inventories" / "example"


def load_example(var_files):
    """``(loader, variables, validate_tasks)``: an Ansible DataLoader that can open the example vault, the merged
    variables of ``var_files`` (trusted as templates, as Ansible trusts inventory files) and validate.yml's tasks."""
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.parsing.vault import VaultSecret  # pylint: disable=import-outside-toplevel

    loader = DataLoader()
    password = (INVENTORY / "vault-password.example.txt").read_bytes().strip()
    loader.set_vault_secrets([("default", VaultSecret(password))])
    variables = {}
    for path in var_files:
        variables.update(loader.load_from_file(str(path), trusted_as_template=True) or {})
    tasks = loader.load_from_file(str(ROLE / "tasks" / "validate.yml"), trusted_as_template=True)
    return loader, variables, tasks
