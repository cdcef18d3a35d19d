"""The machine check that make test/demo/bench run first: each assumption fails on a machine that lacks it, with one
line that names it, and the script itself fails fast (as a real non-root account, with a real other OS file)."""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "..", "tools", "machine_check.py")
SPEC = importlib.util.spec_from_file_location("machine_check", SCRIPT)
machine_check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(machine_check)

GIB = 1024 ** 3
UBUNTU = 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n'


def good_machine(**changes):
    facts = {
        "euid": 0,
        "os_release": {"ID": "debian", "VERSION_ID": "12", "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)"},
        "python312": "/root/.pyenv/versions/3.12.1/bin/python3.12",
        "disks": {"cache": {"path": "/var/cache/llmserve", "checked": "/var/cache", "free": 80 * GIB, "warm": False,
                            "device": 1},
                  "podman storage": {"path": "/var/lib/containers", "checked": "/var/lib", "free": 80 * GIB,
                                     "warm": False, "device": 2}},
        "loopback_error": None,
        "checkout": "/root/src/llmserve.sglang",
        "checkout_is_git": True,
        "cache": "/var/cache/llmserve",
        "cache_blocked": None,
    }
    facts.update(changes)
    return facts


def test_a_machine_that_has_everything_passes():
    assert machine_check.evaluate(good_machine()) == []


def test_a_checkout_in_a_private_home_directory_is_fine():
    # the point of issue 23: where the clone lives does not matter, only that make can carry its path
    assert machine_check.evaluate(good_machine(checkout="/root/llmserve")) == []


@pytest.mark.parametrize("changes, expected", [
    ({"euid": 1000}, "not root (euid 1000)"),
    ({"os_release": machine_check.parse_os_release(UBUNTU)}, "not Debian 12: this machine is Ubuntu 24.04.1 LTS"),
    ({"os_release": {}}, "not Debian 12: this machine is unknown (no /etc/os-release)"),
    ({"os_release": {"ID": "debian", "VERSION_ID": "13", "PRETTY_NAME": "Debian GNU/Linux 13 (trixie)"}},
     "this machine is Debian GNU/Linux 13 (trixie)"),
    ({"python312": None}, "no Python 3.12"),
    ({"loopback_error": "[Errno 99] Cannot assign requested address"}, "no TCP over loopback (127.0.0.1): [Errno 99]"),
    ({"checkout": "/root/my clone"}, "the checkout's path '/root/my clone' has ' '"),
    ({"checkout": "/srv/a:b"}, "has ':'"),
    ({"checkout_is_git": False}, "is not a git clone"),
    ({"cache": "cache"}, "LLMSERVE_CACHE='cache' is not an absolute path"),
    ({"cache": "/root/src/llmserve.sglang/.cache"}, "is inside the checkout"),
    ({"cache": "/root/cache", "cache_blocked": "/root"}, "is below /root, which others cannot traverse"),
])
def test_each_missing_assumption_is_one_line_naming_it(changes, expected):
    problems = machine_check.evaluate(good_machine(**changes))
    assert len(problems) == 1, problems
    assert expected in problems[0]
    assert "\n" not in problems[0]


def test_disk_need_depends_on_what_was_built_before():
    low = good_machine()
    low["disks"]["podman storage"]["free"] = 11 * GIB
    problems = machine_check.evaluate(low, "test")
    assert problems == ["too little free disk for the podman storage: 11.0 GiB free on the filesystem of /var/lib, "
                        "make test needs 12.0 GiB there (podman storage nothing built yet); free some (podman system "
                        "prune) or give /var/lib/containers more room"]
    low["disks"]["podman storage"]["warm"] = True
    assert machine_check.evaluate(low, "test") == []
    low["disks"]["cache"].update(free=1 * GIB, warm=True)
    assert machine_check.evaluate(low, "demo") == [
        "too little free disk for the cache: 1.0 GiB free on the filesystem of /var/cache, make demo needs 2.0 GiB "
        "there (cache built before); free some or point LLMSERVE_CACHE at a larger filesystem"]


def test_one_filesystem_for_both_must_hold_both():
    shared = good_machine()
    for disk in shared["disks"].values():
        disk.update(device=7, free=20 * GIB)
    # 10 GiB for the cache and 12 for podman: each fits alone, not both
    problems = machine_check.evaluate(shared, "test")
    assert len(problems) == 1
    assert problems[0].startswith("too little free disk for the cache and the podman storage (one filesystem): "
                                  "20.0 GiB free on the filesystem of /var/cache, make test needs 22.0 GiB there")
    shared["disks"]["cache"]["warm"] = True
    assert machine_check.evaluate(shared, "test") == []


def test_an_unreadable_filesystem_is_named():
    facts = good_machine()
    facts["disks"]["cache"].update(free=None, error="[Errno 13] Permission denied", device="cache")
    assert machine_check.evaluate(facts) == [
        "cannot read free disk for the cache at /var/cache/llmserve: [Errno 13] Permission denied"]


def test_the_demo_does_not_need_a_traversable_cache():
    facts = good_machine(cache="/root/cache", cache_blocked="/root")
    assert machine_check.evaluate(facts, "demo") == []
    assert len(machine_check.evaluate(facts, "bench")) == 1


def fake_python(directory, name):
    path = os.path.join(directory, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(path, 0o755)
    return path


def test_find_python_takes_what_devenv_takes(tmp_path):
    """LLMSERVE_PYTHON first, then pyenv's 3.12, then python3.12, 3.13 or 3.14 on PATH (make check's venv comes
    from the same search, so a machine whose only controller Python is a 3.13 passes both)."""
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    env = {"HOME": str(home), "PATH": str(bin_dir)}
    assert machine_check.find_python(env) is None
    newer = fake_python(str(bin_dir), "python3.13")
    assert machine_check.find_python(env) == newer
    assert machine_check.find_python(dict(env, PATH=str(tmp_path / "elsewhere"))) is None
    on_path = fake_python(str(bin_dir), "python3.12")
    assert machine_check.find_python(env) == on_path
    (home / ".pyenv" / "versions" / "3.12.1" / "bin").mkdir(parents=True)
    pyenv = fake_python(str(home / ".pyenv" / "versions" / "3.12.1" / "bin"), "python3.12")
    assert machine_check.find_python(env) == pyenv
    chosen = fake_python(str(tmp_path), "mine")
    assert machine_check.find_python(dict(env, LLMSERVE_PYTHON=chosen)) == chosen
    assert machine_check.find_python(dict(env, LLMSERVE_PYTHON=str(tmp_path / "missing"))) is None


@pytest.fixture
def open_dir():
    """A directory others may traverse (pytest's own tmp_path lies below a 0700 directory)."""
    path = tempfile.mkdtemp(prefix="llmserve-machine-check-", dir="/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_blocked_for_others_finds_the_first_private_directory(open_dir):
    private = os.path.join(open_dir, "private")
    os.makedirs(os.path.join(private, "inner"))
    os.chmod(private, 0o700)
    assert machine_check.blocked_for_others(os.path.join(private, "inner", "venv")) == private
    os.chmod(private, 0o711)
    assert machine_check.blocked_for_others(os.path.join(private, "inner", "venv")) is None


def run_script(args, env=None, preexec=None):
    started = time.monotonic()
    result = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, timeout=30,
                            env=dict(os.environ, **(env or {})), preexec_fn=preexec, cwd="/", check=False)
    return result, time.monotonic() - started


def test_the_script_refuses_another_os_fast_and_names_it(tmp_path):
    release = tmp_path / "os-release"
    release.write_text(UBUNTU)
    result, seconds = run_script(["test", "--os-release", str(release)])
    assert result.returncode == 1, result
    assert "machine check: not Debian 12: this machine is Ubuntu 24.04.1 LTS" in result.stderr
    # as another user than root (make check), "not root" is a second broken assumption
    broken = 1 if os.geteuid() == 0 else 2
    assert "%d assumption(s) of make test do not hold; nothing was changed" % broken in result.stderr
    assert seconds < 5
    result = run_script(["test", "--os-release", str(release)], env={"LLMSERVE_MACHINE_CHECK": "warn"})[0]
    assert result.returncode == 0 and "%d warning(s), going on" % broken in result.stdout


def test_the_script_refuses_a_cache_in_a_private_directory(open_dir):
    private = os.path.join(open_dir, "home")
    os.mkdir(private, 0o700)
    cache = os.path.join(private, "cache")
    result = run_script(["bench"], env={"LLMSERVE_CACHE": cache})[0]
    assert result.returncode == 1
    assert "machine check: LLMSERVE_CACHE=%s is below %s, which others cannot traverse" % (cache, private) \
        in result.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv to drop to "
                    "an unprivileged account")
def test_the_script_as_a_real_unprivileged_account_says_not_root(open_dir):
    # the system python: a pyenv shim under a private home cannot be run by uid 65534
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    script = os.path.join(open_dir, "machine_check.py")
    shutil.copyfile(SCRIPT, script)
    os.chmod(script, 0o755)
    started = time.monotonic()
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, script,
                             "test", "--checkout", open_dir],
                            capture_output=True, text=True, timeout=30, cwd="/", check=False)
    assert result.returncode == 1, result
    assert "machine check: not root (euid 65534): make test runs rootful podman" in result.stderr
    assert time.monotonic() - started < 5
