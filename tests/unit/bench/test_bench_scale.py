"""The scale bench's pure parts: the least-squares fit and its R^2, the host counts and their alternating order, the
medians per count, the verdicts, the inventory it writes, and the /proc sampler (bench_site.py) on a fake tree."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "..", "tools", "bench")
SPEC = importlib.util.spec_from_file_location("bench_scale", os.path.join(BENCH, "bench_scale.py"))
bench_scale = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench_scale)
bench_site = bench_scale.bench_site


def test_an_exact_line_is_found_with_r2_one():
    fit = bench_scale.linear_fit([1, 2, 4, 8], [5.0, 8.0, 14.0, 26.0])
    assert fit["a"] == pytest.approx(2.0) and fit["b"] == pytest.approx(3.0)
    assert fit["r2"] == pytest.approx(1.0) and fit["n"] == 4


def test_noise_lowers_r2_and_the_slope_is_least_squares():
    xs, ys = [1, 1, 2, 2, 4, 4], [4.0, 6.0, 9.0, 7.0, 15.0, 13.0]
    fit = bench_scale.linear_fit(xs, ys)
    mx, my = sum(xs) / 6, sum(ys) / 6
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    assert fit["b"] == pytest.approx(b) and fit["a"] == pytest.approx(my - b * mx)
    assert 0.8 < fit["r2"] < 1.0


def test_a_flat_line_is_exact_and_bad_input_is_refused():
    assert bench_scale.linear_fit([1, 2], [3.0, 3.0]) == dict(a=3.0, b=0.0, r2=1.0, n=2)
    with pytest.raises(ValueError):
        bench_scale.linear_fit([2, 2], [1.0, 3.0])
    with pytest.raises(ValueError):
        bench_scale.linear_fit([1], [1.0])


def test_host_counts_are_parsed_and_alternate():
    assert bench_scale.parse_counts("8,1, 4,2,2") == [1, 2, 4, 8]
    for bad in ("4", "0,2", "1,two", ""):
        with pytest.raises(ValueError):
            bench_scale.parse_counts(bad)
    assert bench_scale.sample_order([1, 2, 4], 0) == [1, 2, 4]
    assert bench_scale.sample_order([1, 2, 4], 1) == [4, 2, 1]


def _run(count, cpu, clean=True, rss=100.0, label=None):
    return dict(hosts=["h%d" % i for i in range(count)], cpu=cpu, main_cpu=cpu / 2, wall=cpu * 2, clean=clean, rss_peak_mb=rss,
                pss_peak_mb=rss / 2, maxrss_mb=60.0, procs_peak=count + 1, label=label or "hosts-%d" % count)


def test_medians_per_count_and_fits_over_every_run():
    runs = [_run(1, 4.0, rss=100), _run(1, 6.0, rss=100), _run(4, 14.0, rss=250), _run(4, 16.0, rss=250)]
    rows = bench_scale.per_count(runs)
    assert rows[1]["cpu"] == 5.0 and rows[4]["cpu"] == 15.0 and rows[4]["cpu_per_host"] == 3.75
    assert rows[4]["samples"] == 2 and rows[4]["procs_peak"] == 5
    fit = bench_scale.fits(runs, forks=8)
    assert fit["cpu"]["b"] == pytest.approx(10.0 / 3) and fit["rss_peak_mb"]["b"] == pytest.approx(50.0)
    assert fit["main_cpu"]["b"] == pytest.approx(5.0 / 3) and rows[4]["main_cpu"] == 7.5
    # with forks 2 both counts run two workers or fewer: memory is fitted against the workers, not the hosts
    assert bench_scale.fits(runs, forks=2)["rss_peak_mb"]["b"] == pytest.approx(150.0)
    assert "rss_peak_mb" not in bench_scale.fits(runs, forks=1)  # one worker everywhere: nothing to fit


def test_a_changed_run_or_a_missing_sample_fails():
    runs = [_run(1, 4.0), _run(1, 4.0), _run(2, 7.0), _run(2, 7.0)]
    assert all(ok for dummy_name, ok, dummy_measured in bench_scale.check_targets(runs, [1, 2], 2))
    verdicts = bench_scale.check_targets(runs[:3], [1, 2], 2, [_run(2, 7.0, clean=False, label="uncached-2")])
    assert [(ok, measured) for dummy_name, ok, measured in verdicts] == [(False, "uncached-2"), (False, "2")]


def test_the_inventory_gives_every_host_the_stand_in_hosts_vars(tmp_path):
    inventory = bench_scale.write_inventory(str(tmp_path / "inv"), ["s-1", "s-2"])
    demo = bench_scale.DEMO
    with open(os.path.join(demo, "host_vars", bench_scale.STANDIN_HOST + ".yml")) as handle:
        standin = handle.read()
    for host in ("s-1", "s-2"):
        assert (tmp_path / "inv" / "host_vars" / (host + ".yml")).read_text() == standin
    assert sorted(os.listdir(os.path.join(inventory, "group_vars"))) == sorted(os.listdir(os.path.join(demo, "group_vars")))
    text = (tmp_path / "inv" / "hosts.yml").read_text()
    assert "    sglang_servers:\n      hosts:\n        s-1:\n        s-2:\n" in text


def _fake_proc(root, processes):
    """processes: {pid: (comm, ppid, rss_pages, pss_kib or None)}"""
    for pid, (comm, ppid, rss, pss) in processes.items():
        directory = root / str(pid)
        directory.mkdir()
        # the fields after the name: state, ppid, ..., utime and stime (fields 14 and 15), ..., rss (field 24)
        fields = ["S", str(ppid)] + ["0"] * 9 + [str(pid), "50"] + ["0"] * 8 + [str(rss)] + ["0"] * 10
        (directory / "stat").write_text("%d (%s) %s\n" % (pid, comm, " ".join(fields)))
        if pss is not None:
            (directory / "smaps_rollup").write_text("00400000-7ffd r--p 0 0:0 0 [rollup]\nRss: 1 kB\nPss: %d kB\n" % pss)
    (root / "self").mkdir()  # not a pid: skipped


def test_the_sampler_sums_the_tree_and_nothing_else(tmp_path):
    _fake_proc(tmp_path, {
        1: ("init", 0, 50, 10),
        100: ("ansible-playbook", 1, 1000, 2000),
        101: ("ansible-playboo", 100, 500, 300),        # a fork
        102: ("python3 (x) y)", 100, 400, None),        # a name with spaces and parentheses; PSS unreadable
        103: ("podman", 101, 300, 700),                 # the connection's client below a fork
        200: ("other", 1, 9999, 9999),                  # not in the tree
    })
    table = bench_site.read_processes(str(tmp_path))
    assert table[102] == (100, 400, 152) and set(table) == {1, 100, 101, 102, 103, 200}
    assert sorted(bench_site.descendants(table, 100)) == [100, 101, 102, 103]
    assert bench_site.descendants(table, 999) == []
    usage = bench_site.tree_usage(100, str(tmp_path), page_size=4096, ticks=100)
    # root_cpu: the root's own utime + stime (100 + 50 ticks), not its children's
    assert usage == dict(rss=(1000 + 500 + 400 + 300) * 4096, pss=(2000 + 300 + 700) * 1024, procs=4, root_cpu=1.5)

    sampler = bench_site.TreeSampler(100, proc_root=str(tmp_path), page_size=4096, ticks=100)
    sampler.sample()
    (tmp_path / "103" / "stat").unlink()  # the client ended: the peak stays
    sampler.sample()
    assert sampler.peak["rss"] == usage["rss"] and sampler.peak["procs"] == 4 and sampler.samples == 2
    assert sampler.peak["root_cpu"] == 1.5
