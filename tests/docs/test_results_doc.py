"""RESULTS.md without a KVM: every table is of a known kind and readable,
the tables of one run's counts hold their identities, and the readers pick
the right side of an `a / b` cell for each host (fake records of each kind).
"""

import copy

import pytest

import results_bench as rb
import results_doc as rd
import results_runs as rr


@pytest.fixture(scope="module")
def doc():
    return rd.load_tables()


def test_every_table_has_its_command_or_says_it_is_one_runs_counts(doc):
    tables, timing = doc
    kinds = {}
    for t in tables:
        k = rd.kind(t, timing)
        kinds.setdefault(k, []).append(t)
        if k == "bench":
            assert rb.bench_table(t).cells, t.where()
        elif k == "run":
            rr.run_table(t)
        elif k == "one run":
            assert tuple(t.header) in rr.ONE_RUN_TABLES, f"{t.where()}: no identities for columns {t.header}"
    # The document's count tables, by kind: the bench ones (naive ->
    # optimized, each op alone, both KVMs), the shootdown runs, the lock,
    # tasks and each-seed-alone-on-several-CPUs runs.
    assert {k: len(v) for k, v in kinds.items() if k != "timing"} == {"bench": 3, "run": 1, "one run": 3}


def test_every_timing_section_named_exists(doc):
    tables, timing = doc
    assert timing, "RESULTS.md names no timing sections"
    for name in timing:
        assert any(t.heading.startswith(name) for t in tables), f"no table under a heading '{name}...'"


def test_one_run_tables_hold_the_identities_of_every_run(doc):
    tables, timing = doc
    for t in tables:
        if rd.kind(t, timing) == "one run":
            assert rr.ONE_RUN_TABLES[tuple(t.header)](t) == []


def test_an_unmarked_table_fails():
    tables, timing = rd.parse_markdown("## Counts\n\nSome words.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    with pytest.raises(rd.DocError, match="neither the command"):
        rd.kind(tables[0], timing)


def test_a_heading_needs_a_space_after_its_hashes():
    tables, _ = rd.parse_markdown("## Counts\n\n#NM traps here.\n\n| a |\n|---|\n| 1 |\n")
    assert tables[0].heading == "Counts"
    assert tables[0].before == ("paragraph", "#NM traps here.")


def test_a_table_of_unknown_columns_after_a_command_fails():
    md = "```sh\nminivmm bench --workloads ctx --backend pv\n```\n\n| x | y |\n|---|---|\n| 1 | 2 |\n"
    tables, _ = rd.parse_markdown(md)
    with pytest.raises(rd.DocError, match="no reader"):
        rb.bench_table(tables[0])


def test_a_one_run_identity_that_fails_is_reported():
    md = (
        f"{rd.NOT_REGENERATED} Timing.\n\n| N | workload | pvops | exits | per vCPU | ipi | IF | desc | CR0 | locks |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n| 2 | `ctx` | `naive` | 10 | 4 / 5 | 0 | 0 | 0 | 0 | 0 |\n"
        "| 1 | `ctx` | `naive` | 10 | 10 | 1 | 0 | 0 | 0 | 0 |\n"
    )
    tables, timing = rd.parse_markdown(md)
    assert rd.kind(tables[0], timing) == "one run"
    bad = rr.tasks_identities(tables[0])
    assert len(bad) == 2 and "add up to 9, not 10" in bad[0] and "no IPI" in bad[1]


def test_a_seed_alone_identity_that_fails_is_reported():
    md = (
        f"{rd.NOT_REGENERATED} Timing.\n\n| N | pvops | exits | descriptor update (wasted) | CR0 write (wasted) "
        "| IF clear (wasted) | IF set (wasted) |\n|---|---|---:|---:|---:|---:|---:|\n"
        "| 2 | `naive,tls:optimized` | 100 | 10 (3) | 5 (6) | 1 (0) | 1 (0) |\n"
        "| 2 | `optimized` | 10 | 4 (0) | 1 (0) | 1 (0) | 1 (0) |\n"
    )
    tables, timing = rd.parse_markdown(md)
    assert rd.kind(tables[0], timing) == "one run"
    bad = rr.seed_alone_identities(tables[0])
    assert len(bad) == 3
    assert "more wasted than exits" in bad[0]
    assert "leaves 3 wasted descriptor updates" in bad[1]
    assert "no descriptor update is its own exit" in bad[2]


def test_cells_resolve_to_the_side_of_the_host():
    cell = "13.38 -> **4.25 / 4.55** per pass"
    assert rd.resolve(cell, ring3_nm=False) == "13.38 -> 4.25 per pass"
    assert rd.resolve(cell, ring3_nm=True) == "13.38 -> 4.55 per pass"
    assert rd.resolve("**683 (-14.9%) / 717 (-10.7%)**", True) == "717 (-10.7%)"
    assert rd.resolve("**803**", True) == "803"
    assert rd.resolve("41 / 41", True) == "41 / 41"  # not a host pair
    with pytest.raises(rd.DocError):
        rd.resolve("**a", False)


def test_a_ratio_is_compared_to_its_printed_digits_and_a_count_exactly():
    q = lambda v: 13.375
    assert rd.Expect("13.38", q, False, "x").check(None) is None
    assert rd.Expect("13.37", q, False, "x").check(None) is None
    assert rd.Expect("13.4", q, False, "x").check(None) is None
    assert rd.Expect("13.36", q, False, "x").check(None) is not None
    assert rd.Expect("803", lambda v: 803, True, "x").check(None) is None
    assert rd.Expect("803", lambda v: 804, True, "x").check(None) is not None
    assert "a count printed as" in rd.Expect("803.0", lambda v: 803, True, "x").check(None)


def test_bench_workloads_are_read_as_the_bench_reads_them():
    assert rd.bench_workload_specs("ctx,ctx:tls=same,pipe:rounds=5:tasks=2") == [
        "ctx",
        "ctx,tls=same",
        "pipe,rounds=5,tasks=2",
    ]
    words = rd.command_words("build/release/minivmm bench --workloads ctx,irq \\\n  --backend both --repeat 3 -q")
    cmd = rd.parse_bench_command(words)
    assert (cmd.workloads, cmd.backends, cmd.cpus) == (["ctx", "irq"], ["pv", "native"], 1)
    with pytest.raises(rd.DocError, match="does not know"):
        rd.parse_bench_command(rd.command_words("minivmm bench --workloads ctx --backend pv --memory 1G"))
    with pytest.raises(rd.DocError, match="--backend explicitly"):
        rd.parse_bench_command(rd.command_words("minivmm bench --workloads ctx"))


# A fake bench record: two configurations of one workload, as `minivmm bench`
# writes them, with the CR0-write exits of a host without and one with ring-3
# #NM.
BY_CAUSE_MD = """```sh
minivmm bench --workloads ctx --backend pv --repeat 1
```

| workload | configuration | total | cr0 write | if set | if clear | descriptor update | page table update | cr3 write | multicall | other |
|---|---|---|---|---|---|---|---|---|---|---|
| ctx | naive | 803 | 122 | 4 | 368 | 186 | 0 | 61 | 0 | 62 |
| ctx | fpu_switch | **683 / 717** | **2 / 36** | 4 | 368 | 186 | 0 | 61 | 0 | 62 |
"""


def fake_bench(ring3_nm: int, fpu_switch_cr0: int) -> dict:
    def result(conf, cr0):
        counts = {"if_set": 4, "if_clear": 368, "cr0_write": cr0, "descriptor_update": 186, "cr3_write": 61}
        metrics = {"exits." + k: {"values": [v], "median": v} for k, v in counts.items()}
        for k in ("page_table_update", "multicall", "ipi"):
            metrics["exits." + k] = {"values": [0], "median": 0}
        total = sum(counts.values()) + 62
        metrics["exits.total"] = {"values": [total], "median": total}
        return {"workload": "ctx", "workload_spec": "ctx", "backend": "pv", "configuration": conf, "metrics": metrics}

    return {
        "schema": "minivmm.bench",
        "settings": {"workloads": ["ctx"], "backends": ["pv"], "cpus": 1},
        "failures": 0,
        "results": [result("naive", 122), result("fpu_switch", fpu_switch_cr0)],
        "runs": [
            {"index": i, "record": {"guest": {"reports": {"kernel.ring3_nm": ring3_nm}}}} for i in range(3)
        ],
    }


def checked_by_cause():
    tables, timing = rd.parse_markdown(BY_CAUSE_MD)
    assert rd.kind(tables[0], timing) == "bench"
    return rb.bench_table(tables[0])


def test_a_bench_record_without_ring3_nm_takes_the_first_value():
    assert rb.check_bench(checked_by_cause(), rb.BenchView(fake_bench(0, 2), "pvm")) == []


def test_a_bench_record_with_ring3_nm_takes_the_second_value():
    assert rb.check_bench(checked_by_cause(), rb.BenchView(fake_bench(1, 36), "amd")) == []


def test_a_bench_record_that_disagrees_is_reported_cell_by_cell():
    # kvm_amd's counts against the kvm_pvm side: the CR0 and total cells.
    bad = rb.check_bench(checked_by_cause(), rb.BenchView(fake_bench(0, 36), "pvm"))
    assert len(bad) == 2
    assert "column 'total'" in bad[0] and "683, the program: 717" in bad[0]
    assert "column 'cr0 write'" in bad[1] and "2, the program: 36" in bad[1]


def test_a_bench_record_of_other_workloads_or_mixed_hosts_is_refused():
    other = fake_bench(0, 2)
    other["settings"]["workloads"] = ["pipe"]
    with pytest.raises(rd.DocError, match="did not"):
        rb.check_bench(checked_by_cause(), rb.BenchView(other, "pipe only"))
    mixed = fake_bench(0, 2)
    mixed["runs"][1]["record"]["guest"]["reports"]["kernel.ring3_nm"] = 1
    with pytest.raises(rd.DocError, match="disagree"):
        rb.BenchView(mixed, "mixed")


def test_a_count_that_differs_between_repetitions_is_refused():
    rec = fake_bench(0, 2)
    rec["results"][0]["metrics"]["exits.total"]["values"] = [803, 804]
    bad = rb.check_bench(checked_by_cause(), rb.BenchView(rec, "noisy"))
    assert any("differs between runs" in b for b in bad)


SHOOTDOWN_MD = """```sh
build/debug/minivmm run --cpus N --workload shootdown --pvops P --json out.json
```

| N | pvops | exits | vCPU 0 | each other vCPU | ipi ops / exits | tlb_flush ops / exits | IPIs injected | flushes deferred |
|---|---|---|---|---|---|---|---|---|
| 2 | optimized | **103 / 104** | **78 / 79** | 25 | 21 / 21 | 20 / 20 | 21 | 20 |
"""


def fake_run(ring3_nm: int, vcpu0: int) -> dict:
    return {
        "schema": "minivmm.run",
        "exits": {"total": vcpu0 + 25, "per_vcpu": [{"total": vcpu0}, {"total": 25}]},
        "causes": {
            "causes": {"ipi": {"ops": 21, "exits": 21}, "tlb_flush": {"ops": 20, "exits": 20}},
            "ipi_injections": 21,
            "tlb_flushes_deferred": 20,
        },
        "guest": {"reports": {"kernel.ring3_nm": ring3_nm}},
    }


def test_a_run_table_checks_each_host_on_its_side():
    tables, timing = rd.parse_markdown(SHOOTDOWN_MD)
    assert rd.kind(tables[0], timing) == "run"
    cr = rr.run_table(tables[0])
    assert rr.run_words(cr.command, "/b/minivmm", "2", "optimized", "/tmp/x.json") == [
        "/b/minivmm", "run", "--cpus", "2", "--workload", "shootdown", "--pvops", "optimized", "--json", "/tmp/x.json",
    ]  # fmt: skip
    assert rr.check_run_row(cr, 0, rr.RunView(fake_run(0, 78), "pvm")) == []
    assert rr.check_run_row(cr, 0, rr.RunView(fake_run(1, 79), "amd")) == []
    bad = rr.check_run_row(cr, 0, rr.RunView(fake_run(1, 78), "amd"))
    assert len(bad) == 2 and "104, the program: 103" in bad[0] and "79, the program: 78" in bad[1]
    three = copy.deepcopy(fake_run(0, 78))
    three["exits"]["per_vcpu"].append({"total": 25})
    three["exits"]["total"] += 25
    assert any("vCPUs" in b for b in rr.check_run_row(cr, 0, rr.RunView(three, "3 vCPUs")))
