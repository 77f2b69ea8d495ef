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
Timings are never read. This module reads the document, its cells and its
commands; results_bench.py and results_runs.py read the tables of each kind.
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
