"""Every row of docs/hypercalls.md's table of calls is one hypercall of the
ABI's list, and every check of every row is named by a passing hypercall
unit test (hypercall_rows.py); then the reader itself, on small tables."""

import os

import pytest

import hypercall_rows as hr
import results_doc as rd

ERRNOS = {"EPERM", "EINVAL", "EFAULT", "ENOSYS"}
SMALL = """\
# T

| nr | call | success | errors, in check order |
|---|---|---|---|
| 1 | `one(a)` | 0 | a > 1 -EINVAL; outside RAM -EFAULT; a odd -EINVAL |
| 2 | `two()` | | no timer -ENOSYS |
| other | | | -ENOSYS, counted |
"""


@pytest.fixture(scope="module")
def doc():
    return hr.load()


@pytest.fixture(scope="module")
def tested():
    binaries = [b for b in os.environ.get("MINIVMM_HYPERCALL_TESTS", "").split(os.pathsep) if b]
    assert binaries, "MINIVMM_HYPERCALL_TESTS names no test binary"
    return hr.covered(binaries)


def test_the_rows_are_the_hypercall_list_then_other(doc):
    table, abi = doc
    assert [(nr, name) for name, (nr, _) in table.items()] == abi + [("other", "other")]


def test_every_rows_arguments_are_its_abi_argument_list(doc):
    table, abi = hr.load_arguments()
    assert sorted(abi) == sorted(name for _, name in doc[1])
    assert table == abi


def test_the_argument_lists_are_read_in_register_order():
    header = "#define MVMM_HC_ARGS_one(A) A(1, u64, b) A(0, gpa, a)\n#define MVMM_HC_ARGS_two(A)\n"
    assert hr.abi_arguments(header) == {"one": ["a", "b"], "two": []}
    assert hr.call_arguments(hr.calls_table(SMALL)) == {"one": ["a"], "two": []}
    assert hr.call_arguments(hr.calls_table(SMALL.replace("`one(a)`", "`one(a, c)`")))["one"] != \
        hr.abi_arguments(header)["one"]


def test_every_check_of_every_row_has_a_passing_test(doc, tested):
    checks = [c for _, (_, cs) in doc[0].items() for c in cs]
    assert hr.unanswered(checks, tested)[0] == []


def test_every_check_a_test_names_is_in_the_table(doc, tested):
    checks = [c for _, (_, cs) in doc[0].items() for c in cs]
    assert hr.unanswered(checks, tested)[1] == []


def test_checks_are_named_by_errno_and_rank_in_check_order():
    table = hr.rows(hr.calls_table(SMALL), ERRNOS)
    assert table == {
        "one": ("1", ["one.ok", "one.EINVAL", "one.EFAULT", "one.EINVAL.2"]),
        "two": ("2", ["two.ENOSYS"]),
        "other": ("other", ["other.ENOSYS"]),
    }


def test_a_row_without_a_test_and_a_test_without_a_row_are_reported():
    checks = [c for _, (_, cs) in hr.rows(hr.calls_table(SMALL), ERRNOS).items() for c in cs]
    tested = {c: ["T.A"] for c in checks if c != "one.EINVAL.2"}
    tested["three.ok"] = ["T.B"]
    assert hr.unanswered(checks, tested) == (["one.EINVAL.2"], ["three.ok (in T.B)"])


@pytest.mark.parametrize("cell", ["maybe -EINVAL?", "TBD", "an open question", "unspecified -EINVAL"])
def test_a_row_left_open_is_an_error(cell):
    with pytest.raises(rd.DocError, match="left open"):
        hr.rows(hr.calls_table(SMALL.replace("no timer -ENOSYS", cell)), ERRNOS)


def test_an_errno_the_abi_lacks_is_an_error():
    with pytest.raises(rd.DocError, match="no errno of the ABI"):
        hr.rows(hr.calls_table(SMALL.replace("-EFAULT", "-EBUSY")), ERRNOS)


def test_the_abi_header_is_read():
    with open(hr.HYPERCALL_H, encoding="utf-8") as f:
        header = f.read()
    assert {"EPERM", "ENOENT", "E2BIG", "EFAULT", "EINVAL", "ENOSYS"} <= hr.abi_errnos(header)
    assert hr.abi_list(header)[0] == ("1", "mmu_update")
