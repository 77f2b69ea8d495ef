"""docs/hypercalls.md's table of calls, every check of every row named, and
the hypercall unit tests that name them (tests/hypercalls/abi_row.h).

A row is one hypercall of MVMM_HYPERCALL_LIST (hypercalls/abi/minivmm_abi/
hypercall.h), in the list's order, and then `other`. Its checks are derived
from its cells, never written there: `<call>.ok` for a success cell, and one
name per errno of its errors cell (`-EINVAL`, ...) in check order,
`<call>.<ERRNO>` for the first of an errno and `<call>.<ERRNO>.<k>` for the
k-th. A test names a check with ExpectAbiRow, which gtest's JSON output
lists as the test's property `abi_row.<name>`; only passing tests count.
A row's `name(args)` cell names the arguments of the ABI's argument list
for that call (MVMM_HC_ARGS_<name>), in register order.
A row still left open (`?`, `TBD`, "open question", "unspecified") is an
error, as is an errno the ABI header does not define.
"""

import collections
import json
import os
import re
import subprocess
import tempfile
from typing import Dict, List, Sequence, Set, Tuple

import results_doc as rd

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
HYPERCALLS_MD = os.path.join(ROOT, "docs", "hypercalls.md")
HYPERCALL_H = os.path.join(ROOT, "hypercalls", "abi", "minivmm_abi", "hypercall.h")
HEADER = ["nr", "call", "success", "errors, in check order"]
ERRNO = re.compile(r"-(E[A-Z0-9]+)\b")
OPEN = re.compile(r"\?|\bTBD\b|\bopen question\b|\bunspecified\b", re.I)
PROPERTY = "abi_row."


def abi_errnos(header_text: str) -> Set[str]:
    """The errno names the ABI defines (`#define MVMM_EINVAL 22`)."""
    return set(re.findall(r"#define MVMM_(E[A-Z0-9]+) \d+", header_text))


def abi_list(header_text: str) -> List[Tuple[str, str]]:
    """MVMM_HYPERCALL_LIST's (number, name) entries, in order."""
    return re.findall(r"\bX\((\d+),\s*(\w+)\)", header_text)


def abi_arguments(header_text: str) -> Dict[str, List[str]]:
    """Each call's argument names in register order, from its
    `#define MVMM_HC_ARGS_<name>(A) A(0, kind, first) ...` line."""
    out: Dict[str, List[str]] = {}
    for name, body in re.findall(r"^#define MVMM_HC_ARGS_(\w+)\(A\)(.*)$", header_text, re.M):
        args = re.findall(r"\bA\((\d+),\s*(\w+),\s*(\w+)\)", body)
        out[name] = [arg for _, _, arg in sorted(args, key=lambda a: int(a[0]))]
    return out


def call_arguments(table: rd.Table) -> Dict[str, List[str]]:
    """Each row's call name -> the argument names of its `name(a, b)` cell."""
    out: Dict[str, List[str]] = {}
    for k, (nr, call, _, _) in enumerate(table.rows):
        m = re.match(r"`(\w+)\(([^)]*)\)`", call)
        if m:
            out[m.group(1)] = [a.strip() for a in m.group(2).split(",") if a.strip()]
    return out


def calls_table(md_text: str) -> rd.Table:
    tables = [t for t in rd.parse_markdown(md_text)[0] if t.header == HEADER]
    if len(tables) != 1:
        raise rd.DocError(f"hypercalls.md: {len(tables)} tables with columns {HEADER}, not one")
    return tables[0]


def rows(table: rd.Table, errnos: Set[str]) -> "collections.OrderedDict[str, Tuple[str, List[str]]]":
    """Each row's call name -> (number, its checks' names in check order)."""
    out: "collections.OrderedDict[str, Tuple[str, List[str]]]" = collections.OrderedDict()
    for k, (nr, call, success, errors) in enumerate(table.rows):
        where = f"hypercalls.md:{table.line + 2 + k} (row {nr})"
        if OPEN.search(" ".join((call, success, errors))):
            raise rd.DocError(f"{where}: left open: {OPEN.search(call + success + errors).group(0)!r}")
        m = re.match(r"`(\w+)\(", call)
        name = m.group(1) if m else ("other" if nr == "other" and not call else None)
        if name is None or name in out:
            raise rd.DocError(f"{where}: call {call!r} is not `name(args)` or is a second row")
        checks = [f"{name}.ok"] if success else []
        seen: Dict[str, int] = collections.Counter()
        for e in ERRNO.findall(errors):
            if e not in errnos:
                raise rd.DocError(f"{where}: -{e} is no errno of the ABI ({sorted(errnos)})")
            seen[e] += 1
            checks.append(f"{name}.{e}" if seen[e] == 1 else f"{name}.{e}.{seen[e]}")
        if not checks:
            raise rd.DocError(f"{where}: neither a success nor an errno")
        out[name] = (nr, checks)
    return out


def covered(test_binaries: Sequence[str]) -> Dict[str, List[str]]:
    """Each check name the passing tests of these gtest binaries name ->
    those tests (`Suite.Name`)."""
    names: Dict[str, List[str]] = collections.defaultdict(list)
    for binary in test_binaries:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "tests.json")
            subprocess.run([binary, f"--gtest_output=json:{out}"], stdout=subprocess.DEVNULL, check=False)
            with open(out, encoding="utf-8") as f:
                report = json.load(f)
        for suite in report["testsuites"]:
            for test in suite["testsuite"]:
                if test.get("failures") or test.get("result") != "COMPLETED":
                    continue
                for key in test:
                    if key.startswith(PROPERTY):
                        names[key[len(PROPERTY) :]].append(f"{suite['name']}.{test['name']}")
    return names


def unanswered(checks: Sequence[str], tested: Dict[str, List[str]]) -> Tuple[List[str], List[str]]:
    """(the checks no test names, the names tests use that no row has)."""
    return ([c for c in checks if c not in tested],
            sorted(f"{n} (in {', '.join(tested[n])})" for n in tested if n not in set(checks)))


def load() -> Tuple["collections.OrderedDict[str, Tuple[str, List[str]]]", List[Tuple[str, str]]]:
    with open(HYPERCALL_H, encoding="utf-8") as f:
        header = f.read()
    with open(HYPERCALLS_MD, encoding="utf-8") as f:
        return rows(calls_table(f.read()), abi_errnos(header)), abi_list(header)


def load_arguments() -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
    """(the table's arguments by call, the ABI's)."""
    with open(HYPERCALL_H, encoding="utf-8") as f:
        header = f.read()
    with open(HYPERCALLS_MD, encoding="utf-8") as f:
        return call_arguments(calls_table(f.read())), abi_arguments(header)
