# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The end of a play (roles/sglang_rollout/tasks/end.yml), run for real: what a server answers cannot stop the report, and
nothing stops the lock release (issue 45 #6).

A server's /server_info answered ``"speculative_algorithm": "EAGLE3\\ud83d\\ude80"``: the report task failed (its
file list went through YAML, which refuses the escape), so no report was written and the per-host lock stayed held
until its lease ran out. Here two servers read a loopback /server_info with llmserve.sglang.wait_for_endpoint (as
roles/sglang_server/tasks/verify.yml does) and report what it says: a surrogate pair, and in a second answer a lone
surrogate (which ansible-core refuses in a module's result), control characters and a very long string. The per-host
lock is a private directory per host (module_defaults) instead of /run/llmserve."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading

import pytest
import yaml

HOSTS = ["gpu-a", "gpu-b"]
LONG = 100000

# JSON text as SGLang sends it: the escapes stay escapes until a module parses them
PAIR = r'{"version": "0.5.3", "speculative_algorithm": "EAGLE3\ud83d\ude80"}'
HOSTILE = (r'{"version": "0.5.3\ud83d", "speculative_algorithm": "EAGLE3\ud83d\ude80",'
           r' "check": {"verdict": "ok\ud83d", "accept_length": 3.1,'
           r' "backend": {"chosen": {"attention_backend": "fa3\u001b[31m\u0000"}}},'
           r' "error": "bad \udc80 answer\r\u0007\u202e", "note": "%s"}' % ("x" * LONG))
# what the report shows of each field of HOSTILE: the pair is the character it encodes, a lone surrogate U+FFFD,
# a control character its escape
SHOWN = {"speculative_reported": "EAGLE3\U0001F680", "version": None,  # "0.5.3\ufffd" is no version
         "error": "bad \ufffd answer\\x0d\\x07\\u202e"}


@pytest.fixture
def server_info():
    """A loopback /server_info whose body the test sets."""
    answer = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = answer["body"].encode("ascii")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield answer, "http://127.0.0.1:%d/server_info" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _run(tmp_path, url, report_dir=None):
    tree = os.environ.get("LLMSERVE_PYTEST_TREE")
    if not tree:
        pytest.skip("collection link tree not found")
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    textfiles = tmp_path / "textfiles"
    textfiles.mkdir()
    report_dir = report_dir or (tmp_path / "reports" / "run-1")
    inventory = {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "hosts": {"localhost": {"sglang_rollout_run_id": "run-1", "sglang_rollout_report_run_dir": str(report_dir)}},
        "children": {"sglang_servers": {"hosts": {name: {} for name in HOSTS}}},
    }}
    fields = ("{{ {'state': 'serving', 'ready': true, 'version': __info.json.version,"
              " 'speculative_reported': __info.json.speculative_algorithm,"
              " 'speculative_check': __info.json.check | default(None), 'error': __info.json.error | default(None),"
              " 'rollback_error': __info.json.note | default(None)} | llmserve.sglang.sglang_server_report }}")
    play = {
        "hosts": "sglang_servers", "gather_facts": False,
        # each host's own lock, in a private directory of the test
        "module_defaults": {"llmserve.sglang.run_lock": {"path": str(locks) + "/{{ inventory_hostname }}.lock"}},
        "vars": {"sglang_rollout_metrics_textfile_dir": str(textfiles), "sglang_rollout_run_outcome": True},
        "tasks": [{
            "block": [
                {"name": "Take the per-host lock (as tasks/begin.yml does)",
                 "llmserve.sglang.run_lock": {"owner": "run-1", "lease": 600},
                 "register": "sglang_rollout_lock"},
                {"name": "Read what the server reports about itself (as sglang_server's verify.yml does)",
                 "llmserve.sglang.wait_for_endpoint": {"url": url, "use_proxy": False, "timeout": 30},
                 "register": "__info"},
                {"name": "The server's report", "ansible.builtin.set_fact": {"sglang_server_report": fields}},
            ],
            "always": [{"name": "The end of the play",
                        "ansible.builtin.import_role": {"name": "llmserve.sglang.sglang_rollout", "tasks_from": "end"}}],
        }],
    }
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([play]))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=tree, ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(tmp_path / "home"),
               ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_SHOW_CUSTOM_STATS="true")
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                             "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
                            capture_output=True, text=True, check=False, timeout=300, env=env, cwd=str(tmp_path))
    return result, report_dir, locks, textfiles


def _held(locks):
    return sorted(name for name in os.listdir(str(locks)) if name.endswith(".lock"))


def _run_clean(tmp_path, server_info, body):
    """Run the play against a server answering ``body``: it must end rc 0 with both locks released."""
    answer, url = server_info
    answer["body"] = body
    result, report_dir, locks, textfiles = _run(tmp_path, url)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert _held(locks) == [], "the per-host locks are released"
    return result, report_dir, textfiles


def test_a_character_outside_the_bmp_reaches_the_report(tmp_path, server_info):
    # the finding itself: on its own, the pair stopped the report and kept both locks held
    _result, report_dir, textfiles = _run_clean(tmp_path, server_info, PAIR)
    for name in HOSTS:
        host = json.loads((report_dir / "hosts" / (name + ".json")).read_bytes().decode("utf-8"))
        assert host["sglang"]["speculative_reported"] == "EAGLE3\U0001F680"
        assert host["sglang"]["version"] == "0.5.3"
    assert "llmserve_last_run_success 1" in (textfiles / "llmserve_run.prom").read_text()


def test_hostile_server_text_is_made_safe_where_it_enters(tmp_path, server_info):
    result, report_dir, textfiles = _run_clean(tmp_path, server_info, HOSTILE)
    run = json.loads((report_dir / "report.json").read_bytes().decode("utf-8"))  # strict UTF-8: no surrogate left
    assert [h["host"] for h in run["hosts"]] == HOSTS
    for name in HOSTS:
        host = json.loads((report_dir / "hosts" / (name + ".json")).read_bytes().decode("utf-8"))
        sg = host["sglang"]
        assert {key: sg[key] for key in SHOWN} == SHOWN
        assert sg["speculative_check"]["verdict"] == "ok\ufffd"
        assert sg["speculative_check"]["backend"]["chosen"]["attention_backend"] == "fa3\\x1b[31m\\x00"
        # cut, and says so
        assert len(sg["rollback_error"]) == 10000 and sg["rollback_error"].startswith("xxx")
        assert sg["rollback_error"].endswith("...(cut, %d characters)" % LONG)
        md = (report_dir / "hosts" / (name + ".md")).read_bytes().decode("utf-8")
        assert "| Speculative (server reports) | EAGLE3\U0001F680 |" in md
        assert "\x1b" not in md and "\x07" not in md and "\u202e" not in md
    page = (report_dir / "report.html").read_bytes().decode("utf-8")
    assert "EAGLE3\U0001F680" in page and "\x1b" not in page and "\u202e" not in page
    assert "llmserve_last_run_success 1" in (textfiles / "llmserve_run.prom").read_text()
    # the job's custom stats (AWX artifacts) carry the same safe text
    stats = result.stdout[result.stdout.index("CUSTOM STATS"):]
    assert '"verdict": "ok\\ufffd"' in stats or '"verdict": "ok\ufffd"' in stats, stats


def test_a_failed_report_still_releases_the_locks_and_fails_the_run(tmp_path, server_info):
    answer, url = server_info
    answer["body"] = PAIR
    # a regular file where the report directory's parent should be: the report cannot be written
    (tmp_path / "blocked").write_text("not a directory\n")
    result, dummy, locks, textfiles = _run(tmp_path, url, report_dir=tmp_path / "blocked" / "run-1")
    output = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode != 0, output
    assert _held(locks) == [], "the per-host locks are released after the failed report: " + output
    # the failure is shown, after the run's outcome reached the node exporter: not a success
    assert "the host reports could not be written" in result.stdout, output
    assert "llmserve_last_run_success 0" in (textfiles / "llmserve_run.prom").read_text()
    # the report is written once for the batch (run_once): every host of it fails, each after its releases
    recap = result.stdout[result.stdout.index("PLAY RECAP"):]
    assert all(re.search(r"%s +: .* failed=1 " % name, recap) for name in HOSTS), recap
