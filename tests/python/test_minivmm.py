"""Tests of the minivmm Python module (docs/python.md).

The exact counts are the C++ tests' (tests/integration/pvops_test.cc): they
hold on every KVM host. CR0 counts depend on the host (kernel.ring3_nm,
docs/exit-model.md) and are not asserted here. Every test boots real guests:
nothing is skipped when /dev/kvm is unusable, the tests fail.
"""
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import minivmm

IRQ = "irq,loops=20,depth=3"
CPA = "cpa,pages=16,rounds=2"

_cache = {}


def run_pv(pvops, workload):
    """One pv run per (pvops, workload), shared by the tests."""
    key = (pvops, workload)
    if key not in _cache:
        _cache[key] = minivmm.run(backend="pv", pvops=pvops, workload=workload, timeout=60)
    result = _cache[key]
    assert result["stop_reason"] == "guest shutdown", (result["detail"], result["console_tail"])
    assert result["exit_code"] == 0, result["console"]
    return result


def hc(result, name):
    return result["hypercalls"]["calls"][name]


def test_result_is_plain_python():
    r = run_pv("naive", IRQ)
    assert r["ok"] is True and r["status"] == 0 and r["failure"] == ""
    assert r["cmdline"] == "backend=pv pvops=naive workload=" + IRQ
    exits = r["exits"]
    assert exits["total"] == sum(exits["by_reason"].values()) > 0
    assert len(exits["per_vcpu"]) == 1 and exits["per_vcpu"][0]["total"] == exits["total"]
    assert exits["pio_by_device"]["hypercall"] > 0
    assert set(r["causes"]) == {"if_set", "if_clear", "cr0_write", "descriptor_update",
                                "page_table_update", "cr3_write", "multicall", "ipi",
                                "tlb_flush", "lock_wait", "lock_kick", "yield"}
    # Guest reports: integers are ints, the rest strs.
    assert r["reports"]["config.backend"] == "pv"
    assert r["reports"]["config.workload"] == "irq"
    assert r["reports"]["check.failed"] == 0
    assert isinstance(r["reports"]["kernel.irq_restores_if_clear"], int)
    assert isinstance(r["host_counters"], dict)
    assert isinstance(r["registers"]["rip"], int)
    # No timer: no interrupt windows.
    assert r["causes"]["if_set"]["host_dependent_exits"] == 0


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
    assert naive["reports"]["irq.irq_restores_if_clear"] == 20 * 2
    assert naive["reports"]["irq.irq_restores_if_set"] == 20
    if_clear = naive["reports"]["kernel.irq_restores_if_clear"]
    assert if_clear > 0
    assert if_clear == optimized["reports"]["kernel.irq_restores_if_clear"]
    assert hc(naive, "set_if")["exits"] - hc(optimized, "set_if")["exits"] == if_clear
    assert (naive["causes"]["if_clear"]["exits"] - optimized["causes"]["if_clear"]["exits"]
            == if_clear)
    assert naive["causes"]["if_set"]["exits"] == optimized["causes"]["if_set"]["exits"]


@pytest.mark.parametrize("pvops,workload", [("naive", IRQ), ("naive,irq_restore:optimized", IRQ),
                                            ("naive", CPA), ("naive,batch:on", CPA)])
def test_every_hypercall_count_matches_the_guest(pvops, workload):
    r = run_pv(pvops, workload)
    reports = r["reports"]
    calls = r["hypercalls"]["calls"]
    assert "set_if" in calls and "mmu_update" in calls
    for name, c in calls.items():
        assert c["ops"] == reports.get("kernel.hc." + name, 0), name
        assert c["exits"] == reports.get("kernel.hc_exits." + name, 0), name
    assert r["hypercalls"]["bad_number"] == 0


def test_cpa_page_table_updates():
    naive = run_pv("naive", CPA)
    assert hc(naive, "mmu_update")["exits"] == 2 * 16 * 2
    assert naive["causes"]["page_table_update"]["ops"] == 2 * 16 * 2
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
        vm = minivmm.Vm(backend="pv", workload="none")
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


def test_second_run_raises():
    vm = minivmm.Vm(backend="pv", workload="none")
    assert vm.run()["stop_reason"] == "guest shutdown"
    with pytest.raises(RuntimeError):
        vm.run()


def test_exit_callback_sees_every_exit():
    events = []
    r = minivmm.Vm(backend="pv", pvops="naive", workload="irq,loops=5").run(on_exit=events.append)
    assert r["ok"]
    assert len(events) == r["exits"]["total"]
    assert [e["sequence"] for e in events] == list(range(events[0]["sequence"],
                                                         events[0]["sequence"] + len(events)))
    by_reason = {}
    for e in events:
        by_reason[e["reason"]] = by_reason.get(e["reason"], 0) + 1
    assert by_reason == {k: v for k, v in r["exits"]["by_reason"].items() if v}
    set_if = r["hypercalls"]["calls"]["set_if"]
    assert sum(1 for e in events if e["hypercall"] == set_if["nr"]) == set_if["exits"]
    assert sum(1 for e in events if e["hypercall"] >= 0) == sum(
        c["exits"] for c in r["hypercalls"]["calls"].values())


def test_refused_hypercalls_carry_their_reason():
    events = []
    r = minivmm.Vm(backend="pv", workload="hostile").run(on_exit=events.append)
    assert r["ok"]
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

    vm = minivmm.Vm(backend="pv", workload="irq,loops=5")
    with pytest.raises(Boom, match="five"):
        vm.run(on_exit=on_exit)
    assert len(seen) == 5
    # The module still works.
    assert minivmm.run(backend="pv", workload="none")["ok"]


def test_gil_is_released_while_the_guest_runs():
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        vm = minivmm.Vm(backend="pv", pvops="naive", workload=IRQ)
        time.sleep(0.01)
        before = counter[0]
        r = vm.run()
        during = counter[0] - before
    finally:
        stop.set()
        thread.join()
    assert r["ok"]
    # With the GIL held for the run, the thread could not have counted at all.
    assert during > 1000, during


def test_request_stop_from_another_thread():
    vm = minivmm.Vm(backend="pv", workload="ctx,rounds=1000000", timeout=30)
    timer = threading.Timer(0.3, vm.request_stop)
    timer.start()
    try:
        r = vm.run()
    finally:
        timer.cancel()
    assert r["stop_reason"] == "stop requested", r["detail"]
    assert r["exits"]["total"] > 0


def test_bench_runs_the_clis_matrix():
    configurations = minivmm.bench_configurations()
    names = [c["name"] for c in configurations]
    assert names[0] == "naive" and "optimized" in names and "batch" in names
    # Xen's baseline and the seeds against it run under pv only.
    assert [c["name"] for c in configurations if c["pv_only"]] == [
        n for n in names if n == "xen" or n.startswith("xen+")] != []
    runs = minivmm.bench(["cpa,pages=4,rounds=1"], backends="pv", repeat=1)
    assert [r["configuration"] for r in runs] == names
    assert [r["pvops"] for r in runs] == [c["pvops"] for c in configurations]
    for run in runs:
        assert run["workload"] == "cpa" and run["workload_spec"] == "cpa,pages=4,rounds=1"
        assert run["backend"] == "pv" and run["repetition"] == 0
        assert run["result"]["ok"], run["result"]["failure"]
        mmu = run["result"]["hypercalls"]["calls"]["mmu_update"]
        assert mmu["ops"] == 2 * 4 * 1
        batched = run["configuration"] in ("batch", "optimized") or run["pvops"].startswith("xen")
        assert mmu["exits"] == (0 if batched else 8)

    df = minivmm.to_dataframe(runs)
    assert len(df) > len(runs)
    assert set(df["configuration"]) == set(names)
    total = df[(df.metric == "exits.total")].set_index("configuration")["value"]
    assert total["naive"] > total["optimized"]


def test_several_cpus_per_vcpu_counts_and_stops():
    """Vm(cpus=N): vCPU 0 counts what a one-CPU run counts, each other vCPU
    its bring-up and idle hypercalls as the guest reports them, and the
    run's totals are the guest's counts plus the exit model's bring-up."""
    one = minivmm.run(backend="pv", pvops="naive", workload=IRQ, timeout=60, wasted=True)
    vm = minivmm.Vm(backend="pv", pvops="naive", workload=IRQ, timeout=60, wasted=True, cpus=3)
    assert vm.cpus == 3
    r = vm.run()
    assert r["ok"], r["failure"]
    assert r["vcpu_count"] == 3 and one["vcpu_count"] == 1
    assert r["stopped_by_vcpu"] == 0
    assert [v["vcpu"] for v in r["vcpus"]] == [0, 1, 2]
    assert [v["with_vm"] for v in r["vcpus"]] == [False, True, True]
    assert [v["idle"] for v in r["vcpus"]] == [False, True, True]
    assert {v["stop_reason"] for v in r["vcpus"]} == {"guest shutdown"}
    per_vcpu = r["exits"]["per_vcpu"]
    assert [v["vcpu"] for v in per_vcpu] == [0, 1, 2]
    cpu0, single = per_vcpu[0], one["exits"]["per_vcpu"][0]
    for key in ("total", "by_reason", "hypercalls", "causes", "wasted"):
        assert cpu0[key] == single[key], key
    reports = r["reports"]
    for name, c in cpu0["hypercalls"].items():
        assert c["exits"] == reports.get("kernel.hc_exits." + name, 0), name
    for cpu in (1, 2):
        v = per_vcpu[cpu]
        prefix = "smp.cpu%d." % cpu
        assert v["total"] == reports[prefix + "bringup_hypercalls"] + reports[prefix + "idle_blocks"]
        # Bring-up (run-state area, interrupts on), then one block.
        assert {n: c["exits"] for n, c in v["hypercalls"].items() if c["exits"]} == {
            "vcpu_op": 1, "set_if": 1, "sched_op": 1}
        assert all(c["exits"] == (1 if n == "if_set" else 0) for n, c in v["causes"].items())
        assert all(c["exits"] == 0 for c in v["wasted"]["by_cause"].values())
    # The run's totals are the per-vCPU counts added up (that is how the VMM
    # builds them), so they are checked against other sources: the guest's
    # own counts and the exit model (docs/exit-model.md "Secondary CPUs":
    # each other CPU costs vcpu_op, set_if(1) and one sched_op block), and
    # the one-CPU run.
    bringup = {"vcpu_op": 1, "set_if": 1, "sched_op": 1}
    for name, c in r["hypercalls"]["calls"].items():
        assert c["exits"] == reports.get("kernel.hc_exits." + name, 0) + 2 * bringup.get(name, 0), name
        assert c["ops"] == reports.get("kernel.hc." + name, 0) + 2 * bringup.get(name, 0), name
    for name, c in r["causes"].items():
        for k in ("ops", "exits"):
            assert c[k] == one["causes"][name][k] + (2 if name == "if_set" else 0), (name, k)
    for name, c in r["wasted"]["by_cause"].items():
        assert c == one["wasted"]["by_cause"][name], name
    assert r["exits"]["total"] == one["exits"]["total"] + 2 * 3
    assert one["wasted"] is not None and minivmm.run(workload="none")["wasted"] is None

    df = minivmm.to_dataframe([r])
    rows = df.set_index("metric")["value"]
    assert rows["vcpu1.hypercalls.sched_op.exits"] == 1
    assert rows["vcpu0.exits.total"] == cpu0["total"]


@pytest.mark.parametrize("cpus", [0, 33, -1, 1 << 40])
def test_cpu_count_outside_one_to_32_raises(cpus):
    with pytest.raises(ValueError, match="between 1 and 32"):
        minivmm.Vm(workload="none", cpus=cpus)


def test_to_dataframe_without_pandas(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pandas"):
        minivmm.to_dataframe([])
