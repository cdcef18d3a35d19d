# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What --diff shows of a deployment's files: a unified diff, every secret masked on both sides."""

from __future__ import annotations

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils.file_diff import (
    MAX_DIFF_SIZE,
    directory_diff,
    file_diff,
    mask_text,
)

UNIT = """[Service]
EnvironmentFile=-/etc/sglang/sglang.env
ExecStart="/opt/sglang/venv/bin/python" "-m" "sglang.launch_server" "--tp-size" "2" %s"--config" "/etc/sglang/sglang.yaml"
Restart=on-failure
"""


def test_an_exec_start_change_is_shown_as_a_changed_line():
    before = (UNIT % "").encode()
    after = (UNIT % '"--speculative-algorithm" "EAGLE" ').encode()
    entry = file_diff("/etc/systemd/system/sglang.service", before, after)
    lines = entry["prepared"].splitlines()
    assert lines[:2] == ["--- before: /etc/systemd/system/sglang.service",
                         "+++ after: /etc/systemd/system/sglang.service"]
    assert lines[2] == "@@ -1,4 +1,4 @@"
    assert "-" + (UNIT % "").splitlines()[2] in lines
    assert "+" + (UNIT % '"--speculative-algorithm" "EAGLE" ').splitlines()[2] in lines
    assert " Restart=on-failure" in lines, "context lines are kept"


def test_an_api_key_in_the_config_file_is_masked_old_and_new():
    before = b"# managed\napi-key: sk-old-key-1234\n"
    after = b"# managed\napi-key: sk-new-key-5678\nadmin-api-key: adm-9999\n"
    prepared = file_diff("/etc/sglang/sglang.yaml", before, after)["prepared"]
    for secret in ("sk-old-key-1234", "sk-new-key-5678", "adm-9999"):
        assert secret not in prepared
    # the rotated key still shows as a changed line, without its value
    assert "-api-key: ********\n+api-key: ********\n+admin-api-key: ********\n" in prepared


@pytest.mark.parametrize("line, shown", [
    ('HF_TOKEN="hf_abc\\"def"', "HF_TOKEN=********"),
    ("LLMSERVE_SMG_ADMIN_API_KEY=\"k1\"", "LLMSERVE_SMG_ADMIN_API_KEY=********"),
    ("export HUGGING_FACE_HUB_TOKEN=hf_x", "export HUGGING_FACE_HUB_TOKEN=********"),
    ('"api_key": "sk-json",', '"api_key": ********'),
    ('Environment="OPENAI_API_KEY=sk-env"', 'Environment="OPENAI_API_KEY=********"'),
    ("index: https://user:pw@pypi.example/simple", "index: https://********@pypi.example/simple"),
    ("MODEL=/models/llama", "MODEL=/models/llama"),
    ("max-total-tokens: 4096", "max-total-tokens: 4096"),
])
def test_lines_naming_a_secret_are_masked_and_others_kept(line, shown):
    assert mask_text(line + "\n") == shown + "\n"


def test_values_continued_below_a_secret_key_are_masked():
    text = ("api-key:\n- sk-one\n- sk-two\nport: 30000\nssl-keyfile-password: |\n  line one\n  line two\n"
            "host: 0.0.0.0\nHF_TOKEN=hf_part\\\nhf_rest\nX=1\n")
    masked = mask_text(text)
    for secret in ("sk-one", "sk-two", "line one", "line two", "hf_part", "hf_rest"):
        assert secret not in masked
    assert masked.splitlines() == ["api-key:", "********", "********", "port: 30000", "ssl-keyfile-password: ********",
                                   "  ********", "  ********", "host: 0.0.0.0", "HF_TOKEN=********", "********",
                                   "X=1"]


def test_literal_secrets_are_masked_wherever_they_appear():
    before = b"[Service]\nDescription=served with s3cr3t-value inside\n"
    after = b"[Service]\nDescription=served with s3cr3t-value inside, again\n"
    prepared = file_diff("/x", before, after, secrets=["s3cr3t-value"])["prepared"]
    assert "s3cr3t-value" not in prepared and "Description=served with ******** inside, again" in prepared


def test_a_new_file_and_changed_attributes_are_named_in_the_headers():
    entry = file_diff("/etc/sglang/sglang.env", None, b'HF_TOKEN="hf_new"', {},
                      {"owner": "root", "group": "root", "mode": "0600"})
    assert entry["before_header"] == "/etc/sglang/sglang.env (absent)"
    assert entry["after_header"] == "/etc/sglang/sglang.env (owner root, group root, mode 0600)"
    assert entry["prepared"].endswith("@@ -0,0 +1 @@\n+HF_TOKEN=********\n\\ No newline at end of file\n")
    assert "hf_new" not in entry["prepared"]
    same = file_diff("/etc/x", b"a\n", b"a\n", {"mode": "0644"}, {"mode": "0640"})
    assert same["prepared"] == "--- before: /etc/x (mode 0644)\n+++ after: /etc/x (mode 0640)\n"


def test_binary_and_large_files_are_named_not_shown():
    assert "not UTF-8" in file_diff("/b", b"\xff\xfe", b"x")["prepared"]
    big = b"HF_TOKEN=hf_secret\n" * (MAX_DIFF_SIZE // 10)
    prepared = file_diff("/big", b"", big)["prepared"]
    assert "larger than" in prepared and "hf_secret" not in prepared


def test_a_directory_entry_names_what_changes():
    assert directory_diff("/var/lib/x", False, {}, {"owner": "root", "mode": "0700"})["prepared"] == (
        "--- before: /var/lib/x (absent)\n+++ after: /var/lib/x (directory, owner root, mode 0700)\n")
    assert directory_diff("/d", True, {"mode": "0777"}, {"mode": "0755"})["after_header"] == "/d (directory, mode 0755)"
