"""RESULTS.md's bench tables (results_doc.py says how a table names its
command) read against a bench record (schema minivmm.bench)."""

import dataclasses
from typing import List

from results_doc import NUMBER, BenchCommand, DocError, Expect, Table
from results_doc import command_words, numbers, parse_bench_command, percent, resolve


class BenchView:
    """One bench record (schema minivmm.bench) as the tables read it."""

    def __init__(self, record: dict, name: str):
        if record.get("schema") != "minivmm.bench":
            raise DocError(f"{name}: not a minivmm bench record")
        self.name = name
        self.failures = record.get("failures", 0)
        s = record["settings"]
        self.command = BenchCommand(list(s["workloads"]), list(s["backends"]), s.get("cpus", 1))
        self.results = {(r["workload_spec"], r["backend"], r["configuration"]): r for r in record["results"]}
        seen = set()
        for run in record["runs"]:
            v = run["record"]["guest"]["reports"].get("kernel.ring3_nm")
            if v is None:
                raise DocError(f"{name}: run {run['index']} has no kernel.ring3_nm")
            seen.add(int(v))
        if len(seen) != 1:
            raise DocError(f"{name}: its runs disagree about kernel.ring3_nm: {sorted(seen)}")
        self.ring3_nm = seen.pop() == 1

    def result(self, spec: str, backend: str, configuration: str) -> dict:
        key = (spec, backend, configuration)
        if key not in self.results:
            raise DocError(f"{self.name} has no result for workload={spec} backend={backend} {configuration}")
        return self.results[key]

    def metric(self, spec: str, backend: str, configuration: str, name: str) -> float:
        m = self.result(spec, backend, configuration)["metrics"].get(name)
        if m is None:
            raise DocError(f"{self.name}: {spec} {backend} {configuration} has no metric {name}")
        if len(set(m["values"])) != 1:
            raise DocError(
                f"{self.name}: {spec} {backend} {configuration} {name} differs between runs: {m['values']}"
            )
        return m["median"]

    def check_command(self, cmd: BenchCommand) -> None:
        missing = [w for w in cmd.workloads if w not in self.command.workloads]
        missing += [b for b in cmd.backends if b not in self.command.backends]
        if missing:
            raise DocError(f"the documented bench runs {missing}, which {self.name} did not")
        if cmd.cpus != self.command.cpus:
            raise DocError(f"the documented bench has --cpus {cmd.cpus}, {self.name} {self.command.cpus}")
        if self.failures:
            raise DocError(f"{self.name}: {self.failures} runs failed")


def _metric(spec, backend, conf, name):
    return lambda v: v.metric(spec, backend, conf, name)


def _change(spec, backend, before, after, name="exits.total"):
    return lambda v: percent(v.metric(spec, backend, before, name), v.metric(spec, backend, after, name))


def _other(spec, backend, conf, shown_causes):
    """The exits of every cause not shown, and of none."""
    return lambda v: v.metric(spec, backend, conf, "exits.total") - sum(
        v.metric(spec, backend, conf, "exits." + c) for c in shown_causes
    )


def _row_spec(label: str) -> str:
    """A row's workload: the label up to ' (' ("ctx (3 tasks, tls=all)" -> ctx)."""
    return label.split(" (")[0].strip("`")


def _naive_to_optimized(t: Table, backend: str) -> list:
    """All naive -> all optimized (pv): one row per workload."""
    cells = []
    for r, row in enumerate(t.rows):
        spec = _row_spec(row[0])
        for c in range(1, len(row)):
            cells.append((r, c, spec, backend, _NAIVE_TO_OPTIMIZED[t.header[c]](spec, backend)))
    return cells


def _cell(pattern, quantities):
    """A cell reader: the groups of `pattern`, each (quantity, is a count, label)."""

    def read(text, where):
        groups = numbers(text, pattern, where)
        return [Expect(g, q, count, f"{where}: {label}") for g, (q, count, label) in zip(groups, quantities)]

    return read


def _ops_unit(spec, backend):
    return lambda v: v.result(spec, backend, "naive")["operation"]


_NAIVE_TO_OPTIMIZED = {
    "exits naive": lambda s, b: _cell(
        rf"({NUMBER})", [(_metric(s, b, "naive", "exits.total"), True, "exits")]
    ),
    "exits optimized": lambda s, b: _cell(
        rf"({NUMBER})", [(_metric(s, b, "optimized", "exits.total"), True, "exits")]
    ),
    "change": lambda s, b: _cell(rf"({NUMBER})%", [(_change(s, b, "naive", "optimized"), False, "change")]),
    "exits per op naive -> optimized": lambda s, b: _cell(
        rf"({NUMBER}) -> ({NUMBER}) per (.+)",
        [
            (_metric(s, b, "naive", "exits_per_op"), False, "naive exits per op"),
            (_metric(s, b, "optimized", "exits_per_op"), False, "optimized exits per op"),
            (_ops_unit(s, b), False, "operation"),
        ],
    ),
    "Xen's baseline": lambda s, b: _cell(
        rf"({NUMBER})", [(_metric(s, b, "xen", "exits.total"), True, "exits")]
    ),
    "wasted, naive -> optimized": lambda s, b: _cell(
        rf"({NUMBER}) -> ({NUMBER})",
        [
            (_metric(s, b, "naive", "wasted.total"), True, "naive wasted"),
            (_metric(s, b, "optimized", "wasted.total"), True, "optimized wasted"),
        ],
    ),
}


def _op_alone(t: Table, backend: str) -> list:
    """Each op optimized alone: rows configurations, columns 'workload words
    backend'; a cell 'exits (change)' or '=' (as all naive)."""
    del backend  # each column names its own
    out = []
    for r, row in enumerate(t.rows):
        confs = [c.strip().replace(" ", "_") for c in row[0].split(",")]
        for c in range(1, len(row)):
            words = t.header[c].split()
            spec, b = ",".join(words[:-1]), words[-1]
            out.append((r, c, spec, b, _op_alone_cell(spec, b, confs)))
    return out


def _op_alone_cell(spec, backend, confs):
    def read(text, where):
        expects = []
        for conf in confs:
            change = _change(spec, backend, "naive", conf)
            if text == "=":
                expects.append(Expect("0", change, True, f"{where}: {conf} change"))
                continue
            exits, pct = numbers(text, rf"({NUMBER}) \(({NUMBER})%\)", where)
            exits_q = _metric(spec, backend, conf, "exits.total")
            expects.append(Expect(exits, exits_q, True, f"{where}: {conf} exits"))
            expects.append(Expect(pct, change, False, f"{where}: {conf} change"))
        return expects

    return read


def _by_cause(t: Table, backend: str) -> list:
    """Exits by cause per workload and configuration; 'other' is the total
    less the causes shown."""
    shown = [h.replace(" ", "_") for h in t.header[3:-1]]
    out = []
    for r, row in enumerate(t.rows):
        spec, conf = row[0], row[1]
        for c in range(2, len(row)):
            h = t.header[c]
            if h == "total":
                q = _metric(spec, backend, conf, "exits.total")
            elif h == "other":
                q = _other(spec, backend, conf, shown)
            else:
                q = _metric(spec, backend, conf, "exits." + h.replace(" ", "_"))
            out.append((r, c, spec, backend, _cell(rf"({NUMBER})", [(q, True, h)])))
    return out


BENCH_TABLES = {
    (
        "workload",
        "exits naive",
        "exits optimized",
        "change",
        "exits per op naive -> optimized",
        "Xen's baseline",
        "wasted, naive -> optimized",
    ): _naive_to_optimized,
    (
        "op alone",
        "ctx pv",
        "ctx tls=same pv",
        "ctx tls=same native",
        "pipe pv",
        "irq pv",
        "cpa pv",
        "fpu pv",
        "fpu native",
    ): _op_alone,
    (
        "workload",
        "configuration",
        "total",
        "cr0 write",
        "if set",
        "if clear",
        "descriptor update",
        "page table update",
        "cr3 write",
        "multicall",
        "other",
    ): _by_cause,
}


@dataclasses.dataclass
class CheckedBench:
    table: Table
    command: BenchCommand
    cells: list  # (row, col, spec, backend, reader)


def bench_table(t: Table) -> CheckedBench:
    cmd = parse_bench_command(command_words(t.before[1]))
    reader = BENCH_TABLES.get(tuple(t.header))
    if reader is None:
        raise DocError(f"{t.where()}: no reader for a bench table with columns {t.header}")
    if reader is not _op_alone and len(cmd.backends) != 1:
        raise DocError(f"{t.where()}: the table has one backend; its command must name it (--backend pv)")
    cells = []
    for r, c, spec, backend, read in reader(t, cmd.backends[0]):
        if spec not in cmd.workloads or backend not in cmd.backends:
            raise DocError(f"{t.where(r, c)}: workload={spec} backend={backend} is not in its command")
        cells.append((r, c, spec, backend, read))
    return CheckedBench(t, cmd, cells)


def check_bench(cb: CheckedBench, view: BenchView) -> List[str]:
    """Every count of a bench table against one record; the mismatches."""
    view.check_command(cb.command)
    bad = []
    for r, c, spec, backend, read in cb.cells:
        where = cb.table.where(r, c)
        text = resolve(cb.table.rows[r][c], view.ring3_nm)
        for e in read(text, where):
            try:
                msg = e.check(view)
            except DocError as err:
                msg = f"{where}: {err}"
            if msg:
                bad.append(f"{msg} [{view.name}, ring3_nm={int(view.ring3_nm)}]")
    return bad
