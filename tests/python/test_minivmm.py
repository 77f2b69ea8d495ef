"""Tests of the minivmm Python module (docs/python.md).

The module returns the CLI's own records: minivmm.run() is `minivmm run
--json`'s run record and minivmm.bench() `minivmm bench --json`'s bench
record, compared here key by key against the CLI (MINIVMM_BIN). The exact
counts are the C++ tests' (tests/integration/pvops_test.cc): they hold on
every KVM host. CR0 counts depend on the host (kernel.ring3_nm,
docs/exit-model.md) and are not asserted here. Every test boots real guests:
nothing is skipped when /dev/kvm is unusable, the tests fail.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

import pytest

import minivmm

IRQ = "irq,loops=20,depth=3"
CPA = "cpa,pages=16,rounds=2"
MINIVMM_BIN = os.environ.get("MINIVMM_BIN", "")

_cache = {}


def run_pv(pvops, workload):
    """One pv run per (pvops, workload), shared by the tests."""
    key = (pvops, workload)
    if key not in _cache:
        _cache[key] = minivmm.run(backend="pv", pvops=pvops, workload=workload, timeout=60,
                                  probe_host=False)
    record = _cache[key]
    assert record["result"]["stop_reason"] == "guest shutdown", (record["result"]["detail"],
                                                                 record.console_tail)
    assert record["result"]["exit_code"] == 0, record.console
    return record


def hc(record, name):
    return record["hypercalls"]["calls"][name]


def reports(record):
    return record["guest"]["reports"]


def causes(record):
    return record["causes"]["causes"]


def test_run_returns_the_run_record():
    r = run_pv("naive", IRQ)
    assert isinstance(r, dict) and isinstance(r, minivmm.RunRecord)
    assert r["schema"] == "minivmm.run" and r["schema_version"] == 2
    assert r.ok is True and r.status == 0 and r.failure == ""
    # The guest's console, which the record does not hold: irq prints nothing.
    assert r.console == "" and r.console_tail == []
    hello = minivmm.run(workload="hello", probe_host=False)
    assert hello.console == "hello 1\nhello 2\nhello 3\n"
    assert hello.console_tail == ["hello 1", "hello 2", "hello 3"]
    assert r["config"]["cmdline"] == "backend=pv pvops=naive workload=" + IRQ
    exits = r["exits"]
    assert exits["total"] == sum(exits["by_reason"].values()) > 0
    assert len(exits["per_vcpu"]) == 1 and exits["per_vcpu"][0]["total"] == exits["total"]
    assert exits["pio_by_device"]["hypercall"] > 0
    assert sorted(causes(r)) == sorted(minivmm.causes())
    assert {"if_set", "if_clear", "cr0_write", "descriptor_update"} <= set(minivmm.causes())
    # The per-vCPU counters are the record's: all six and hypercall_exits.
    vcpu = exits["per_vcpu"][0]
    for key in ("timer_injections", "ipi_injections", "tlb_flushes_deferred",
                "lock_waits_slept", "lock_wakes_by_kick", "directed_yields"):
        assert vcpu[key] == r["causes"][key], key
    assert vcpu["hypercall_exits"] == {n: c["exits"] for n, c in vcpu["hypercalls"].items()
                                       if c["exits"]}
    # Guest reports: integers are ints, the rest strs.
    assert reports(r)["config.backend"] == "pv"
    assert reports(r)["config.workload"] == "irq"
    assert reports(r)["check.failed"] == 0
    assert isinstance(reports(r)["kernel.irq_restores_if_clear"], int)
    assert isinstance(r["host_counters"]["deltas"], dict)
    assert isinstance(r["result"]["registers"]["rip"], int)
    # No timer: no interrupt windows.
    assert causes(r)["if_set"]["host_dependent_exits"] == 0
    # probe_host=False: the host is described, its behaviours not measured.
    host = r["provenance"]["host"]
    assert host["kvm_api_version"] == 12
    assert host["ring0_emulated"] is None and host["ring3_nm"] is None
    assert host["vmcall_in_kernel"] is None and "probe" not in host
    assert host["guest_detected"]["ring3_nm"] == (reports(r)["kernel.ring3_nm"] != 0)


def test_guest_cmdline_is_the_clis():
    assert minivmm.guest_cmdline(backend="pv", pvops="naive", workload="ctx",
                                 cmdline="x=1") == "backend=pv pvops=naive workload=ctx x=1"
    assert minivmm.guest_cmdline(workload="hello") == "workload=hello"
    vm = minivmm.Vm(backend="native", workload="hello")
    assert vm.cmdline == "backend=native workload=hello"


def test_default_kernel_is_the_build_trees_guest():
    # The module in <build>/python boots <build>/guest/minivmm-guest.elf.
    module_dir = os.path.dirname(os.path.realpath(minivmm.__file__))
    expected = os.path.join(os.path.dirname(module_dir), "guest", "minivmm-guest.elf")
    assert os.path.realpath(minivmm.default_kernel_path()) == os.path.realpath(expected)
    assert minivmm.Vm(workload="none").kernel == minivmm.default_kernel_path()


def test_irq_restore_naive_adds_one_exit_per_restore_with_if_clear():
    naive = run_pv("naive", IRQ)
    optimized = run_pv("naive,irq_restore:optimized", IRQ)
    assert reports(naive)["irq.irq_restores_if_clear"] == 20 * 2
    assert reports(naive)["irq.irq_restores_if_set"] == 20
    if_clear = reports(naive)["kernel.irq_restores_if_clear"]
    assert if_clear > 0
    assert if_clear == reports(optimized)["kernel.irq_restores_if_clear"]
    assert hc(naive, "set_if")["exits"] - hc(optimized, "set_if")["exits"] == if_clear
    assert (causes(naive)["if_clear"]["exits"] - causes(optimized)["if_clear"]["exits"]
            == if_clear)
    assert causes(naive)["if_set"]["exits"] == causes(optimized)["if_set"]["exits"]


@pytest.mark.parametrize("pvops,workload", [("naive", IRQ), ("naive,irq_restore:optimized", IRQ),
                                            ("naive", CPA), ("naive,batch:on", CPA)])
def test_every_hypercall_count_matches_the_guest(pvops, workload):
    r = run_pv(pvops, workload)
    guest = reports(r)
    calls = r["hypercalls"]["calls"]
    assert "set_if" in calls
    # The record lists every hypercall that ran, and only those.
    for name, c in calls.items():
        assert c["ops"] == guest.get("kernel.hc." + name, 0), name
        assert c["exits"] == guest.get("kernel.hc_exits." + name, 0), name
    for key, n in guest.items():
        if key.startswith("kernel.hc.") and n:
            assert key[len("kernel.hc."):] in calls, key
    assert r["hypercalls"]["bad_number"] == 0


def test_cpa_page_table_updates():
    naive = run_pv("naive", CPA)
    assert hc(naive, "mmu_update")["exits"] == 2 * 16 * 2
    assert causes(naive)["page_table_update"]["ops"] == 2 * 16 * 2
    batched = run_pv("naive,batch:on", CPA)
    assert hc(batched, "mmu_update")["exits"] == 0
    assert hc(batched, "mmu_update")["ops"] == 2 * 16 * 2


@pytest.mark.parametrize("kwargs,exc,words", [
    ({"backend": "xen"}, ValueError, "unknown backend"),
    ({"memory": -1}, ValueError, "memory"),
    ({"memory": 0}, ValueError, "memory"),
    ({"memory": 3 << 20}, ValueError, "2 MiB"),  # the library's message
    ({"kernel": "/nonexistent/guest.elf"}, FileNotFoundError, "/nonexistent/guest.elf"),
    ({"kvm_device": "/nonexistent/kvm"}, FileNotFoundError, "/nonexistent/kvm"),
    ({"timeout": -1.0}, ValueError, "timeout"),
    ({"recent_exits": 4097}, ValueError, "recent_exits"),
    ({"recent_exits": -1}, ValueError, "recent_exits"),
])
def test_bad_arguments_raise(kwargs, exc, words):
    with pytest.raises(exc) as info:
        minivmm.Vm(workload="none", **kwargs)
    assert words.lower() in str(info.value).lower()


def test_bad_arguments_leave_the_interpreter_alive():
    script = textwrap.dedent("""
        import minivmm
        for kwargs in ({"backend": "xen"}, {"memory": -1}, {"kernel": "/nonexistent"}):
            try:
                minivmm.Vm(**kwargs)
            except (ValueError, FileNotFoundError) as e:
                print(type(e).__name__)
        vm = minivmm.Vm(backend="pv", workload="none", probe_host=False)
        vm.run()
        try:
            vm.run()
        except RuntimeError as e:
            print("RuntimeError")
        print("alive")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ValueError", "ValueError", "FileNotFoundError",
                                  "RuntimeError", "alive"]


def test_recent_exits_end_with_the_panics_shutdown():
    """recent_exits=N: each vCPU's last N exits in result.recent_exits, the
    panicking vCPU's last its sched_op(shutdown, 4) (design.md "Recent
    exits")."""
    r = minivmm.run(workload="fault,kind=gdt", cpus=2, recent_exits=3)
    assert r["result"]["exit_code"] == 4, r.console
    recent = r["result"]["recent_exits"]
    assert len(recent) == 2
    for v, exits in enumerate(recent):
        total = r["exits"]["per_vcpu"][v]["total"]
        assert len(exits) == min(3, total)
        assert [e["sequence"] for e in exits] == list(range(total - len(exits), total))
    last = recent[0][-1]
    assert last["hypercall"] and last["rdi"] == 2 and last["rsi"] == 4
    assert " hypercall sched_op rdi=0x2 rsi=0x4 " in last["text"]
    assert minivmm.run(workload="hello", recent_exits=0)["result"]["recent_exits"] == []


def test_second_run_raises():
    vm = minivmm.Vm(backend="pv", workload="none", probe_host=False)
    assert vm.run()["result"]["stop_reason"] == "guest shutdown"
    with pytest.raises(RuntimeError):
        vm.run()


def test_exit_callback_sees_every_exit():
    events = []
    r = minivmm.Vm(backend="pv", pvops="naive", workload="irq,loops=5",
                   probe_host=False).run(on_exit=events.append)
    assert r.ok
    assert len(events) == r["exits"]["total"]
    assert [e["sequence"] for e in events] == list(range(events[0]["sequence"],
                                                         events[0]["sequence"] + len(events)))
    by_reason = {}
    for e in events:
        by_reason[e["reason"]] = by_reason.get(e["reason"], 0) + 1
    assert by_reason == r["exits"]["by_reason"]
    set_if = r["hypercalls"]["calls"]["set_if"]
    assert sum(1 for e in events if e["hypercall"] == set_if["nr"]) == set_if["exits"]
    assert sum(1 for e in events if e["hypercall"] >= 0) == sum(
        c["exits"] for c in r["hypercalls"]["calls"].values())


def test_exit_callback_events_carry_their_site_with_sites():
    events = []
    r = minivmm.Vm(backend="pv", pvops="naive", workload="ctx,tls=same", sites=True,
                   probe_host=False).run(on_exit=events.append)
    assert r.ok
    assert len(events) == r["exits"]["total"]
    by_cause = {}
    for e in events:
        site = e["site"]
        assert site["rip"].startswith("0x") and site["stack"], e
        by_cause[site["cause"]] = by_cause.get(site["cause"], 0) + 1
    assert by_cause == exits_by_cause(r)
    tls = [e["site"] for e in events if e["site"]["cause"] == "descriptor_update"]
    assert tls and all("LoadTls" in s["stack"] and s["function"] == "RawHypercall" for s in tls)


def test_without_sites_exit_callback_events_have_none():
    events = []
    minivmm.Vm(workload="hello", probe_host=False).run(on_exit=events.append)
    assert events and all(e["site"] is None for e in events)


def test_refused_hypercalls_carry_their_reason():
    events = []
    r = minivmm.Vm(backend="pv", workload="hostile", probe_host=False).run(on_exit=events.append)
    assert r.ok
    calls = [e for e in events if e["hypercall"] >= 0]
    refused = [e for e in calls if e["result"] < 0]
    assert len(refused) > 100
    assert all(isinstance(e["refusal"], str) and e["refusal"] for e in refused)
    assert all(e["refusal"] is None for e in calls if e["result"] >= 0)


class Boom(Exception):
    pass


def test_exception_in_callback_stops_the_run_and_propagates():
    seen = []

    def on_exit(event):
        seen.append(event)
        if len(seen) == 5:
            raise Boom("five")

    vm = minivmm.Vm(backend="pv", workload="irq,loops=5", probe_host=False)
    with pytest.raises(Boom, match="five"):
        vm.run(on_exit=on_exit)
    assert len(seen) == 5
    # The module still works.
    assert minivmm.run(backend="pv", workload="none", probe_host=False).ok


def test_gil_is_released_while_the_guest_runs():
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        vm = minivmm.Vm(backend="pv", pvops="naive", workload=IRQ, probe_host=False)
        time.sleep(0.01)
        before = counter[0]
        r = vm.run()
        during = counter[0] - before
    finally:
        stop.set()
        thread.join()
    assert r.ok
    # With the GIL held for the run, the thread could not have counted at all.
    assert during > 1000, during


def test_request_stop_from_another_thread():
    vm = minivmm.Vm(backend="pv", workload="ctx,rounds=1000000", timeout=30, probe_host=False)
    timer = threading.Timer(0.3, vm.request_stop)
    timer.start()
    try:
        r = vm.run()
    finally:
        timer.cancel()
    assert r["result"]["stop_reason"] == "stop requested", r["result"]["detail"]
    assert r.status == 130
    assert r["exits"]["total"] > 0


# What legitimately differs between two runs of the same configuration, and
# so between the module's record and the CLI's: nothing else may.
RUN_RECORD_VARIES = {
    ("result", "elapsed_ns"): "wall time of the run",
    ("provenance", "host", "probe", "elapsed_ns"): "wall time of the host probe",
    ("provenance", "host", "probe", "vmcall_wait_ns"): "how long the probe waited for vmcall",
    ("provenance", "host", "probe", "evidence", "vmcall_in_kernel"): "quotes that wait in ms",
    # A probe run that its time limit cut short before vmcall had waited
    # long enough is repeated with a longer limit (vmm/host_info.cc): how
    # many runs that takes depends on the machine's load.
    ("provenance", "host", "probe", "runs"): "the probe's runs, retries included",
    # The first record of a host measures the probe and keeps it; the next
    # ones read it from the cache (cli/probe_cache.h).
    ("provenance", "host", "probe", "cached"): "whether the probe came from the cache",
}
# Whole groups whose values are measured, not counted: their keys must still
# be the same.
RUN_RECORD_VARIES_UNDER = {
    ("host_counters", "deltas"): "the host's KVM statistics over the run (host-dependent)",
    # Where a vCPU was when another one stopped the run and kicked it out of
    # the guest is a matter of timing; how many exits each kept is not.
    ("result", "recent_exits"): "each vCPU's last exits and the registers they left",
}
# The guest's timings: its report keys <workload>.tsc_<what> (guest/README.md).


def record_leaves(value, path=()):
    """Every leaf of a record as (path, value); empty dicts and lists are leaves."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from record_leaves(v, path + (k,))
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            yield from record_leaves(v, path + (i,))
    else:
        yield path, value


def varies(path):
    if path in RUN_RECORD_VARIES:
        return True
    if any(path[:len(p)] == p for p in RUN_RECORD_VARIES_UNDER):
        return True
    return (len(path) == 3 and path[:2] == ("guest", "reports")
            and path[2].split(".")[-1].startswith("tsc_"))


def record_differences(cli, module):
    """The paths where two run records differ, but for what legitimately varies."""
    a, b = dict(record_leaves(cli)), dict(record_leaves(module))
    missing = object()
    out = []
    for path in sorted(set(a) | set(b), key=lambda p: [str(x) for x in p]):
        if path in a and path in b and varies(path):
            continue
        if a.get(path, missing) != b.get(path, missing) or type(a.get(path)) != type(b.get(path)):
            out.append((path, a.get(path, "<absent>"), b.get(path, "<absent>")))
    return out


def cli_json(args):
    """Runs the CLI with --json FILE and returns the record it wrote."""
    assert MINIVMM_BIN, "MINIVMM_BIN (set by ctest) names the minivmm CLI"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "record.json")
        out = subprocess.run([MINIVMM_BIN] + args + ["--json", path], capture_output=True,
                             text=True, timeout=240)
        assert out.returncode == 0, out.stderr
        with open(path) as f:
            return json.load(f)


def test_record_comparison_sees_differences():
    """The comparison below fails on any change but the listed ones."""
    r = run_pv("naive", IRQ)
    same = json.loads(json.dumps(r))
    assert record_differences(r, same) == []
    same["result"]["elapsed_ns"] += 1
    same["host_counters"]["deltas"] = {k: v + 1 for k, v in same["host_counters"]["deltas"].items()}
    assert record_differences(r, same) == []
    for change in (lambda x: x["exits"].__setitem__("total", x["exits"]["total"] + 1),
                   lambda x: x["exits"]["per_vcpu"][0].pop("directed_yields"),
                   lambda x: x["guest"]["reports"].__setitem__("irq.passes", 1),
                   lambda x: x["host_counters"]["deltas"].__setitem__("new_counter", 1),
                   lambda x: x["config"].__setitem__("cpus", True)):
        other = json.loads(json.dumps(r))
        change(other)
        assert len(record_differences(r, other)) == 1


@pytest.mark.parametrize("flags,kwargs", [
    (["--workload", "hello"], {"workload": "hello"}),
    (["--backend", "pv", "--pvops", "naive", "--workload", "ctx,rounds=10"],
     {"backend": "pv", "pvops": "naive", "workload": "ctx,rounds=10"}),
    (["--backend", "pv", "--pvops", "optimized", "--workload", "ctx,rounds=10"],
     {"backend": "pv", "pvops": "optimized", "workload": "ctx,rounds=10"}),
    (["--backend", "pv", "--cpus", "2", "--workload", IRQ],
     {"backend": "pv", "cpus": 2, "workload": IRQ}),
    (["--backend", "native", "--wasted", "--workload", IRQ],
     {"backend": "native", "wasted": True, "workload": IRQ}),
    (["--backend", "pv", "--pvops", "naive", "--wasted", "--sites", "--workload", "ctx,tls=same"],
     {"backend": "pv", "pvops": "naive", "wasted": True, "sites": True,
      "workload": "ctx,tls=same"}),
], ids=["hello", "ctx-naive", "ctx-optimized", "cpus2", "wasted", "sites"])
def test_run_record_is_the_clis(flags, kwargs):
    kernel = minivmm.default_kernel_path()
    cli = cli_json(["run", "--quiet", "--kernel", kernel] + flags)
    module = minivmm.run(kernel=kernel, **kwargs)
    assert module.ok, module.failure
    # The timeline's bins are host time: only its exits per cause are exact.
    assert ("timeline" in cli) == ("timeline" in module) == bool(kwargs.get("sites"))
    if "timeline" in cli:
        a, b = cli.pop("timeline"), module.pop("timeline")
        assert {c: sum(r) for c, r in a["exits_by_cause"].items()} == \
            {c: sum(r) for c, r in b["exits_by_cause"].items()} == exits_by_cause(cli)
    assert record_differences(cli, module) == []
    # Both probed the host.
    assert "probe" in module["provenance"]["host"]


# What differs between two benches besides their runs' records: when and how
# they were started, and everything measured in time.
BENCH_TIMING_METRICS = {"guest.tsc_per_op", "guest.tsc_per_op_net", "host.run_ms",
                        "kvm.insn_emulation", "kvm.insn_emulation_per_op"}
# A seed's comparison: these are names and exact counts; the rest is timing.
SEED_EXACT = {"seed", "op", "workload", "metric", "unit", "published", "baseline",
              "before_configuration", "after_configuration", "exits_saved_per_unit"}


def test_bench_record_is_the_clis():
    workloads = "cpa:pages=4:rounds=1"
    cli = cli_json(["bench", "--quiet", "--workloads", workloads, "--repeat", "1",
                    "--backend", "pv"])
    seen = []
    module = minivmm.bench(workloads, backends="pv", repeat=1,
                           progress=lambda i, n, run: seen.append((i, n, run["index"])))
    assert set(module) == set(cli)
    for key in ("schema", "schema_version", "complete", "incomplete", "failures"):
        assert module[key] == cli[key], key
    assert module["complete"] is True and module["failures"] == 0
    settings = dict(cli["settings"])
    assert module["settings"] == settings
    assert settings["workloads"] == ["cpa,pages=4,rounds=1"] and settings["backends"] == ["pv"]
    # Both time the built-in guest's uncounted kernel by default.
    assert settings["guest_counters"] is False
    assert set(module["provenance"]) == set(cli["provenance"])
    assert module["provenance"]["command_line"].startswith("minivmm.bench(")
    # The provenance is the first run's, plus how and when the bench started
    # and how long it took.
    bench_only = ("command_line", "started_at", "elapsed_ns")
    assert record_differences(
        {"provenance": {k: v for k, v in cli["provenance"].items() if k not in bench_only}},
        {"provenance": {k: v for k, v in module["provenance"].items() if k not in bench_only}}) == []

    # The same runs in the same order, each with the CLI's run record.
    names = [c["name"] for c in minivmm.bench_configurations()]
    assert len(module["runs"]) == len(cli["runs"]) == 2 * len(names)
    assert seen == [(i + 1, len(cli["runs"]), i) for i in range(len(cli["runs"]))]
    for c, m in zip(cli["runs"], module["runs"]):
        assert {k: v for k, v in m.items() if k != "record"} == {
            k: v for k, v in c.items() if k != "record"}
        assert record_differences(c["record"], m["record"]) == [], m["index"]
    runs = [r for r in module["runs"] if not r["baseline"]]
    assert [r["configuration"] for r in runs] == names
    for run in runs:
        assert run["ok"], run["failure"]
        mmu = run["record"]["hypercalls"]["calls"]["mmu_update"]
        # 2 R N changed entries, each one update, or two where pte_modify is
        # naive (docs/exit-model.md "6.").
        k = 2 if "pte_modify:naive" in run["pvops"] else 1
        assert mmu["ops"] == k * 2 * 4 * 1
        batched = run["configuration"] in ("batch", "optimized") or run["pvops"].startswith("xen")
        assert mmu["exits"] == (0 if batched else k * 8)

    # The summaries: one result per configuration, exact counts equal.
    assert len(module["results"]) == len(cli["results"]) == len(names)
    for c, m in zip(cli["results"], module["results"]):
        assert {k: v for k, v in m.items() if k != "metrics"} == {
            k: v for k, v in c.items() if k != "metrics"}
        assert set(m["metrics"]) == set(c["metrics"])
        for name in m["metrics"]:
            if name in BENCH_TIMING_METRICS:
                assert set(m["metrics"][name]) == set(c["metrics"][name]), name
            else:
                assert m["metrics"][name] == c["metrics"][name], (m["configuration"], name)
    assert set(module["exit_cost"]) == set(cli["exit_cost"])
    assert [set(s) for s in module["seeds"]] == [set(s) for s in cli["seeds"]]
    for c, m in zip(cli["seeds"], module["seeds"]):
        assert {k: m[k] for k in SEED_EXACT} == {k: c[k] for k in SEED_EXACT}

    df = minivmm.to_dataframe(module)
    assert len(df) > len(module["runs"])
    assert set(df[~df.baseline]["configuration"]) == set(names)
    total = df[(df.metric == "exits.total") & ~df.baseline].set_index("configuration")["value"]
    assert total["naive"] > total["optimized"]


def test_a_failed_bench_run_stops_it_and_the_record_says_so():
    # As the CLI (tests/cli/output_test.cc BenchStopTest): workload=fault
    # shuts down with code 3 on its first run, after the native baselines.
    # In a child interpreter, so that its stderr (the module's FAILED line,
    # written by C++) comes back through a pipe: pytest's fd capture needs
    # temporary files the nested KVM's 9p file system cannot truncate.
    child = subprocess.run(
        [sys.executable, "-c",
         "import json, minivmm\n"
         "r = minivmm.bench('fault', backends='native', repeat=1, probe_host=False)\n"
         "print(json.dumps({'runs': [{'ok': x['ok']} for x in r['runs']],\n"
         "                  'complete': r['complete'], 'failures': r['failures'],\n"
         "                  'incomplete': r['incomplete'],\n"
         "                  'host': r['provenance']['host'],\n"
         "                  'run0_host': r['runs'][0]['record']['provenance']['host']}))\n"],
        capture_output=True, text=True, timeout=240)
    assert child.returncode == 0, child.stderr
    record = json.loads(child.stdout.strip().splitlines()[-1])
    # The configurations that are not pv-only: their baselines, then the
    # first fault run; the others' fault runs are missing.
    native = sum(1 for c in minivmm.bench_configurations() if not c["pv_only"])
    assert native > 1
    assert len(record["runs"]) == native + 1
    assert record["runs"][-1]["ok"] is False
    assert record["complete"] is False and record["failures"] == 1
    assert record["incomplete"]["reason"] == f"run {native} failed: guest shut down with code 3"
    assert record["incomplete"]["exit_status"] == 1
    assert len(record["incomplete"]["missing"]) == native - 1
    # probe_host=False: no host description at all.
    assert record["host"] == record["run0_host"]
    assert set(record["host"]) == {"guest_detected"}
    assert child.stderr.count("FAILED") == 1, child.stderr
    assert ("minivmm.bench: FAILED: fault native naive rep 1 (backend=native pvops=naive "
            "workload=fault): status 3, guest shut down with code 3") in child.stderr


def test_bench_runs_the_configurations_it_names_and_their_references():
    # As `bench --configurations` (tests/cli/bench_cli_test.cc
    # BenchConfigurationsTest): naive always runs, xen with a xen+<op>; fpu
    # with K threads and N rounds switches K N + K + 1 times, a stack_switch
    # each under sp0:naive (its own exit unless batched) and none under
    # sp0:optimized.
    k, n = 2, 3
    record = minivmm.bench(f"fpu:threads={k}:rounds={n}", backends="pv", repeat=1,
                           configurations=["xen+tls", "sp0"], probe_host=False)
    names = [c["name"] for c in record["settings"]["configurations"]]
    assert names == ["naive", "sp0", "xen", "xen+tls"]
    assert len(record["runs"]) == 2 * len(names)
    assert record["provenance"]["command_line"].endswith('configurations="xen+tls,sp0")')
    # xen batches: its loads are multicall entries, no exits of their own.
    exits = {r["configuration"]: r["metrics"]["exits.sp0_load"]["median"]
             for r in record["results"]}
    assert exits == {"naive": k * n + k + 1, "sp0": 0, "xen": 0, "xen+tls": 0}, exits


def test_bench_refuses_what_the_cli_refuses():
    # The CLI's syntax: "," separates workloads, ":" their parameters; the
    # built-in guest's own parser refuses a bad one before any VM runs.
    with pytest.raises(ValueError, match="rounds=1"):
        minivmm.bench("cpa,rounds=1", backends="pv")
    with pytest.raises(ValueError, match="empty"):
        minivmm.bench("", backends="pv")
    with pytest.raises(ValueError, match="backend"):
        minivmm.bench("irq", backends="xen")
    with pytest.raises(ValueError, match="repeat"):
        minivmm.bench("irq", repeat=0)
    with pytest.raises(ValueError, match="unknown configuration 'nope'"):
        minivmm.bench("irq", configurations="sp0,nope")
    # As --guest-counters with --kernel: it picks a built-in guest's kernel.
    with pytest.raises(ValueError, match="guest_counters"):
        minivmm.bench("irq", kernel=minivmm.default_kernel_path(), guest_counters=True)


def test_several_cpus_per_vcpu_counts_and_stops():
    """Vm(cpus=N): vCPU 0 counts what a one-CPU run counts, each other vCPU
    its bring-up and idle hypercalls as the guest reports them, and the
    run's totals are the guest's counts plus the exit model's bring-up."""
    one = minivmm.run(backend="pv", pvops="naive", workload=IRQ, timeout=60, wasted=True,
                      probe_host=False)
    vm = minivmm.Vm(backend="pv", pvops="naive", workload=IRQ, timeout=60, wasted=True, cpus=3,
                    probe_host=False)
    assert vm.cpus == 3
    r = vm.run()
    assert r.ok, r.failure
    assert r["config"]["cpus"] == 3 and one["config"]["cpus"] == 1
    result = r["result"]
    assert result["stopped_by_vcpu"] == 0
    assert [v["vcpu"] for v in result["vcpus"]] == [0, 1, 2]
    assert [v["with_vm"] for v in result["vcpus"]] == [False, True, True]
    assert [v["idle"] for v in result["vcpus"]] == [False, True, True]
    assert {v["stop_reason"] for v in result["vcpus"]} == {"guest shutdown"}
    per_vcpu = r["exits"]["per_vcpu"]
    assert [v["vcpu"] for v in per_vcpu] == [0, 1, 2]
    cpu0, single = per_vcpu[0], one["exits"]["per_vcpu"][0]
    for key in ("total", "by_reason", "hypercalls", "hypercall_exits", "causes", "wasted"):
        assert cpu0[key] == single[key], key
    guest = reports(r)
    for name, c in cpu0["hypercalls"].items():
        assert c["exits"] == guest.get("kernel.hc_exits." + name, 0), name
    for cpu in (1, 2):
        v = per_vcpu[cpu]
        prefix = "smp.cpu%d." % cpu
        assert v["total"] == guest[prefix + "bringup_hypercalls"] + guest[prefix + "idle_blocks"]
        # Bring-up (run-state area, interrupts on), then one block.
        assert v["hypercall_exits"] == {"vcpu_op": 1, "set_if": 1, "sched_op": 1}
        assert all(c["exits"] == (1 if n == "if_set" else 0) for n, c in v["causes"].items())
        assert all(c["exits"] == 0 for c in v["wasted"]["by_cause"].values())
    # The run's totals are the per-vCPU counts added up (that is how the VMM
    # builds them), so they are checked against other sources: the guest's
    # own counts and the exit model (docs/exit-model.md "Secondary CPUs":
    # each other CPU costs vcpu_op, set_if(1) and one sched_op block), and
    # the one-CPU run.
    bringup = {"vcpu_op": 1, "set_if": 1, "sched_op": 1}
    for name, c in r["hypercalls"]["calls"].items():
        assert c["exits"] == guest.get("kernel.hc_exits." + name, 0) + 2 * bringup.get(name, 0), name
        assert c["ops"] == guest.get("kernel.hc." + name, 0) + 2 * bringup.get(name, 0), name
    for name, c in causes(r).items():
        for k in ("ops", "exits"):
            assert c[k] == causes(one)[name][k] + (2 if name == "if_set" else 0), (name, k)
    for name, c in r["wasted"]["by_cause"].items():
        assert c == one["wasted"]["by_cause"][name], name
    assert r["exits"]["total"] == one["exits"]["total"] + 2 * 3
    assert one["wasted"] is not None
    assert minivmm.run(workload="none", probe_host=False)["wasted"] is None

    df = minivmm.to_dataframe([r])
    rows = df.set_index("metric")["value"]
    assert rows["vcpu1.hypercalls.sched_op.exits"] == 1
    assert rows["vcpu0.exits.total"] == cpu0["total"]


@pytest.mark.parametrize("cpus", [0, 33, -1, 1 << 40])
def test_cpu_count_outside_one_to_32_raises(cpus):
    with pytest.raises(ValueError, match="between 1 and 32"):
        minivmm.Vm(workload="none", cpus=cpus)


def exits_by_cause(record):
    """Exits per cause ("none": of no cause), as the record counts them."""
    out = {c: n["exits"] for c, n in record["causes"]["causes"].items() if n["exits"]}
    caused = sum(out.values())
    if record["exits"]["total"] > caused:
        out["none"] = record["exits"]["total"] - caused
    return out


def test_sites_are_a_list_of_dicts_that_add_up_to_the_exits():
    r = minivmm.run(backend="pv", pvops="naive", workload="ctx,tls=same", wasted=True,
                    sites=True, probe_host=False)
    assert r.ok, r.failure
    assert r.sites == minivmm.sites(r)
    by_cause, wasted_by_cause = {}, {}
    for s in r.sites:
        assert set(s) == {"cause", "reason", "hypercall", "function", "file", "line", "rip",
                          "exits", "wasted", "batchable", "user", "stack",
                          "by_vcpu"}
        by_cause[s["cause"]] = by_cause.get(s["cause"], 0) + s["exits"]
        wasted_by_cause[s["cause"]] = wasted_by_cause.get(s["cause"], 0) + s["wasted"]
        assert s["stack"][0] == (s["function"] or "0x%x" % s["rip"])
    assert by_cause == exits_by_cause(r)
    assert r["sites"]["wasted_unplaced"] == 0
    for cause, c in r["wasted"]["by_cause"].items():
        assert wasted_by_cause.get(cause, 0) == c["exits"], cause
    tls = [s for s in r.sites if s["cause"] == "descriptor_update" and "LoadTls" in s["stack"]]
    assert tls, "tls=same updates descriptors from LoadTls"
    assert all(s["function"] == "RawHypercall" and s["file"] == "hypercall.h" and s["line"] > 0
               and s["hypercall"] == "update_descriptor" for s in tls)


def test_sites_dataframe_has_a_row_per_site():
    r = minivmm.run(backend="pv", pvops="naive", workload="ctx", sites=True, probe_host=False)
    assert r.ok, r.failure
    df = minivmm.sites_dataframe(r)
    assert len(df) == len(r.sites) > 1
    assert df.groupby("cause")["exits"].sum().to_dict() == exits_by_cause(r)
    assert df["wasted"].isna().all()  # no wasted=True
    assert all(stack.endswith(";" + f) or stack == f
               for stack, f in zip(df["stack"], df["function"]) if f)


def test_without_sites_the_record_has_none():
    r = minivmm.run(workload="none", probe_host=False)
    assert "sites" not in r and r.sites is None
    with pytest.raises(KeyError):
        minivmm.sites(r)


def test_to_dataframe_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pandas"):
        minivmm.to_dataframe([])


def test_pc_machine_runs_a_multiboot_guest():
    """machine="pc" (docs/machines.md): a Multiboot guest of the project's own,
    its debug-exit status, its console and the record's machine; the built-in
    guest's words are refused there."""
    guest = os.path.join(os.environ["MINIVMM_PC_GUEST_DIR"], "pc_entry.elf")
    try:
        r = minivmm.Vm(machine="pc", kernel=guest, cmdline="x exit=2", probe_host=False,
                       cpu_features="-pcid", cpu_vendor="GenuineIntel").run()
    except RuntimeError as e:
        # The host check's refusal (vmm/machine/pc_host_check.h), allowed
        # only where kvm_pvm backs /dev/kvm (docs/hosts.md).
        assert "the pc machine cannot run here: this host's KVM does not deliver an exception" in str(e), e
        assert os.path.exists("/sys/module/kvm_pvm"), e
        return
    assert r["result"]["exit_code"] == (2 << 1) | 1, r.console
    assert r["config"]["machine"] == "pc"
    assert r["config"]["cpu_features"] == "-pcid"
    assert r["config"]["cpu_vendor"] == "GenuineIntel"
    assert r["config"]["hyperv"] is False and r["config"]["hyperv_testdev"] is False
    assert f"cmdline={guest} x exit=2\n" in r.console
    assert r["exits"]["pio_by_device"]["uart"] == len(r.console.encode())
    with pytest.raises(ValueError):
        minivmm.Vm(machine="pc", kernel=guest, workload="ctx")
    with pytest.raises(ValueError, match="unknown machine 'microvm'"):
        minivmm.Vm(machine="microvm")
    with pytest.raises(ValueError, match="write \\+NAME"):
        minivmm.Vm(machine="pc", kernel=guest, cpu_features="pcid")
    with pytest.raises(ValueError, match="12 printable"):
        minivmm.Vm(machine="pc", kernel=guest, cpu_vendor="Intel")


def test_q35_machine_runs_edu_through_the_iommu():
    """machine="q35" with split_irqchip=True, intel_iommu=True and edu=True
    (`minivmm run --machine q35 --split-irqchip --intel-iommu --edu`): the
    project's pc_q35 guest passes,
    and the record counts its accesses by device as the guest counted them;
    the q35 devices are refused on the pc machine."""
    guest = os.path.join(os.environ["MINIVMM_PC_GUEST_DIR"], "pc_q35.elf")
    with pytest.raises(ValueError, match="the edu device is for the q35 machine"):
        minivmm.Vm(machine="pc", kernel=guest, edu=True)
    with pytest.raises(ValueError, match="an Intel IOMMU needs the split irqchip"):
        minivmm.Vm(machine="q35", kernel=guest, intel_iommu=True, edu=True)
    try:
        r = minivmm.Vm(machine="q35", kernel=guest, split_irqchip=True, intel_iommu=True,
                       edu=True, probe_host=False).run()
    except RuntimeError as e:
        assert "the pc machine cannot run here: this host's KVM does not deliver an exception" in str(e), e
        assert os.path.exists("/sys/module/kvm_pvm"), e
        return
    assert r["result"]["exit_code"] == 1, r.console
    assert r["config"]["machine"] == "q35"
    assert r["config"]["intel_iommu"] is True and r["config"]["edu"] is True
    assert r["config"]["split_irqchip"] is True
    counts = dict(kv.split("=") for kv in re.search(r"^pci_config_accesses=.*$", r.console,
                                                    re.M).group(0).split())
    assert r["exits"]["pio_by_device"]["pci-config"] == int(counts["pci_config_accesses"])
    assert r["exits"]["mmio_by_device"]["edu"] == int(counts["edu_accesses"])
    assert r["exits"]["mmio_by_device"]["intel-iommu"] == int(counts["iommu_accesses"])
    assert r["exits"]["mmio_by_device"]["ioapic"] == int(counts["ioapic_accesses"])
    assert "q35=pass\n" in r.console


def test_hyperv_testdev_is_the_pc_machines_with_hyperv():
    """hyperv_testdev=True (`minivmm run --hyperv-testdev`): refused on the
    built-in machine, and on the PC machine without hyperv=True, before any
    vCPU exists, on every host."""
    guest = os.path.join(os.environ["MINIVMM_PC_GUEST_DIR"], "pc_synic.elf")
    with pytest.raises(ValueError, match="hyperv-testdev is for the pc machine"):
        minivmm.Vm(hyperv_testdev=True)
    with pytest.raises(ValueError, match="hyperv-testdev needs Hyper-V's enlightenments"):
        minivmm.Vm(machine="pc", kernel=guest, hyperv_testdev=True)


def run_kernel_exits(**kwargs):
    """minivmm.Vm(**kwargs).run() with kernel_exits=True; None where the host
    refuses --kernel-exits, which only kvm_pvm does, by name (asserted,
    docs/hosts.md)."""
    try:
        return minivmm.Vm(**kwargs).run()
    except RuntimeError as e:
        assert os.path.exists("/sys/module/kvm_pvm"), e
        assert "--kernel-exits: kvm_pvm does not report the guest code it emulates" in str(e), e
        return None


def test_kernel_exit_events_are_the_records_kernel_exits_one_by_one():
    """kernel_exit_events=True (with kernel_exits=True): every exit KVM's
    tracepoint saw, as dicts; they add up to the record's kernel_exits
    section reason by reason and vCPU by vCPU, and those that returned to
    minivmm to its `returns`. kvm_pvm refuses --kernel-exits by name
    (docs/hosts.md); that is its one line."""
    r = run_kernel_exits(workload="ctx", cpus=2, kernel_exits=True, kernel_exit_events=True,
                         probe_host=False)
    if r is None:
        return
    assert r.ok, r.failure
    k = r["kernel_exits"]
    events = r.kernel_exit_events
    assert k["lost"] == 0
    assert len(events) == k["exits"] > 0
    by_reason, to_vmm, by_vcpu = {}, {}, {}
    for e in events:
        assert set(e) == {"vcpu", "time_ns", "reason", "rip", "to_vmm"}
        by_reason[e["reason"]] = by_reason.get(e["reason"], 0) + 1
        by_vcpu[e["vcpu"]] = by_vcpu.get(e["vcpu"], 0) + 1
        if e["to_vmm"]:
            to_vmm[e["reason"]] = to_vmm.get(e["reason"], 0) + 1
    assert by_reason == k["by_reason"]
    assert to_vmm == k["to_vmm_by_reason"]
    assert by_vcpu == {v: c["exits"] for v, c in enumerate(k["per_vcpu"]) if c["exits"]}
    for v in by_vcpu:
        times = [e["time_ns"] for e in events if e["vcpu"] == v]
        assert times == sorted(times)


def test_kernel_exit_stacks_are_each_exits_frames():
    """kernel_exits=True with sites=True: on kvm_amd every exit's
    frame-pointer stack, taken at the exit (the record's kernel_exits
    "by_stack", each event's "stack", the RIP first), adding up to the exits;
    the sites name them. On kvm_intel the notes say why there are none;
    kvm_pvm refuses --kernel-exits (docs/hosts.md)."""
    r = run_kernel_exits(workload="ctx", kernel_exits=True, kernel_exit_events=True, sites=True,
                         probe_host=False)
    if r is None:
        return
    assert r.ok, r.failure
    k = r["kernel_exits"]
    if os.path.exists("/sys/module/kvm_intel"):
        assert k["stacks"] is False
        assert any("frame-pointer stack: the guest's RIP, CPL and CS" in n
                   for n in r["result"]["notes"]), r["result"]["notes"]
        return
    assert k["stacks"] is True, r["result"]["notes"]
    assert k["unstacked"] == 0
    assert sum(s["exits"] for s in k["by_stack"]) == k["exits"]
    assert sum(s["exits"] for s in k["sites"]) == k["exits"]
    events = r.kernel_exit_events
    assert all(e["stack"][0] == e["rip"] for e in events)
    # Some exits are deeper than their RIP: the guest keeps frame pointers.
    assert any(len(e["stack"]) > 2 for e in events)
    assert any(len(s["frames"]) > 2 for s in k["sites"])


def test_kernel_exit_events_need_kernel_exits():
    with pytest.raises(ValueError, match="kernel_exit_events needs kernel_exits=True"):
        minivmm.Vm(kernel_exit_events=True)
    r = minivmm.run(workload="none", probe_host=False)
    assert r.kernel_exit_events is None
