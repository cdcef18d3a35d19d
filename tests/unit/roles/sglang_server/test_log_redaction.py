# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/sglang_server/files/pylib/sitecustomize.py: SGLang's secrets masked in its log.

SGLang 0.5.23 logs ``server_args={... 'api_key': '<the key>' ...}`` at start-up; the role puts this hook
on the unit's PYTHONPATH. Checked here: the masking rules, and (in fresh interpreters, as the unit runs
them) that the hook is active in the main process and in a worker started with the ``spawn`` method, and
that it still runs the next ``sitecustomize`` on the path.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import textwrap

import pytest

PYLIB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_server", "files", "pylib")
KEY = "sk-test-0123456789"


@pytest.fixture(scope="module")
def hook():
    factory = logging.getLogRecordFactory()
    spec = importlib.util.spec_from_file_location("llmserve_sitecustomize", os.path.join(PYLIB, "sitecustomize.py"))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        logging.setLogRecordFactory(factory)  # keep pytest's own logging untouched
    return module


@pytest.mark.parametrize("text, expected", [
    ("server_args={'api_key': '%s', 'port': 30000}" % KEY, "server_args={'api_key': '<redacted>', 'port': 30000}"),
    ('{"api_key": "%s"}' % KEY, '{"api_key": "<redacted>"}'),
    ("ServerArgs(api_key='%s', admin_api_key='a2')" % KEY, "ServerArgs(api_key='<redacted>', admin_api_key='<redacted>')"),
    ("{'ssl_keyfile_password': 'pw'}", "{'ssl_keyfile_password': '<redacted>'}"),
    ("launch --api-key %s --port 1" % KEY, "launch --api-key <redacted> --port 1"),
    ("launch --admin-api-key=%s" % KEY, "launch --admin-api-key=<redacted>"),
    ("argv=['--api-key', '%s', '--port', '1']" % KEY, "argv=['--api-key', '<redacted>', '--port', '1']"),
])
def test_redact_masks_secret_values(hook, text, expected):
    assert hook.redact(text) == expected


@pytest.mark.parametrize("text", [
    "{'api_key': None, 'admin_api_key': None}",
    "max_total_tokens=8192, tokenizer_worker_num=1",
    "'api_key_file': 3",
])
def test_redact_leaves_other_text_alone(hook, text):
    assert hook.redact(text) == text


def _run(code, pythonpath, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path), check=False)


def test_hook_masks_the_log_of_the_server_and_of_spawned_workers(tmp_path):
    code = """
        import logging, multiprocessing, sys
        KEY = %r

        def worker():
            logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="worker %%(message)s")
            logging.getLogger("sglang").info(f"server_args={{'api_key': '{KEY}'}}")

        if __name__ == "__main__":
            logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="main %%(message)s")
            logging.getLogger("sglang").info("server_args=%%s", {"api_key": KEY, "port": 1})
            p = multiprocessing.get_context("spawn").Process(target=worker)
            p.start(); p.join()
            sys.exit(p.exitcode)
    """ % KEY
    result = _run(code, [os.path.abspath(PYLIB)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "main server_args={'api_key': '<redacted>', 'port': 1}" in result.stderr
    assert "worker server_args={'api_key': '<redacted>'}" in result.stderr
    assert KEY not in result.stderr + result.stdout


def test_hook_runs_the_next_sitecustomize(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("print('next sitecustomize ran')\n")
    result = _run("print('main ran')\n", [os.path.abspath(PYLIB), str(other)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["next sitecustomize ran", "main ran"]
