"""Checks on the converged default hosts (testinfra, run by molecule verify)."""


def test_systemd_is_pid1(host):
    assert host.file("/proc/1/comm").content_string.strip() == "systemd"


def test_harness_unit_active(host):
    svc = host.service("llmserve-harness")
    assert svc.is_running
    assert svc.is_enabled


def test_harness_unit_answers_on_loopback(host):
    out = host.check_output("python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:39999/').status)\"")
    assert out.strip() == "200"
