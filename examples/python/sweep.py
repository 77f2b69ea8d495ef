#!/usr/bin/env python3
"""A parameter sweep with the minivmm Python module (docs/python.md).

Runs workload ctx with tasks=2..5 on backend pv, once with pvops=naive and
once with pvops=optimized, prints exits by cause (naive vs optimized, as the
seed patches' tables) and saves a plot of the exits per cause against the
number of tasks.

    cmake --preset debug && cmake --build --preset debug
    PYTHONPATH=build/debug/python /usr/bin/python3 examples/python/sweep.py sweep.png

Options: --rounds N (ctx rounds, default 20), --tasks 2-5.
"""
import argparse
import sys

import minivmm

CAUSES = ["if_set", "if_clear", "cr0_write", "descriptor_update", "page_table_update",
          "cr3_write", "multicall"]


def change(before, after):
    if before == after:
        return "="
    if before == 0:
        return "new"
    return "%+.1f%%" % ((after - before) * 100.0 / before)


def table(title, header, rows):
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    lines = [title]
    for row in [header] + rows:
        cells = [str(row[0]).ljust(widths[0])]
        cells += [str(x).rjust(w) for x, w in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plot", help="where to save the plot (PNG, SVG or PDF)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--tasks", default="2-5", help="range of ctx tasks, e.g. 2-5")
    args = parser.parse_args()
    low, high = (int(x) for x in args.tasks.split("-"))
    tasks = list(range(low, high + 1))

    results = {}  # (tasks, pvops) -> run record
    for n in tasks:
        for pvops in ("naive", "optimized"):
            workload = "ctx,tasks=%d,rounds=%d" % (n, args.rounds)
            r = minivmm.run(backend="pv", pvops=pvops, workload=workload, timeout=120,
                            probe_host=False)
            if not r.ok:
                sys.exit("sweep: %s: %s" % (r["config"]["cmdline"], r.failure))
            results[(n, pvops)] = r
            print("ran %-45s %6d exits  %7.1f ms" % (r["config"]["cmdline"], r["exits"]["total"],
                                                    r["result"]["elapsed_ns"] / 1e6),
                  file=sys.stderr)

    for n in tasks:
        naive, optimized = results[(n, "naive")], results[(n, "optimized")]
        rows = []
        for cause in CAUSES:
            a = naive["causes"]["causes"][cause]["exits"]
            b = optimized["causes"]["causes"][cause]["exits"]
            rows.append([cause, a, b, change(a, b)])
        a, b = naive["exits"]["total"], optimized["exits"]["total"]
        rows.append(["exits (all)", a, b, change(a, b)])
        print(table("\nctx tasks=%d rounds=%d, backend pv: exits by cause (whole run, vmm)"
                    % (n, args.rounds), ["cause", "naive", "optimized", "change"], rows))
    print("\ncr0_write exits depend on the host (kernel.ring3_nm = %s here; docs/exit-model.md)"
          % results[(tasks[0], "naive")]["guest"]["reports"].get("kernel.ring3_nm"))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, cause in enumerate(CAUSES + ["total"]):
        for pvops, style in (("naive", "-"), ("optimized", "--")):
            if cause == "total":
                ys = [results[(n, pvops)]["exits"]["total"] for n in tasks]
            else:
                ys = [results[(n, pvops)]["causes"]["causes"][cause]["exits"] for n in tasks]
            if not any(ys):
                continue
            ax.plot(tasks, ys, style, marker="o", color="C%d" % i,
                    label="%s (%s)" % (cause, pvops))
    ax.set_xlabel("ctx tasks (rounds=%d)" % args.rounds)
    ax.set_ylabel("VM exits (whole run)")
    ax.set_xticks(tasks)
    ax.set_title("minivmm: exits by cause, pvops naive (solid) vs optimized (dashed)")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(args.plot)
    print("\nsaved %s" % args.plot)


if __name__ == "__main__":
    main()
