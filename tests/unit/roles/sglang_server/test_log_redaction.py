# Copyright (c) 2026, llmserve developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""roles/sglang_server/files/pylib/sitecustomize.py: SGLang's secrets masked in its log.

SGLang 0.5.23 logs ``server_args={... 'api_key': '<the key>' ...}`` at start-up; the role puts this hook
on the unit's PYTHONPATH. Checked here: the masking rules, and (in fresh interpreters, as the unit runs
them) that the hook is active in the main process and in a worker started with the ``spawn`` method, that
it masks the literal API key (read from the --config file) and HF token (from the environment) in log
lines, tracebacks, ``print`` and warnings, and that it still runs the next ``sitecustomize`` on the path.
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


# A config file as the role writes it (to_nice_yaml): plain and single-quoted scalars.
CONFIG = "#\n# Ansible managed\n#\n# SGLang --config file\nadmin-api-key: '#admin-9876543210'\napi-key: %s\n" % KEY
HF = "hf_literalTokenValue0123"


def _run_server_like(code, tmp_path, config=CONFIG, extra_env=None, argv=()):
    config_file = tmp_path / "sglang.yaml"
    config_file.write_text(config)
    env = {k: v for k, v in os.environ.items() if k not in ("LLMSERVE_REDACT_CONFIG", "HF_TOKEN")}
    # the unit's environment (roles/sglang_server/vars/main.yml) runs SGLang unbuffered: without it the order of
    # text and raw byte writes depends on the caller's shell
    env.update(PYTHONPATH=os.path.abspath(PYLIB), HF_TOKEN=HF, LLMSERVE_REDACT_CONFIG=str(config_file),
               PYTHONUNBUFFERED="1")
    env.update(extra_env or {})
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(code))
    return subprocess.run([sys.executable, str(script)] + list(argv), env=env, capture_output=True, text=True,
                          timeout=60, cwd=str(tmp_path), check=False)


LEAKY_SERVER = """
    import logging, multiprocessing, sys, traceback, warnings
    KEY, HF, ADMIN = %r, %r, "#admin-9876543210"

    def worker():
        print("worker print", KEY, HF)
        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="worker %%(message)s")
        logging.getLogger("w").info("worker log %%s", KEY)
        raise RuntimeError("worker crash " + KEY)

    if __name__ == "__main__":
        logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="main %%(message)s")
        log = logging.getLogger("sglang")
        log.info("key %%s token %%s admin %%s", KEY, HF, ADMIN)
        try:
            raise ValueError("bad key " + KEY)
        except ValueError:
            log.exception("failed with %%s", HF)
            traceback.print_exc()
        print("print", KEY, HF)
        sys.stdout.write(KEY[:6])
        sys.stdout.write(KEY[6:] + " split\\n")
        print(KEY[:4], end="", flush=False)
        print(KEY[4:])
        warnings.warn("warning " + KEY)
        p = multiprocessing.get_context("spawn").Process(target=worker)
        p.start(); p.join()
        raise RuntimeError("uncaught " + KEY + " " + HF)
""" % (KEY, HF)


def test_hook_masks_the_literal_secrets_everywhere_python_writes(tmp_path):
    result = _run_server_like(LEAKY_SERVER, tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out  # the uncaught exception
    for secret in (KEY, HF, "#admin-9876543210", KEY[:6] + KEY[6:]):
        assert secret not in out, out
    assert "main key <redacted> token <redacted> admin <redacted>" in result.stderr
    assert "ValueError: bad key <redacted>" in result.stderr  # logging.exception and print_exc
    assert result.stderr.count("ValueError: bad key <redacted>") == 2
    assert "print <redacted> <redacted>" in result.stdout
    assert "<redacted> split" in result.stdout
    assert "UserWarning: warning <redacted>" in result.stderr
    assert "worker print <redacted> <redacted>" in result.stdout
    assert "worker log <redacted>" in result.stderr
    assert "RuntimeError: worker crash <redacted>" in result.stderr
    assert "RuntimeError: uncaught <redacted> <redacted>" in result.stderr


def test_hook_finds_the_config_file_on_the_command_line(tmp_path):
    """Without LLMSERVE_REDACT_CONFIG the server's own --config argument names the file (and workers inherit it)."""
    config_file = tmp_path / "sglang.yaml"
    code = """
        import multiprocessing, sys
        def worker():
            print("worker", %r)
        if __name__ == "__main__":
            print("main", %r)
            p = multiprocessing.get_context("spawn").Process(target=worker)
            p.start(); p.join()
    """ % (KEY, KEY)
    result = _run_server_like(code, tmp_path, extra_env={"LLMSERVE_REDACT_CONFIG": ""},
                              argv=["--port", "1", "--config", str(config_file)])
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["main <redacted>", "worker <redacted>"]


@pytest.mark.parametrize("line, value", [
    ("api-key: plain-Key_1", "plain-Key_1"),
    ("api-key: 'it''s-a-key'", "it's-a-key"),
    ('api-key: "dq-key"', "dq-key"),
    ('api-key: "esc\\x41ped"', "escAped"),  # YAML escape JSON does not know: read with PyYAML
    ("api_key: underscore-key # comment", "underscore-key"),
])
def test_config_values_are_read_in_every_quoting(tmp_path, line, value):
    pytest.importorskip("yaml")
    code = "print(%r)\n" % ("value=" + value)
    result = _run_server_like(code, tmp_path, config=line + "\nport: 1\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "value=<redacted>"


def test_hook_leaves_streams_alone_without_secrets(tmp_path):
    code = "import sys\nprint(type(sys.stdout).__name__, type(sys.stderr).__name__)\n"
    result = _run_server_like(code, tmp_path, config="port: 1\n", extra_env={"HF_TOKEN": ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["TextIOWrapper", "TextIOWrapper"]


def test_wrapped_streams_behave_like_the_originals(tmp_path):
    code = """
        import io, os, sys
        assert sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2
        assert sys.__stdout__ is sys.stdout and isinstance(sys.stdout.isatty(), bool)
        sys.stdout.writelines(["a %s\\n" % os.environ["HF_TOKEN"], "b\\n"])
        sys.stdout.buffer.write(b"raw bytes\\n")
        sys.stdout.flush()
        print(sys.stdout.encoding)
    """
    result = _run_server_like(code, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:3] == ["a <redacted>", "b", "raw bytes"]
