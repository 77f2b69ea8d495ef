"""docs/RESULTS.md's count tables, read as the program's output they claim to be.

Every table of RESULTS.md is one of three kinds, told by what stands right
before it (nothing but blank lines between):

- a fenced block with the one `minivmm bench ...` or `minivmm run ...`
  command that prints its counts: the test checks every number of the table
  against that command's record (bench: the cross-host records the test
  command made, which must have run every workload and backend the command
  names, and may have run more, with its --cpus; run: the test makes the
  runs itself, N and P from each row);
- a paragraph that starts with `**One run's counts, not regenerated.**`:
  counts that depend on timing; the test checks the identities that hold in
  every run on the table's own numbers;
- neither, in a section that the document's timing-sections comment names:
  timings, never checked.

Any other table fails, and so does a table of a known kind whose header this
module has no reader for. A cell `**a / b**` holds two values: `a` where the
guest detected no ring-3 #NM (`kernel.ring3_nm` = 0, kvm_pvm) and `b` where it
did (1, kvm_amd); docs/exit-model.md "Counts that depend on the host".

Counts are compared exactly; a ratio or percentage derived from counts is
compared to the precision it is printed with (13.38 is 13.375..13.385).
Timings are never read.
"""

import dataclasses
import os
import re
import shlex
from typing import Callable, Dict, List, Optional, Sequence, Tuple

RESULTS_MD = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "RESULTS.md")

NOT_REGENERATED = "**One run's counts, not regenerated.**"
HEADING = re.compile(r"#{1,6} ")
TIMING_SECTIONS = re.compile(r"<!--\s*timing sections.*?:(.*?)-->", re.S)


class DocError(Exception):
    """RESULTS.md says something this module cannot read: the test fails."""


# ---------------------------------------------------------------------------
# Markdown


@dataclasses.dataclass
class Table:
    line: int  # 1-based line of the header row
    heading: str  # the nearest heading above it
    header: List[str]
    rows: List[List[str]]
    before: Optional[Tuple[str, str]]  # ("fence"|"paragraph"|"heading"|"table", text)

    def where(self, row: Optional[int] = None, col: Optional[int] = None) -> str:
        s = f"RESULTS.md:{self.line} ({self.heading})"
        if row is not None:
            s += f", row {row + 1} ({' | '.join(self.rows[row][:2])})"
        if col is not None:
            s += f", column '{self.header[col]}'"
        return s


def _cells(line: str) -> List[str]:
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|")):
        raise DocError(f"not a table row: {line!r}")
    return [c.strip() for c in s[1:-1].split("|")]


def parse_markdown(text: str) -> Tuple[List[Table], List[str]]:
    """The tables of a Markdown text, each with the block right before it,
    and the section headings the timing-sections comment names."""
    lines = text.split("\n")
    tables: List[Table] = []
    heading = "(top)"
    before: Optional[Tuple[str, str]] = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                raise DocError(f"RESULTS.md:{i + 1}: unclosed fenced block")
            before = ("fence", "\n".join(lines[i + 1 : j]))
            i = j + 1
        elif HEADING.match(line):
            heading = line.lstrip("#").strip()
            before = ("heading", heading)
            i += 1
        elif line.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            block = lines[i:j]
            if len(block) < 2 or not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", block[1].strip()):
                raise DocError(f"RESULTS.md:{i + 1}: a table without a header separator")
            header = _cells(block[0])
            rows = [_cells(r) for r in block[2:]]
            for k, r in enumerate(rows):
                if len(r) != len(header):
                    raise DocError(
                        f"RESULTS.md:{i + 3 + k}: {len(r)} cells under {len(header)} columns"
                    )
            tables.append(Table(i + 1, heading, header, rows, before))
            before = ("table", "")
            i = j
        elif line.strip() == "" or line.lstrip().startswith("<!--"):
            i += 1
        else:
            j = i
            while j < len(lines) and lines[j].strip():
                if HEADING.match(lines[j]) or lines[j].startswith(("|", "```")):
                    break
                j += 1
            before = ("paragraph", " ".join(lines[i:j]))
            i = j
    timing: List[str] = []
    for m in TIMING_SECTIONS.finditer(text):
        timing += re.findall(r'"([^"]+)"', m.group(1))
    return tables, timing


def load_tables() -> Tuple[List[Table], List[str]]:
    with open(RESULTS_MD, encoding="utf-8") as f:
        return parse_markdown(f.read())


# ---------------------------------------------------------------------------
# Cells


PAIR = re.compile(r"\*\*([^*]+?) / ([^*]+?)\*\*")


def resolve(cell: str, ring3_nm: bool) -> str:
    """The cell as it reads on a host where the guest detected ring3_nm:
    each `**a / b**` becomes a (no ring-3 #NM) or b; other bold is dropped."""
    out = PAIR.sub(lambda m: m.group(2) if ring3_nm else m.group(1), cell)
    out = re.sub(r"\*\*([^*]+)\*\*", r"\1", out)
    if "*" in out:
        raise DocError(f"cannot read the emphasis in {cell!r}")
    return out.strip()


NUMBER = r"[-+]?\d+(?:\.\d+)?"


@dataclasses.dataclass
class Expect:
    """One number of the document and what it claims to be."""

    text: str  # as printed, e.g. "-68.2" or "803"
    quantity: Callable  # record view -> number (or str for `exact_text`)
    count: bool  # a count: exact; else rounded to the digits printed
    what: str  # for messages

    def check(self, view) -> Optional[str]:
        actual = self.quantity(view)
        if isinstance(actual, str):
            return None if actual == self.text else f"{self.what}: '{self.text}', the program: '{actual}'"
        if self.count:
            if "." in self.text:
                return f"{self.what}: a count printed as {self.text}"
            ok = float(self.text) == actual
        else:
            digits = len(self.text.split(".")[1]) if "." in self.text else 0
            ok = abs(float(self.text) - actual) <= 0.5 * 10 ** -digits + 1e-9
        shown = int(actual) if float(actual).is_integer() else round(actual, 4)
        return None if ok else f"{self.what}: {self.text}, the program: {shown}"


def numbers(cell: str, pattern: str, where: str) -> List[str]:
    """The groups of `pattern` (a full match of the cell), or DocError."""
    m = re.fullmatch(pattern, cell)
    if not m:
        raise DocError(f"{where}: cannot read '{cell}'")
    return list(m.groups())


def percent(before: float, after: float) -> float:
    if before == 0:
        raise DocError("a change against 0")
    return (after - before) / abs(before) * 100


# ---------------------------------------------------------------------------
# Commands


def command_words(fence: str) -> List[str]:
    text = fence.replace("\\\n", " ")
    lines = [l for l in text.split("\n") if l.strip() and not l.lstrip().startswith("#")]
    if len(lines) != 1:
        raise DocError(f"a table's fenced block must hold exactly one command, not {len(lines)}")
    words = shlex.split(lines[0])
    if not words or os.path.basename(words[0]) != "minivmm" or len(words) < 2:
        raise DocError(f"not a minivmm command: {lines[0]}")
    return words


def options(words: Sequence[str], takes_value: Sequence[str], flags: Sequence[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    i = 0
    while i < len(words):
        w = words[i]
        name, eq, value = w.partition("=")
        if name in flags and not eq:
            out[name] = ""
        elif name in takes_value:
            if not eq:
                if i + 1 == len(words):
                    raise DocError(f"{name} without a value")
                i += 1
                value = words[i]
            out[name] = value
        else:
            raise DocError(f"'{w}': an option this test does not know what it does to the counts")
        i += 1
    return out


@dataclasses.dataclass
class BenchCommand:
    workloads: List[str]  # guest specs, "ctx,tls=same"
    backends: List[str]
    cpus: int


def bench_workload_specs(arg: str) -> List[str]:
    """--workloads as the bench reads it: items split at ',', each item's
    ':'-separated parameters joined with ',' (cli/bench_command.cc)."""
    return [",".join(item.split(":")) for item in arg.split(",") if item.strip()]


def parse_bench_command(words: Sequence[str]) -> BenchCommand:
    o = options(
        words[2:],
        ["--workloads", "--backend", "--repeat", "--json", "--csv", "--plot", "--timeout", "--cpus"],
        ["--quiet", "-q"],
    )
    # Their defaults live in the program; the document names them.
    for required in ("--workloads", "--backend"):
        if required not in o:
            raise DocError(f"a checked bench command names {required} explicitly")
    backend = o["--backend"]
    return BenchCommand(
        bench_workload_specs(o["--workloads"]),
        ["pv", "native"] if backend == "both" else [backend],
        int(o.get("--cpus", "1")),
    )


# ---------------------------------------------------------------------------
# Bench records


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


# ---------------------------------------------------------------------------
# Run records (minivmm run --json)


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


ONE_RUN_TABLES = {
    ("N", "pvops", "exits", "lock_wait", "lock_kick", "yield", "woken by a kick", "directed yields"): lock_identities,
    ("N", "workload", "pvops", "exits", "per vCPU", "ipi", "IF", "desc", "CR0", "locks"): tasks_identities,
}


# ---------------------------------------------------------------------------
# Every table, by kind


def kind(t: Table, timing: Sequence[str]) -> str:
    """'bench', 'run', 'one run' or 'timing'; DocError for an unmarked table."""
    if t.before and t.before[0] == "fence":
        sub = command_words(t.before[1])[1]
        if sub in ("bench", "run"):
            return sub
        raise DocError(f"{t.where()}: the command before it is `minivmm {sub}`, whose tables are not read here")
    if t.before and t.before[0] == "paragraph" and t.before[1].startswith(NOT_REGENERATED):
        return "one run"
    if any(t.heading.startswith(s) for s in timing):
        return "timing"
    raise DocError(
        f"{t.where()}: neither the command that prints it nor '{NOT_REGENERATED}' right before it,"
        " and not in a timing section"
    )
