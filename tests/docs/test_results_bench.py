"""RESULTS.md's bench tables against the bench records of every KVM the test
command reached (MINIVMM_CROSS_HOST_RECORDS=a.json:b.json, the records
scripts/quickstart.sh test makes for the cross-host test): no VM runs of
its own. Without records it fails.
"""

import json
import os

import results_bench as rb
import results_doc as rd


def load_records():
    paths = [p for p in os.environ.get("MINIVMM_CROSS_HOST_RECORDS", "").split(":") if p]
    assert paths, (
        "no bench records: set MINIVMM_CROSS_HOST_RECORDS to `minivmm bench --backend both --repeat 1"
        " --workloads ctx,ctx:tls=same,pipe,irq,cpa,fpu --json FILE` records (scripts/quickstart.sh test does)"
    )
    views = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            views.append(rb.BenchView(json.load(f), p))
    return views


def test_every_bench_table_is_what_its_command_prints_on_every_kvm():
    views = load_records()
    tables, timing = rd.load_tables()
    checked = [rb.bench_table(t) for t in tables if rd.kind(t, timing) == "bench"]
    assert checked, "RESULTS.md has no bench table with its command"
    bad = []
    for view in views:
        for cb in checked:
            bad += rb.check_bench(cb, view)
    for view in views:
        print(f"{view.name}: ring3_nm={int(view.ring3_nm)}, {sum(len(c.cells) for c in checked)} cells checked")
    assert not bad, "RESULTS.md differs from what its commands print:\n" + "\n".join(bad)
