"""write_json_atomic: the old file or the new one, never half; nothing left behind on failure; links not followed."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.llmserve.sglang.plugins.module_utils import atomic_file
from ansible_collections.llmserve.sglang.plugins.module_utils.atomic_file import write_json_atomic


def test_writes_the_json_with_the_mode_and_no_leftovers(tmp_path):
    target = tmp_path / "record.json"
    target.write_text('{"old": true}')
    write_json_atomic(str(target), {"new": 1}, ".record.json.", mode=0o640, sort_keys=True)
    assert json.loads(target.read_text()) == {"new": 1}
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(os.listdir(str(tmp_path))) == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_new_one(tmp_path):
    target = tmp_path / "record.json"
    target.write_text('{"old": true}')
    with pytest.raises(TypeError):
        write_json_atomic(str(target), {"bad": object()}, ".record.json.")
    assert json.loads(target.read_text()) == {"old": True}
    assert sorted(os.listdir(str(tmp_path))) == ["record.json"]


def test_durable_flushes_to_disk(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(atomic_file.os, "fsync", synced.append)
    write_json_atomic(str(tmp_path / "a.json"), [1], ".a.")
    assert synced == []
    write_json_atomic(str(tmp_path / "b.json"), [2], ".b.", durable=True)
    assert len(synced) == 1


def test_a_link_planted_at_the_temporary_name_is_not_followed(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("keep")
    # whatever name mkstemp picks is new: it creates with O_EXCL, so a link there makes it pick again or fail
    names = iter(["planted", "fresh"])
    monkeypatch.setattr("tempfile._RandomNameSequence.__next__", lambda self: next(names))
    os.symlink(str(victim), str(tmp_path / ".r.planted"))
    write_json_atomic(str(tmp_path / "r.json"), {"x": 1}, ".r.")
    assert victim.read_text() == "keep"
    assert json.loads((tmp_path / "r.json").read_text()) == {"x": 1}


def test_text_is_written_whole_and_the_temporary_name_is_no_prom_file(tmp_path, monkeypatch):
    target = tmp_path / "llmserve_gpu.prom"
    target.write_text("old\n")
    seen = []
    real_replace = atomic_file.os.replace

    def replace(src, dst):
        # the moment before the rename: the new file is complete under a name node exporter does not read
        seen.append((os.path.basename(src), open(src).read(), target.read_text()))
        real_replace(src, dst)

    monkeypatch.setattr(atomic_file.os, "replace", replace)
    atomic_file.write_text_atomic(str(target), "new \u00e9\n", ".llmserve_gpu.prom.", mode=0o644)
    assert target.read_text(encoding="utf-8") == "new \u00e9\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    [(name, content, old)] = seen
    assert name.startswith(".llmserve_gpu.prom.") and not name.endswith(".prom")
    assert content == "new \u00e9\n" and old == "old\n"
    assert sorted(os.listdir(str(tmp_path))) == ["llmserve_gpu.prom"]
