"""The deployed SGLang (stand-in) service: runs unprivileged, hardened, ready, secrets kept secret."""

import json
import os
import pathlib

import pytest

API_KEY = "molecule-secret-key-5f2c1e"
HF_TOKEN = "hf_moleculeSecretToken9d41"


def curl(host, path, key=None):
    header = "-H 'Authorization: Bearer %s'" % key if key else ""
    return host.run("python3 - <<'EOF'\n"
                    "import urllib.request, urllib.error, sys\n"
                    "req = urllib.request.Request('http://127.0.0.1:30000%s')\n"
                    "%s\n"
                    "try:\n"
                    "    r = urllib.request.urlopen(req, timeout=10); print(r.status); print(r.read().decode())\n"
                    "except urllib.error.HTTPError as e:\n"
                    "    print(e.code)\n"
                    "EOF" % (path, "req.add_header('Authorization', 'Bearer %s')" % key if key else "")).stdout


def test_service_active_and_unprivileged(host):
    svc = host.service("sglang")
    assert svc.is_running and svc.is_enabled
    pid = host.check_output("systemctl show -p MainPID --value sglang")
    uid = host.check_output("awk '/^Uid:/ {print $2}' /proc/%s/status" % pid)
    assert uid != "0"
    assert host.check_output("id -u sglang") == uid
    assert host.user("sglang").shell in ("/usr/sbin/nologin", "/sbin/nologin")


def test_file_modes(host):
    cfg = host.file("/etc/sglang/sglang.yaml")
    assert (cfg.user, cfg.group, cfg.mode) == ("root", "sglang", 0o640)
    env = host.file("/etc/sglang/sglang.env")
    assert (env.user, env.group, env.mode) == ("root", "root", 0o600)
    assert host.file("/etc/systemd/system/sglang.service").mode == 0o644
    # root-only deployment state outside the service's home; the home is root's, only caches are the service's
    state = host.file("/var/lib/llmserve-sglang")
    assert (state.user, state.group, state.mode) == ("root", "root", 0o700)
    home = host.file("/var/lib/sglang")
    assert (home.user, home.group, home.mode) == ("root", "sglang", 0o750)
    f = host.file("/var/lib/sglang/hf")
    assert f.is_directory and not f.is_symlink and f.user == "sglang"
    # the compile caches: one directory per SGLang version and architecture, the service's alone
    caches = host.run("find /var/cache/llmserve-sglang/sglang -mindepth 2 -maxdepth 2 -type d").stdout.split()
    assert len(caches) == 1, caches
    f = host.file(caches[0])
    assert (f.user, f.mode) == ("sglang", 0o700) and not f.is_symlink
    assert host.file("/var/cache/llmserve-sglang").user == "root"
    assert not host.file("/var/lib/sglang/deploy").exists


def test_secrets_stay_out_of_argv_unit_and_journal(host):
    cmdlines = host.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").stdout
    assert "sglang.launch_server" in cmdlines
    for secret in (API_KEY, HF_TOKEN):
        assert secret not in cmdlines
        assert secret not in host.file("/etc/systemd/system/sglang.service").content_string
        assert secret not in host.run("journalctl --no-pager -o cat").stdout
    assert API_KEY in host.file("/etc/sglang/sglang.yaml").content_string
    assert HF_TOKEN in host.file("/etc/sglang/sglang.env").content_string


def test_secrets_absent_from_verbose_ansible_output():
    log = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "ansible-vvv.log"
    text = log.read_text()
    # the log really holds the role's runs (converge, idempotence, the failing side effect) at -vvv
    assert "llmserve.sglang.sglang_server : Stage the --config file" in text
    assert "PODMAN EXEC" in text and "Rolled back" in text
    assert API_KEY not in text and HF_TOKEN not in text


def test_auth_gates_everything_but_health(host):
    assert curl(host, "/health").splitlines()[0] == "200"
    assert curl(host, "/ready").splitlines()[0] == "200"
    assert curl(host, "/v1/models").splitlines()[0] == "401"
    assert curl(host, "/v1/models", API_KEY).splitlines()[0] == "200"


def test_speculative_reported_active(host):
    out = curl(host, "/server_info", API_KEY).splitlines()
    assert out[0] == "200"
    info = json.loads(out[1])
    assert info["speculative_algorithm"] == "EAGLE"  # NEXTN resolves to EAGLE
    assert info["speculative_num_draft_tokens"] == 4


def test_exposure_score(host):
    out = host.check_output("systemd-analyze security --no-pager sglang.service | tail -n 1")
    # "→ Overall exposure level for sglang.service: 1.6 OK :-)"
    score = float(out.split(":")[1].split()[0])
    assert score <= 2.0, out


@pytest.mark.parametrize("path", ["/var/lib/llmserve-sglang/sglang/last-good/sglang.service",
                                  "/var/lib/llmserve-sglang/sglang/last-good/sglang.yaml",
                                  "/var/lib/llmserve-sglang/sglang/last-good/sglang.env",
                                  "/var/lib/llmserve-sglang/sglang/last-good/sglang.args.json",
                                  "/var/lib/llmserve-sglang/sglang/last-good/sitecustomize.py"])
def test_last_good_kept(host, path):
    f = host.file(path)
    assert f.exists and f.mode == 0o600 and f.user == "root"


def run_reports():
    """report.json of every site run in this scenario, oldest first (converge, then idempotence)."""
    base = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports"
    return [json.loads(p.read_text()) for p in sorted(base.glob("*/report.json"))]


def test_report_files_hold_the_expected_values():
    reports = run_reports()
    assert len(reports) >= 2, "converge and idempotence each write a report"
    converge, idempotence = reports[0], reports[1]
    hosts = {h["host"]: h for h in converge["hosts"]}
    assert set(hosts) == {"default-debian12", "default-debian13"}
    for entry in hosts.values():
        # the fixture is a 2-socket EPYC with two GPUs per socket: the preflight warns about the NUMA span
        assert entry["stages"]["preflight"] == "warn" and entry["stages"]["sglang"] == "serving"
        assert entry["stages"]["driver"] == "driver 595.45.04 loaded with the wanted options; DmaRemapPeerMmio: in effect"
        assert entry["gpus"] == "4 x NVIDIA RTX PRO 6000 Blackwell Server Edition (blackwell)"
        assert entry["numa_nodes"] == [0, 1]
        assert set(entry["iommu"]["per_gpu"].values()) == {"DMA-FQ"}
        assert entry["sev_snp"] is True and entry["dma_faults"] == 0
        assert entry["driver_params"]["pending"] == [] and entry["reboot_required"] is False
        assert entry["sglang"]["speculative_reported"] == "EAGLE"
        assert entry["sglang"]["tp_size"] == 4
        assert entry["sglang"]["smoke"] == "passed"
        assert entry["sglang"]["restarted"] is True and entry["sglang"]["time_to_ready"] > 0
        # the speculative check after the smoke test: the stand-in's 2-token answers take one verify step each
        check = entry["sglang"]["speculative_check"]
        assert check["verdict"] == "pass" and check["accept_length"] == 2.0 and check["min_accept_length"] == 1.75
        assert check["decode_tokens_per_s"] > 0 and len(check["prompt_tokens"]) == 4
        assert check["backend"]["chosen"] == {"attention_backend": "triton", "prefill_attention_backend": None,
                                              "decode_attention_backend": None, "page_size": 1}
    for entry in idempotence["hosts"]:
        assert entry["sglang"]["restarted"] is False
    md = sorted((pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "reports").glob("*/report.md"))[0]
    text = md.read_text()
    assert "## default-debian12" in text and "| Speculative (server reports) | EAGLE |" in text
