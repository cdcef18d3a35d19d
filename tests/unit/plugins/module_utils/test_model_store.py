# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model store's rules: repository, revision and file names, layout, free space, retention, progress text."""

from __future__ import annotations

import collections
import json
import os
import stat

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import model_store as ms
from ansible_collections.llmserve.sglang.plugins.module_utils.model_store import ModelStoreError
from ansible_collections.llmserve.sglang.plugins.plugin_utils.sglang_flags import FLAGS
from ansible_collections.llmserve.sglang.tests.unit.plugins.module_utils.source_imports import top_level_imports

COMMIT = "0123456789abcdef0123456789abcdef01234567"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def test_imports_only_the_standard_library():
    # modules import it on the managed hosts; parsed as Python 3.8
    assert top_level_imports(ms.__file__, (3, 8)) <= {"__future__", "errno", "fcntl", "json", "math", "os", "re",
                                                      "stat", "time", "ansible_collections"}


# --- repository -------------------------------------------------------------------------------

@pytest.mark.parametrize("repo, parts", [
    ("Qwen/Qwen3.5-122B-A10B", ("Qwen", "Qwen3.5-122B-A10B")),
    ("a/b", ("a", "b")),
    ("org_1/name.v2_x", ("org_1", "name.v2_x")),
    ("o" * 96 + "/" + "n" * 96, ("o" * 96, "n" * 96)),
])
def test_repo_accepted(repo, parts):
    assert ms.check_repo(repo) == parts


@pytest.mark.parametrize("repo", [
    "", "Qwen", "a/b/c", "/b", "a/", "../b", "a/..", "a/b..c", "-a/b", ".a/b", "_a/b", "a b/c", "a/b\n",
    "a--b/c", "a/b--c", "a/b-", "a/b.", "o" * 97 + "/b", "a/" + "n" * 97, "a\\b", "a/b\u202e", None, 42, ["a/b"],
])
def test_repo_refused(repo):
    with pytest.raises(ModelStoreError, match=r"^sglang_model_repo: .* must be 'org/name'"):
        ms.check_repo(repo)


def test_repo_message_escapes_what_it_quotes():
    with pytest.raises(ModelStoreError) as err:
        ms.check_repo("a/b\x1b[2J")
    assert "\x1b" not in str(err.value) and "\\x1b" in str(err.value)


# --- revision ---------------------------------------------------------------------------------

def test_full_commit_is_a_commit():
    assert ms.check_revision(COMMIT, False) == "commit"
    assert ms.check_revision(COMMIT, True) == "commit"


@pytest.mark.parametrize("name", ["main", "v1", "refs/pr/1", "release-2025.1", "feature/x_y"])
def test_floating_name_refused_naming_both_variables(name):
    with pytest.raises(ModelStoreError) as err:
        ms.check_revision(name, False)
    message = str(err.value)
    assert message.startswith("sglang_model_revision: %s is a branch or tag name" % name)
    assert "sglang_model_allow_floating_revision: true" in message


@pytest.mark.parametrize("name", ["main", "v1", "refs/pr/1"])
def test_floating_name_allowed(name):
    assert ms.check_revision(name, True) == "floating"


@pytest.mark.parametrize("allow", [False, True])
@pytest.mark.parametrize("short", ["abc1234", "0123", COMMIT[:39], COMMIT + "0", "a" * 64])
def test_abbreviated_commit_refused_either_way(short, allow):
    with pytest.raises(ModelStoreError, match=r"^sglang_model_revision: .* abbreviated or malformed commit id; "
                                              r"give the full 40-hex commit id"):
        ms.check_revision(short, allow)


@pytest.mark.parametrize("allow", [False, True])
def test_upper_case_commit_refused(allow):
    with pytest.raises(ModelStoreError, match="must be written in lower case"):
        ms.check_revision(COMMIT.upper(), allow)


@pytest.mark.parametrize("name", ["a..b", "-main", "a b", "main/", "a//b", "x.lock", "x.", "a\x00", "a:b", "~1",
                                  "m" * 256])
def test_malformed_ref_refused_even_when_floating_is_allowed(name):
    with pytest.raises(ModelStoreError, match=r"^sglang_model_revision: .* neither a 40-hex commit id nor a valid"):
        ms.check_revision(name, True)


@pytest.mark.parametrize("value", ["", None, 1234567])
def test_revision_required(value):
    with pytest.raises(ModelStoreError, match=r"^sglang_model_revision: a commit id \(40 hexadecimal digits\) is "
                                              r"required"):
        ms.check_revision(value, True)


# --- file names -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["model.safetensors", "config.json", ".gitattributes", "sub/dir/x.json",
                                  "a..b.txt", "model-00001-of-00050.safetensors", "日本語.txt", "x" * 255])
def test_file_name_accepted(name):
    assert ms.check_file_name(name) == name


@pytest.mark.parametrize("name, rule", [
    ("", "empty"),
    (None, "empty"),
    ("/etc/passwd", "absolute path"),
    ("../x", "'..' component"),
    ("a/../../b", "'..' component"),
    ("..", "'..' component"),
    ("./a", "'.' or '..' component"),
    ("a//b", "empty component"),
    ("a/", "empty component"),
    ("a\\..\\b", "backslash"),
    ("a\x00b", "control character"),
    ("a\nb", "control character"),
    ("a\x7f", "control character"),
    ("a\x85", "control character"),
    (".git/config", "inside .git/"),
    (".git", "inside .git/"),
    ("x" * 256, "longer than 255 bytes"),
    ("\u00e9" * 128, "longer than 255 bytes"),
    ("a\udc80", "not valid UTF-8"),
])
def test_file_name_refused(name, rule):
    with pytest.raises(ModelStoreError) as err:
        ms.check_file_name(name)
    assert str(err.value).startswith("model file name ")
    assert rule in str(err.value)


# --- pickle and remote code -------------------------------------------------------------------

def test_pickle_files_found_case_insensitively():
    names = ["model.safetensors", "pytorch_model.BIN", "a.pt", "sub/b.pth", "c.pkl", "d.pickle", "e.ckpt",
             "tokenizer.json", "binary.txt", "x.bin.json", "readme.md"]
    assert ms.pickle_files(names) == ["a.pt", "c.pkl", "d.pickle", "e.ckpt", "pytorch_model.BIN", "sub/b.pth"]
    assert ms.pickle_files(["model.safetensors", "config.json"]) == []


def test_pickle_refusal_names_the_variable_and_the_files():
    files = ["pytorch_model-%02d.bin" % number for number in range(12)]
    message = ms.pickle_refusal(files)
    assert message.startswith("sglang_model_allow_pickle is false")
    assert "pytorch_model-09.bin and 2 more;" in message
    assert "pytorch_model-10.bin" not in message
    assert "sglang_model_allow_pickle: true" in message
    assert "pytorch_model.bin;" in ms.pickle_refusal(["pytorch_model.bin"])


def test_listed_names_ten_then_counts_the_rest():
    names = ["f%02d" % number for number in range(12)]
    assert ms.listed([]) == ""
    assert ms.listed(names[:1]) == "f00"
    assert ms.listed(names[:10]) == ", ".join(names[:10])
    assert ms.listed(names[:11]) == ", ".join(names[:10]) + " and 1 more"
    assert ms.listed(names) == ", ".join(names[:10]) + " and 2 more"
    assert ms.listed(names, limit=2) == "f00, f01 and 10 more"


def test_listed_sentences_keep_their_separator_before_the_count():
    sentences = ["a.bin: missing", "b.bin: sha256 is 00, the hub publishes 11", "c.bin: not in the manifest"]
    assert ms.listed(sentences, sep="; ") == "; ".join(sentences)
    assert ms.listed(sentences, sep="; ", limit=1) == "a.bin: missing; and 2 more"


def test_listed_escapes_and_cuts_raw_names_only_when_asked():
    raw = "evil\x1b[2J" + "x" * 300
    # cut to 20 characters first, then the escape character written out
    assert ms.listed([raw], width=20) == "evil\\x1b[2J" + "x" * 12
    # text that is already printable is kept whole
    assert ms.listed(["y" * 300]) == "y" * 300


AUTO_MAP = {
    "architectures": ["XForCausalLM"],
    "auto_map": {
        "AutoConfig": "configuration_x.XConfig",
        "AutoModelForCausalLM": "modeling_x.XForCausalLM",
        "AutoTokenizer": ["tokenization_x.XTokenizer", None],
    },
}
NAMES = ["config.json", "configuration_x.py", "modeling_x.py", "tokenization_x.py", "helper.py", "model.safetensors"]


def test_remote_code_files():
    assert ms.remote_code_files(AUTO_MAP, NAMES) == ["configuration_x.py", "modeling_x.py", "tokenization_x.py"]
    # only files the repository has
    assert ms.remote_code_files(AUTO_MAP, ["modeling_x.py"]) == ["modeling_x.py"]


def test_remote_code_in_a_nested_config_and_from_another_repository():
    config = {"text_config": {"auto_map": {"AutoModel": "org/code--modeling_y.YModel"}},
              "vision_config": {"auto_map": {"AutoModel": "modeling_v.VModel"}}}
    assert ms.remote_code_files(config, ["modeling_v.py", "modeling_y.py"]) == ["modeling_v.py"]
    message = ms.remote_code_refusal(config, ["modeling_v.py"])
    assert "modeling_v.py, modeling_y.py (from org/code);" in message


def test_remote_code_refusal_names_the_sglang_server_variable():
    message = ms.remote_code_refusal(AUTO_MAP, NAMES)
    assert message.startswith("the model's config.json asks for custom code (auto_map)")
    assert "configuration_x.py, modeling_x.py, tokenization_x.py;" in message
    assert message.endswith("set sglang_server_args.trust_remote_code: true once you have read it")


def test_trust_remote_code_variable_is_the_one_sglang_server_renders():
    # sglang_server has no variable of its own for it: the flag goes through sglang_server_args
    var, flag = ms.TRUST_REMOTE_CODE_VAR.split(".")
    assert FLAGS[flag]["option"] == "--trust-remote-code"
    with open(os.path.join(ROOT, "roles", "sglang_server", "defaults", "main.yml")) as handle:
        assert "\n%s: {}\n" % var in handle.read()


def test_remote_code_refusal_without_files_lists_the_references():
    message = ms.remote_code_refusal({"auto_map": {"AutoModel": "modeling_z.Z"}}, ["config.json"])
    assert "the modules named by auto_map: modeling_z.Z;" in message


@pytest.mark.parametrize("config", [{}, {"architectures": ["LlamaForCausalLM"]}, {"auto_map": {}},
                                    {"auto_map": None}])
def test_no_remote_code(config):
    assert ms.remote_code_files(config, NAMES) == []
    assert ms.remote_code_refusal(config, NAMES) is None


# --- layout -----------------------------------------------------------------------------------

def test_layout():
    assert ms.revision_dir("/var/lib/llmserve-models", "Qwen", "Qwen3.5-122B-A10B", COMMIT) == \
        "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/" + COMMIT
    assert ms.staging_dir("/var/lib/llmserve-models", "Qwen", "Qwen3.5-122B-A10B", COMMIT) == \
        "/var/lib/llmserve-models/Qwen--Qwen3.5-122B-A10B/.staging-" + COMMIT
    assert ms.state_file("/m", "a", "b", COMMIT) == "/m/a--b/.verified-%s.json" % COMMIT
    # the staging directory sits beside the revision: one filesystem, one rename
    assert os.path.dirname(ms.staging_dir("/m", "a", "b", COMMIT)) == os.path.dirname(
        ms.revision_dir("/m", "a", "b", COMMIT))


@pytest.mark.parametrize("model_dir", ["relative", "/m/", "/m/../x", "//m", "", None])
def test_layout_refuses_a_bad_model_dir(model_dir):
    with pytest.raises(ModelStoreError, match="^sglang_model_dir: .* must be an absolute, normalised path"):
        ms.revision_dir(model_dir, "a", "b", COMMIT)


@pytest.mark.parametrize("org, name, commit", [("a", "b", "main"), ("a", "b", COMMIT[:7]), ("..", "b", COMMIT),
                                               ("a", "b/c", COMMIT), ("a", "b", COMMIT.upper())])
def test_layout_refuses_bad_parts(org, name, commit):
    for build in (ms.revision_dir, ms.staging_dir, ms.state_file):
        with pytest.raises(ModelStoreError):
            build("/m", org, name, commit)


def test_safe_join(tmp_path):
    root = tmp_path / "rev"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "inner").symlink_to(root / "sub")
    (root / "out").symlink_to(outside)
    (root / "out.json").symlink_to(outside / "x.json")
    assert ms.safe_join(str(root), "sub/a.json") == str(root / "sub" / "a.json")
    assert ms.safe_join(str(root), "inner/a.json") == str(root / "inner" / "a.json")
    assert ms.safe_join(str(root), "not/yet/there") == str(root / "not" / "yet" / "there")
    for rel in ("../outside/x", "out/x.json", "out.json", "sub/../../outside", "."):
        with pytest.raises(ModelStoreError, match="does not resolve to a path inside"):
            ms.safe_join(str(root), rel)
    for rel in ("/etc/passwd", "", None):
        with pytest.raises(ModelStoreError, match="is not a relative path inside"):
            ms.safe_join(str(root), rel)


# --- disk -------------------------------------------------------------------------------------

MANIFEST = [{"path": "a.safetensors", "size": 1000}, {"path": "b.safetensors", "size": 500},
            {"path": "config.json", "size": 20}]


def test_bytes_needed_counts_partial_files_as_missing():
    assert ms.bytes_needed(MANIFEST, {}) == 1520
    assert ms.bytes_needed(MANIFEST, {"a.safetensors": 1000, "config.json": 20}) == 500
    assert ms.bytes_needed(MANIFEST, {"a.safetensors": 999, "b.safetensors": 500}) == 1020
    assert ms.bytes_needed(MANIFEST, {"a.safetensors": 1000, "b.safetensors": 500, "config.json": 20}) == 0


# f_bfree counts the blocks kept for root as well: the store must use f_bavail.
Statvfs = collections.namedtuple("Statvfs", "f_bavail f_frsize f_bfree")


class FakeStatvfs:
    def __init__(self, free_blocks, frsize=4096):
        self.free_blocks, self.frsize, self.calls = free_blocks, frsize, []

    def __call__(self, path):
        self.calls.append(path)
        return Statvfs(self.free_blocks, self.frsize, self.free_blocks * 2)


def test_free_space_enough(tmp_path):
    fake = FakeStatvfs(free_blocks=(3 << 30) // 4096)
    result = ms.check_free_space(str(tmp_path), 1 << 30, statvfs=fake)
    assert result == dict(needed=1 << 30, margin=ms.GIB, free=3 << 30, mount=ms.mount_point(str(tmp_path)))
    assert fake.calls == [str(tmp_path)]


def test_free_space_margin_is_the_larger_of_fraction_and_minimum(tmp_path):
    big = 100 * ms.GIB
    assert ms.check_free_space(str(tmp_path), big, statvfs=FakeStatvfs(1 << 40, 1))["margin"] == 5 * ms.GIB
    assert ms.check_free_space(str(tmp_path), 10, statvfs=FakeStatvfs(1 << 40, 1))["margin"] == ms.GIB
    assert ms.check_free_space(str(tmp_path), 1000, margin_fraction=0.1, margin_min=0,
                               statvfs=FakeStatvfs(1 << 40, 1))["margin"] == 100


def test_free_space_boundary(tmp_path):
    needed = 240 * ms.GIB
    exact = needed + 12 * ms.GIB
    assert ms.check_free_space(str(tmp_path), needed, statvfs=FakeStatvfs(exact, 1))["free"] == exact
    with pytest.raises(ModelStoreError):
        ms.check_free_space(str(tmp_path), needed, statvfs=FakeStatvfs(exact - 1, 1))


def test_free_space_refusal_names_bytes_and_filesystem(tmp_path):
    target = tmp_path / "models" / "Qwen--Qwen3.5-122B-A10B" / (".staging-" + COMMIT)
    fake = FakeStatvfs(free_blocks=25 * (1 << 30) // 4096)
    with pytest.raises(ModelStoreError) as err:
        ms.check_free_space(str(target), 244 * ms.GIB, statvfs=fake)
    message = str(err.value)
    assert message.startswith("sglang_model_dir: %s needs 244.0 GiB (261993005056 bytes) still to fetch plus a "
                              "margin of 12.2 GiB" % target)
    assert "but the filesystem mounted at %s has 25.0 GiB (26843545600 bytes) free; free 231.2 GiB more" % (
        ms.mount_point(str(tmp_path))) in message
    # the nearest existing ancestor is what statvfs sees
    assert fake.calls == [str(tmp_path)]


def test_nothing_to_fetch_needs_no_room(tmp_path):
    assert ms.check_free_space(str(tmp_path), 0, statvfs=FakeStatvfs(0))["margin"] == 0


def test_mount_point_walk_on_the_real_filesystem(tmp_path):
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    mount = ms.mount_point(str(deep))
    real = os.path.realpath(str(deep))
    assert real == mount or real.startswith(mount.rstrip("/") + "/")
    assert os.stat(mount).st_dev == os.stat(real).st_dev
    assert mount == "/" or os.stat(os.path.dirname(mount)).st_dev != os.stat(mount).st_dev
    # a path not created yet belongs to its nearest existing ancestor's filesystem
    assert ms.mount_point(str(deep / "not" / "yet")) == mount


@pytest.mark.skipif(not os.path.ismount("/proc"), reason="/proc is not a mount point here")
def test_mount_point_stops_at_a_mount():
    assert ms.mount_point("/proc/self/status") == "/proc"


# --- retention --------------------------------------------------------------------------------

def _commit(number):
    return "%040x" % number


def test_keeps_the_newest():
    existing = dict((_commit(number), 1000 + number) for number in range(1, 6))
    assert ms.revisions_to_remove(existing, 2, set()) == [_commit(1), _commit(2), _commit(3)]
    assert ms.revisions_to_remove(existing, 5, set()) == []
    assert ms.revisions_to_remove(existing, 9, set()) == []


def test_never_removes_a_referenced_revision():
    existing = dict((_commit(number), 1000 + number) for number in range(1, 6))
    # the unit serves the oldest and the last good configuration names the second: both stay, beyond keep
    assert ms.revisions_to_remove(existing, 1, {_commit(1), _commit(2)}) == [_commit(3), _commit(4)]
    assert ms.revisions_to_remove(existing, 2, {_commit(5)}) == [_commit(1), _commit(2), _commit(3)]


def test_staging_and_state_are_not_revisions():
    existing = {_commit(1): 1, _commit(2): 2, _commit(3): 3, ".staging-" + _commit(0): 0,
                ".verified-%s.json" % _commit(1): 0, ".tmp-x.json": 0, "README": 0, _commit(4)[:39]: 0}
    assert ms.revisions_to_remove(existing, 1, set()) == [_commit(1), _commit(2)]


def test_equal_times_give_one_answer_whatever_the_listing_order():
    names = [_commit(number) for number in (3, 1, 2)]
    forward = dict((name, 7) for name in names)
    backward = dict((name, 7) for name in reversed(names))
    assert ms.revisions_to_remove(forward, 1, set()) == ms.revisions_to_remove(backward, 1, set()) == [
        _commit(1), _commit(2)]
    assert ms.revisions_to_remove([(name, 7) for name in names], 1, set()) == [_commit(1), _commit(2)]


@pytest.mark.parametrize("keep", [0, -1, True, "2", 1.5, None])
def test_keep_must_be_a_positive_integer(keep):
    with pytest.raises(ModelStoreError, match="^sglang_model_keep: .* must be an integer of at least 1"):
        ms.revisions_to_remove({}, keep, set())


# --- text -------------------------------------------------------------------------------------

@pytest.mark.parametrize("count, text", [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
                                         (410 * (1 << 20) + (1 << 18), "410.2 MiB"), (244 * ms.GIB, "244.0 GiB"),
                                         (3 << 40, "3.0 TiB"), (5 << 50, "5.0 PiB"), (1 << 60, "1024.0 PiB")])
def test_human_bytes(count, text):
    assert ms.human_bytes(count) == text


def test_progress_line():
    done, total, rate = int(12.3 * ms.GIB), 244 * ms.GIB, int(410.2 * (1 << 20))
    assert ms.progress_line(done, total, rate, 579) == "12.3 GiB / 244.0 GiB (5 %), 410.2 MiB/s, ETA 9m39s"
    # the ETA follows from the rate when not given
    assert ms.progress_line(0, 100 << 20, 1 << 20) == "0 B / 100.0 MiB (0 %), 1.0 MiB/s, ETA 1m40s"
    assert ms.progress_line(0, 10 * ms.GIB, 1 << 20).endswith("ETA 2h50m")
    assert ms.progress_line(5, 10, 0) == "5 B / 10 B (50 %), ETA unknown"
    assert ms.progress_line(10, 10, 5) == "10 B / 10 B (100 %), 5 B/s, ETA 0s"
    assert ms.progress_line(0, 0, None) == "0 B / 0 B, ETA unknown"


# --- the revisions sglang_server's units load ---------------------------------------------------

STORE = "/var/lib/llmserve-models"


def record(*argv):
    return {"argv": ["/opt/sglang/venv-x/bin/python", "-m", "sglang.launch_server"] + list(argv)}


def test_the_revisions_named_by_live_and_last_good_records():
    live = record("--model-path", STORE + "/org--name/" + "a" * 40, "--port", "30000")
    good = json.dumps(record("--model-path=" + STORE + "/org--name/" + "b" * 40 + "/"))
    draft = record("--model-path", "/opt/models/other", "--speculative-draft-model-path",
                   STORE + "/org--draft/" + "c" * 40 + "/sub")
    assert ms.referenced_revisions([live, good, draft], STORE) == [
        STORE + "/org--draft/" + "c" * 40, STORE + "/org--name/" + "a" * 40, STORE + "/org--name/" + "b" * 40]


def test_a_unit_that_loads_a_link_keeps_the_revision_its_record_names():
    # the sglang_server role's unit loads /var/lib/sglang/model (a link); the record names the revision behind it
    live = dict(record("--model-path", "/var/lib/sglang/model", "--weight-version", "d" * 40),
                model_dir=STORE + "/org--name/" + "d" * 40)
    good = json.dumps(dict(record("--model-path", "/var/lib/sglang/model"), model_dir=STORE + "/org--name/" + "e" * 40))
    assert ms.referenced_revisions([live, good], STORE) == [
        STORE + "/org--name/" + "d" * 40, STORE + "/org--name/" + "e" * 40]
    # a model_dir that is no text, or outside the store, names nothing
    assert ms.referenced_revisions([dict(record(), model_dir=7), dict(record(), model_dir="/opt/x/y")], STORE) == []


def test_paths_outside_the_store_and_broken_records_name_nothing():
    records = [record("--model-path", "/opt/models/tiny"), record("--model-path", STORE + "/org--name"),
               record("--model-path", STORE + "/../etc/x/y"), "not json", {"argv": "text"}, {}, record("--model-path")]
    assert ms.referenced_revisions(records, STORE) == []


def test_records_are_read_from_the_live_directory_and_below_the_kept_one(tmp_path):
    live = tmp_path / "etc"
    (live / "sub").mkdir(parents=True)
    (live / "a.args.json").write_text('{"argv": ["a"]}')
    (live / "notes.json").write_text("{}")
    (live / "sub" / "b.args.json").write_text('{"argv": ["b"]}')
    os.symlink(str(live / "a.args.json"), str(live / "link.args.json"))
    os.mkfifo(str(live / "fifo.args.json"))
    (live / "huge.args.json").write_bytes(b" " * (ms.RECORD_MAX + 1))
    assert ms.read_records(str(live)) == ['{"argv": ["a"]}']
    assert ms.read_records(str(live), recurse=True) == ['{"argv": ["a"]}', '{"argv": ["b"]}']
    assert ms.read_records(str(tmp_path / "missing"), recurse=True) == []
    assert ms.read_records("") == []


def test_policy_refusal_refuses_pickles_first_then_an_unreadable_config_then_custom_code():
    names = ["config.json", "pytorch_model.bin", "modeling_x.py"]
    custom = {"auto_map": {"AutoModel": "modeling_x.X"}}
    assert "pytorch_model.bin" in ms.policy_refusal(names, custom, None, False, False)
    assert "modeling_x.py" in ms.policy_refusal(names, custom, None, True, False)
    assert ms.policy_refusal(names, None, "config.json: unreadable", True, False) == "config.json: unreadable"
    assert ms.policy_refusal(names, custom, "config.json: unreadable", True, True) is None
    assert ms.policy_refusal(["config.json", "model.safetensors"], {"architectures": ["X"]}, None, False, False) is None


def test_a_small_file_is_read_whole_and_nothing_else_is_read(tmp_path):
    (tmp_path / "ok").write_bytes(b"x" * 1000)
    (tmp_path / "big").write_bytes(b"x" * 1001)
    (tmp_path / "dir").mkdir()
    os.symlink(str(tmp_path / "ok"), str(tmp_path / "link"))
    os.mkfifo(str(tmp_path / "fifo"))
    assert ms.read_small_file(str(tmp_path / "ok"), 1000) == b"x" * 1000
    for name in ("big", "dir", "link", "fifo", "missing"):
        assert ms.read_small_file(str(tmp_path / name), 1000) is None, name
    assert ms.read_small_file("/dev/zero", 10) is None


# --- the repository directory's lock ---------------------------------------------------------------

def test_lock_repo_is_exclusive_and_waits_only_as_long_as_asked(tmp_path):
    first = ms.lock_repo(str(tmp_path), 0)
    assert first is not None
    slept = []
    clock = iter([0.0, 0.0, 0.6, 1.2, 1.8, 2.4]).__next__
    # a second open file description of the same file: flock makes it wait as another process would
    assert ms.lock_repo(str(tmp_path), 2, poll=0.6, clock=clock, sleep=slept.append) is None
    assert slept == [0.6, 0.6, 0.6, 0.6]
    os.close(first)
    second = ms.lock_repo(str(tmp_path), 0)
    assert second is not None
    os.close(second)
    assert stat.S_IMODE(os.stat(tmp_path / ms.LOCK_NAME).st_mode) == 0o600


def test_lock_repo_does_not_follow_a_link(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("x")
    os.symlink(str(target), str(tmp_path / ms.LOCK_NAME))
    with pytest.raises(OSError):
        ms.lock_repo(str(tmp_path), 0)
    assert target.read_text() == "x"
