"""RESULTS.md's run tables (the shootdown counts): each row's documented
`minivmm run` command, run here (MINIVMM_BIN, on this machine's KVM), and
its record against the row, on the side of the host the guest detected.
"""

import json
import os
import subprocess
import tempfile

import results_doc as rd
import results_runs as rr


def run_row(cr: rr.CheckedRuns, r: int, minivmm: str, tmp: str):
    row = cr.table.rows[r]
    path = os.path.join(tmp, f"row{r}.json")
    words = rr.run_words(cr.command, minivmm, row[0], row[1], path)
    p = subprocess.run(words, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    if p.returncode != 0:
        return [f"{cr.table.where(r)}: `{' '.join(words)}` exited {p.returncode}:\n{p.stdout[-2000:]}"]
    with open(path, encoding="utf-8") as f:
        view = rr.RunView(json.load(f), " ".join(words[1:-2]))
    return rr.check_run_row(cr, r, view)


def test_every_run_table_is_what_its_command_prints_here():
    minivmm = os.environ.get("MINIVMM_BIN")
    assert minivmm and os.access(minivmm, os.X_OK), "MINIVMM_BIN names no minivmm binary"
    tables, timing = rd.load_tables()
    checked = [rr.run_table(t) for t in tables if rd.kind(t, timing) == "run"]
    assert checked, "RESULTS.md has no run table with its command"
    bad, runs = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for cr in checked:
            for r in range(len(cr.table.rows)):
                bad += run_row(cr, r, minivmm, tmp)
                runs += 1
    print(f"{runs} runs checked")
    assert not bad, "RESULTS.md differs from what its commands print:\n" + "\n".join(bad)
