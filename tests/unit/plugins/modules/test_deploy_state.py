# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""deploy_state: one execution checks, creates and reads back a deployment's directories and files; check mode
changes nothing; links and untrusted state directories are refused before anything changes; content stays secret."""

from __future__ import annotations

import grp
import os
import pwd
import stat

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmserve.sglang.plugins.modules import deploy_state as mod
from ansible_collections.llmserve.sglang.tests.unit.plugins.modules.module_exits import ExitJson, FailJson, patch_exits

SECRET = "api_key: sk-deploy-state-secret"


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    patch_exits(monkeypatch)


def run(args, check_mode=False):
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    with patch_module_args(args):
        with pytest.raises((ExitJson, FailJson)) as exc:
            mod.main()
    return exc.value.result


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_creates_directories_and_writes_files_once(tmp_path):
    conf = tmp_path / "etc" / "sglang"
    # the account running the tests (root in CI, anyone under make check): chown to it needs no privilege
    user, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    args = {"directories": [{"path": str(conf), "owner": user, "group": group, "mode": "0750"}],
            "files": [{"path": str(conf / "sglang.yaml"), "content": SECRET, "owner": user, "mode": "0640"}],
            "inspect": [str(conf / "sglang.yaml")], "read": [str(conf / "missing.json")]}
    first = run(args)
    assert first["changed"] is True and first["directories"][0]["changes"] == ["created"]
    assert first["files"] == [{"path": str(conf / "sglang.yaml"), "changes": ["created"]}]
    assert (conf / "sglang.yaml").read_text() == SECRET and mode_of(str(conf)) == 0o750
    assert mode_of(str(conf / "sglang.yaml")) == 0o640
    info = first["paths"][str(conf / "sglang.yaml")]
    assert info["type"] == "file" and info["mode"] == "0640" and len(info["sha256"]) == 64
    assert first["contents"] == {str(conf / "missing.json"): None}
    assert "sk-deploy-state-secret" not in repr(first), "the content never comes back"
    second = run(args)
    assert second["changed"] is False and second["files"][0]["changes"] == []
    # only what differs: a mode, then the content
    os.chmod(str(conf / "sglang.yaml"), 0o644)
    assert run(args)["files"][0]["changes"] == ["mode"]
    (conf / "sglang.yaml").write_text("old")
    assert run(args)["files"][0]["changes"] == ["content"]
    assert (conf / "sglang.yaml").read_text() == SECRET
    assert not [n for n in os.listdir(str(conf)) if n.endswith(".tmp")], "no temporary file is left"


def test_check_mode_reports_and_changes_nothing(tmp_path):
    target = tmp_path / "new" / "deep"
    result = run({"directories": [{"path": str(target), "mode": "0700"}],
                  "files": [{"path": str(target / "f"), "content": "x"}, {"path": str(tmp_path / "g"), "content": "y"}]},
                 check_mode=True)
    assert result["changed"] is True
    assert result["directories"][0]["changes"] == ["created"]
    assert [f["changes"] for f in result["files"]] == [["created"], ["created"]]
    assert not (tmp_path / "new").exists() and not (tmp_path / "g").exists()


def test_copies_from_a_source_file(tmp_path):
    (tmp_path / "staged").write_text("unit text")
    result = run({"files": [{"path": str(tmp_path / "live"), "src": str(tmp_path / "staged"), "mode": "0644"}]})
    assert result["changed"] is True and (tmp_path / "live").read_text() == "unit text"
    assert run({"files": [{"path": str(tmp_path / "live"), "src": str(tmp_path / "staged"), "mode": "0644"}]})[
        "changed"] is False


@pytest.mark.parametrize("where", ["directory", "file"])
def test_a_link_in_a_wanted_place_is_refused_and_nothing_changes(tmp_path, where):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "passwd").write_text("root:x:0:0")
    link = tmp_path / "link"
    os.symlink(str(victim) if where == "directory" else str(victim / "passwd"), str(link))
    other = tmp_path / "other"
    args = {"directories": [{"path": str(other)}] + ([{"path": str(link), "mode": "0777"}] if where == "directory"
                                                     else []),
            "files": [{"path": str(link), "content": "owned"}] if where == "file" else []}
    result = run(args)
    assert result["failed"] is True and "link" in result["msg"]
    assert not other.exists(), "nothing was changed before the refusal"
    assert (victim / "passwd").read_text() == "root:x:0:0" and mode_of(str(victim)) != 0o777


def test_an_untrusted_state_directory_is_refused_naming_the_variable(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    result = run({"trusted_dir": str(shared / "state"), "trusted_dir_name": "sglang_server_state_dir",
                  "directories": [{"path": str(shared / "state"), "owner": "root", "mode": "0700"}]})
    assert result["failed"] is True
    assert "sglang_server_state_dir" in result["msg"] and str(shared) in result["msg"]
    assert not (shared / "state").exists()


def test_missing_accounts_fail_outside_check_mode_only(tmp_path):
    args = {"directories": [{"path": str(tmp_path / "d"), "owner": "no-such-user-llmserve"}]}
    assert "no-such-user-llmserve" in run(args)["msg"]
    assert run(args, check_mode=True)["directories"][0]["changes"] == ["created"]


def test_accounts_probe_and_bad_paths(tmp_path):
    result = run({"user": "root", "group": "no-such-group-llmserve",
                  "probe_argv": ["/bin/echo", "0.5.23"]})
    assert result["accounts"]["user"]["uid"] == 0 and result["accounts"]["group"] == {
        "exists": False, "name": "no-such-group-llmserve"}
    assert result["probe"]["rc"] == 0 and result["probe"]["stdout"].strip() == "0.5.23"
    assert run({"probe_argv": [str(tmp_path / "nope")]})["probe"]["rc"] is None
    assert "absolute, normalised" in run({"inspect": [str(tmp_path) + "/../x"]})["msg"]


def test_a_parent_created_by_an_earlier_entry_keeps_its_own_attributes(tmp_path):
    """The home (listed first, 0750) and a cache below it (0700): both missing at the start; creating the cache must
    not give the home the cache's attributes (each later run would flip it back: never idempotent)."""
    home = tmp_path / "home"
    args = {"directories": [{"path": str(home), "mode": "0750"}, {"path": str(home / "cache"), "mode": "0700"}]}
    run(args)
    assert mode_of(str(home)) == 0o750 and mode_of(str(home / "cache")) == 0o700
    assert run(args)["changed"] is False


def test_trust_walks_and_heads_report_without_failing(tmp_path):
    open_dir = tmp_path / "venvs"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    unit = tmp_path / "x.service"
    unit.write_text("[Unit]\nDocumentation=https://github.com/llmserve/sglang\n")
    (tmp_path / "link.service").symlink_to(unit)
    heads = [str(unit), str(tmp_path / "link.service"), str(tmp_path / "missing.service")]
    result = run({"trust": [str(open_dir)], "heads": heads})
    found = result["trust"][str(open_dir)]
    assert {"path": str(open_dir), "found": "uid %d, mode 0777" % os.getuid()} in found
    assert result["heads"] == {str(unit): "[Unit]\nDocumentation=https://github.com/llmserve/sglang\n",
                               str(tmp_path / "link.service"): None, str(tmp_path / "missing.service"): None}


def test_accounts_say_comment_groups_and_who_deploys():
    result = run({"user": "root", "group": "root"})
    user, group, deployer = (result["accounts"][k] for k in ("user", "group", "deployer"))
    assert user["uid"] == 0 and user["primary_group"] == "root" and "comment" in user and isinstance(user["groups"], list)
    assert group["gid"] == 0 and "root" in group["primary_of"] and isinstance(group["members"], list)
    assert set(deployer) == {"login_uid", "login_user", "sudo_user"}


def run_diff(args, check_mode=False):
    return run(dict(args, _ansible_diff=True), check_mode=check_mode)


UNIT_OLD = '[Service]\nExecStart="/opt/venv/bin/python" "-m" "sglang.launch_server" "--tp-size" "2"\nRestart=always\n'
UNIT_NEW = UNIT_OLD.replace('"2"', '"2" "--speculative-algorithm" "EAGLE"')


def converged(tmp_path):
    """A host whose unit, --config file and environment file are in place (the API key and HF token in them)."""
    files = {"unit": (tmp_path / "sglang.service", UNIT_OLD),
             "config": (tmp_path / "sglang.yaml", "api-key: sk-old-api-key\n"),
             "env": (tmp_path / "sglang.env", 'HF_TOKEN="hf_old_token"\n')}
    for path, text in files.values():
        path.write_text(text)
    return files


@pytest.mark.parametrize("check_mode", [True, False])
def test_diff_shows_the_exec_start_change_and_masks_the_keys(tmp_path, check_mode):
    files = converged(tmp_path)
    wanted = {"unit": UNIT_NEW, "config": "api-key: sk-new-api-key\n", "env": 'HF_TOKEN="hf_new_token"\n'}
    result = run_diff({"files": [{"path": str(files[name][0]), "content": wanted[name], "mode": "0600"}
                                 for name in ("unit", "config", "env")],
                       "secrets": ["sk-new-api-key", "hf_new_token"]}, check_mode=check_mode)
    assert result["changed"] is True
    shown = "".join(entry["prepared"] for entry in result["diff"])
    assert [entry["before_header"].split(" ")[0] for entry in result["diff"]] == [
        str(files[name][0]) for name in ("unit", "config", "env")]
    assert "-" + UNIT_OLD.splitlines()[1] + "\n+" + UNIT_NEW.splitlines()[1] + "\n" in shown
    assert "-api-key: ********\n+api-key: ********\n" in shown
    assert '-HF_TOKEN=********\n+HF_TOKEN=********\n' in shown
    for secret in ("sk-old-api-key", "sk-new-api-key", "hf_old_token", "hf_new_token"):
        assert secret not in repr(result)
    # check mode changed nothing; a real run wrote the new files
    assert files["unit"][0].read_text() == (UNIT_OLD if check_mode else UNIT_NEW)


def test_diff_of_a_copy_from_a_staged_file_and_nothing_when_nothing_changes(tmp_path):
    files = converged(tmp_path)
    staged = tmp_path / "staged.service"
    staged.write_text(UNIT_NEW)
    args = {"files": [{"path": str(files["unit"][0]), "src": str(staged)},
                      {"path": str(files["env"][0]), "content": 'HF_TOKEN="hf_old_token"\n'}]}
    first = run_diff(args)
    assert len(first["diff"]) == 1, "only the file that changes is in the diff"
    assert '+ExecStart="/opt/venv/bin/python"' in first["diff"][0]["prepared"]
    assert run_diff(args)["diff"] == [] and "diff" not in run(args), "no diff without changes or without --diff"


def test_diff_names_new_files_and_directories_with_their_attributes(tmp_path):
    conf = tmp_path / "conf"
    result = run_diff({"directories": [{"path": str(conf), "mode": "0750"}],
                       "files": [{"path": str(conf / "sglang.env"), "content": "HF_TOKEN=hf_first\n",
                                  "mode": "0600"}]}, check_mode=True)
    headers = [entry["before_header"] for entry in result["diff"]]
    assert headers == ["%s (absent)" % conf, "%s (absent)" % (conf / "sglang.env")]
    assert result["diff"][0]["after_header"] == "%s (directory, mode 0750)" % conf
    assert result["diff"][1]["prepared"].endswith("+HF_TOKEN=********\n") and "hf_first" not in repr(result)
