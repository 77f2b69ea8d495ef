"""RESULTS.md's run tables (the shootdown counts, read against `minivmm run`
records) and its tables of one run's counts (the identities of every run)."""

import dataclasses
from typing import Callable, List, Sequence

from results_doc import NUMBER, DocError, Expect, Table, command_words, numbers, options, resolve


class RunView:
    """One run record (schema minivmm.run) as the shootdown table reads it."""

    def __init__(self, record: dict, name: str):
        if record.get("schema") != "minivmm.run":
            raise DocError(f"{name}: not a minivmm run record")
        self.name = name
        self.r = record
        v = record["guest"]["reports"].get("kernel.ring3_nm")
        if v is None:
            raise DocError(f"{name}: no kernel.ring3_nm")
        self.ring3_nm = int(v) == 1

    def at(self, path: Sequence) -> int:
        """The count at a key path, e.g. ("exits", "per_vcpu", 0, "total")."""
        out = self.r
        for key in path:
            out = out[key]
        return out


@dataclasses.dataclass
class RunCommand:
    words: List[str]  # with the placeholders N (--cpus) and P (--pvops) in place
    json_index: int  # index of --json's value


def parse_run_command(words: Sequence[str]) -> RunCommand:
    o = options(words[2:], ["--cpus", "--workload", "--pvops", "--json", "--backend"], [])
    if o.get("--cpus") != "N" or o.get("--pvops") != "P" or "--json" not in o or "--workload" not in o:
        raise DocError("a checked run command is `minivmm run --cpus N --workload W --pvops P --json FILE`")
    words = list(words)
    return RunCommand(words, words.index(o["--json"]))


def run_words(cmd: RunCommand, minivmm: str, cpus: str, pvops: str, json_path: str) -> List[str]:
    """The documented command for one row, with this build's minivmm."""
    w = [minivmm] + cmd.words[1:]
    w[cmd.json_index] = json_path
    w[w.index("--cpus") + 1] = cpus
    w[w.index("--pvops") + 1] = pvops
    return w


# The shootdown table's columns after N and pvops (the run's inputs): the
# run-record counts that each cell's numbers are ("ops / exits" cells two).
# Empty for "each other vCPU": the one number is every vCPU's but 0's.
SHOOTDOWN_COLUMNS = {
    "exits": [("exits", "total")],
    "vCPU 0": [("exits", "per_vcpu", 0, "total")],
    "each other vCPU": [],
    "ipi ops / exits": [("causes", "causes", "ipi", "ops"), ("causes", "causes", "ipi", "exits")],
    "tlb_flush ops / exits": [
        ("causes", "causes", "tlb_flush", "ops"),
        ("causes", "causes", "tlb_flush", "exits"),
    ],
    "IPIs injected": [("causes", "ipi_injections")],
    "flushes deferred": [("causes", "tlb_flushes_deferred")],
}
SHOOTDOWN_HEADER = ("N", "pvops", *SHOOTDOWN_COLUMNS)


def shootdown_row(t: Table, r: int) -> Callable[[RunView], List[Expect]]:
    """The checks of one shootdown row, given its run."""
    row = t.rows[r]
    n = int(row[0])

    def expects(v: RunView) -> List[Expect]:
        out = [Expect(str(n), lambda v: len(v.r["exits"]["per_vcpu"]), True, f"{t.where(r, 0)}: vCPUs")]
        for c, h in enumerate(t.header[2:], start=2):
            where = t.where(r, c)
            paths = SHOOTDOWN_COLUMNS[h]
            groups = numbers(resolve(row[c], v.ring3_nm), " / ".join([f"({NUMBER})"] * max(1, len(paths))), where)
            if not paths:
                paths = [("exits", "per_vcpu", i, "total") for i in range(1, n)]
                groups = groups * (n - 1)
            for g, path in zip(groups, paths):
                out.append(Expect(g, lambda v, path=path: v.at(path), True, f"{where}: {'.'.join(map(str, path))}"))
        return out

    return expects


@dataclasses.dataclass
class CheckedRuns:
    table: Table
    command: RunCommand


def run_table(t: Table) -> CheckedRuns:
    words = command_words(t.before[1])
    if tuple(t.header) != SHOOTDOWN_HEADER:
        raise DocError(f"{t.where()}: no reader for a run table with columns {t.header}")
    return CheckedRuns(t, parse_run_command(words))


def check_run_row(cr: CheckedRuns, r: int, view: RunView) -> List[str]:
    bad = []
    for e in shootdown_row(cr.table, r)(view):
        msg = e.check(view)
        if msg:
            bad.append(f"{msg} [{view.name}, ring3_nm={int(view.ring3_nm)}]")
    return bad


# ---------------------------------------------------------------------------
# Tables of one run's counts: the identities that hold in every run


def _int(cell: str, where: str) -> int:
    return int(numbers(cell.strip("`"), r"(\d+)", where)[0])


def _variant(pvops: str, op: str) -> str:
    """The variant of one op under a pvops string whose first item is the
    naive or optimized preset (guest/README.md "Command line")."""
    items = pvops.strip("`").split(",")
    if items[0] not in ("naive", "optimized"):
        raise DocError(f"pvops '{pvops}': the identities are read for naive or optimized bases only")
    variant = items[0]
    for item in items[1:]:
        name, _, value = item.partition(":")
        if name == op:
            variant = value
    return variant


def lock_identities(t: Table) -> List[str]:
    """docs/exit-model.md "SMP: a contended spinlock"."""
    bad = []
    for r, row in enumerate(t.rows):
        cell = dict(zip(t.header, row))
        where = t.where(r)
        n = {k: _int(cell[k], f"{where} {k}") for k in t.header if k != "pvops"}
        pvops = cell["pvops"]
        if n["woken by a kick"] > min(n["lock_wait"], n["lock_kick"]):
            bad.append(f"{where}: more wakes by a kick than waits or kicks")
        if n["directed yields"] > n["yield"]:
            bad.append(f"{where}: more directed yields than yields")
        if n["lock_wait"] + n["lock_kick"] + n["yield"] > n["exits"]:
            bad.append(f"{where}: more lock exits than exits")
        lock_calls = n["lock_wait"] or n["lock_kick"] or n["woken by a kick"]
        if _variant(pvops, "spinlock") == "naive" and lock_calls:
            bad.append(f"{where}: spinlock:naive makes no lock_wait and no lock_kick")
        if _variant(pvops, "spinlock") == "optimized" and n["yield"]:
            bad.append(f"{where}: spinlock:optimized does not yield")
        if _variant(pvops, "yield") == "naive" and n["directed yields"]:
            bad.append(f"{where}: yield:naive makes no directed yield")
        if n["N"] == 1 and (n["lock_wait"] or n["lock_kick"] or n["yield"]):
            bad.append(f"{where}: with one CPU no lock is contended")
    return bad


def tasks_identities(t: Table) -> List[str]:
    """docs/exit-model.md "SMP: lat_ctx across CPUs": one count per vCPU,
    adding up to the run's, the causes shown no more than that; with one CPU
    no IPI and no lock wait."""
    bad = []
    for r, row in enumerate(t.rows):
        cell = dict(zip(t.header, row))
        where = t.where(r)
        n = _int(cell["N"], where)
        exits = _int(cell["exits"], where)
        per = [_int(x, where) for x in cell["per vCPU"].split(" / ")]
        causes = {k: _int(cell[k], f"{where} {k}") for k in ("ipi", "IF", "desc", "CR0", "locks")}
        if len(per) != n:
            bad.append(f"{where}: {len(per)} per-vCPU counts for N = {n}")
        if sum(per) != exits:
            bad.append(f"{where}: the per-vCPU exits add up to {sum(per)}, not {exits}")
        if sum(causes.values()) > exits:
            bad.append(f"{where}: more exits by cause than exits")
        if n == 1 and (causes["ipi"] or causes["locks"]):
            bad.append(f"{where}: with one CPU there is no IPI and no lock wait")
    return bad


def seed_alone_identities(t: Table) -> List[str]:
    """RESULTS.md "Each seed alone with tasks on several CPUs": cells are
    exits (wasted); wasted never exceeds exits, the causes shown no more
    than the run's exits; the TLS shadow leaves no same-value descriptor
    update (docs/wasted-exits.md), and batching (all optimized) no
    descriptor-update exit (they ride in the switch's multicall)."""
    bad = []
    causes = ("descriptor update (wasted)", "CR0 write (wasted)", "IF clear (wasted)",
              "IF set (wasted)")
    for r, row in enumerate(t.rows):
        cell = dict(zip(t.header, row))
        where = t.where(r)
        exits = _int(cell["exits"], where)
        pairs = {}
        for k in causes:
            got = numbers(cell[k], r"(\d+) \((\d+)\)", f"{where} {k}")
            pairs[k] = (int(got[0]), int(got[1]))
            if pairs[k][1] > pairs[k][0]:
                bad.append(f"{where} {k}: more wasted than exits")
        if sum(e for e, _ in pairs.values()) > exits:
            bad.append(f"{where}: more exits by cause than exits")
        pvops = cell["pvops"]
        desc = pairs["descriptor update (wasted)"]
        if _variant(pvops, "tls") == "optimized" and desc[1] != 0:
            bad.append(f"{where}: tls:optimized leaves {desc[1]} wasted descriptor updates")
        if _variant(pvops, "batch") in ("on", "optimized") and desc[0] != 0:
            bad.append(f"{where}: with batching no descriptor update is its own exit")
    return bad


ONE_RUN_TABLES = {
    ("N", "pvops", "exits", "lock_wait", "lock_kick", "yield", "woken by a kick", "directed yields"): lock_identities,
    ("N", "workload", "pvops", "exits", "per vCPU", "ipi", "IF", "desc", "CR0", "locks"): tasks_identities,
    ("N", "pvops", "exits", "descriptor update (wasted)", "CR0 write (wasted)", "IF clear (wasted)",
     "IF set (wasted)"): seed_alone_identities,
}
