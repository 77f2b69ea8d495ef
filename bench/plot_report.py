#!/usr/bin/env python3
"""Draw a minivmm run or bench record (docs/run-record.md) with matplotlib.

    plot_report.py RECORD.json -o report.html   # self-contained page, PNGs inline
    plot_report.py RECORD.json -o figures.png   # one image of every figure (.svg, .pdf too)

`minivmm report` and `minivmm bench --plot` run this script. Exit status: 0
done, 1 failed, 2 unreadable or unknown record, 3 matplotlib is missing
(Debian: apt-get install python3-matplotlib).
"""

import argparse
import base64
import html
import io
import json
import math
import os
import sys

# Cause names come from the record (the VMM's one list, exit_stats.h's
# MINIVMM_CAUSE_LIST): a run's causes.causes, a bench's exits.<cause>
# metrics. Colours are given in that order from a colour-blind-safe palette
# (Okabe-Ito, then Tol's), so a cause has one colour on a page.
PALETTE = ["#E69F00", "#56B4E9", "#009E73", "#D55E00", "#CC79A7", "#F0E442", "#0072B2", "#000000",
           "#882255", "#44AA99", "#117733", "#DDCC77", "#332288", "#88CCEE", "#AA4499", "#661100"]
# Not causes: the bench's exits of no cause, and a site's.
UNCAUSED = {"other": "other (exits of no cause)", "none": "no cause"}
UNCAUSED_COLOR = "#999999"


# The VMM's labels of its causes ("IF set"), which `minivmm report` passes
# (--cause-label name=label); a cause without one is its name, spaced.
CAUSE_LABELS = {}


def cause_label(name):
    return UNCAUSED.get(name, CAUSE_LABELS.get(name, name.replace("_", " ")))


def cause_colors(names):
    """{cause: colour} for the causes in `names`, in order; the uncaused grey."""
    causes = [n for n in names if n not in UNCAUSED]
    colors = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(causes)}
    colors.update({n: UNCAUSED_COLOR for n in UNCAUSED})
    return colors


def bench_causes(bench):
    """The exits.<cause> metrics' causes of a bench, in the record's order, "other" last."""
    names = {}
    for r in bench.get("results", []):
        for metric in r.get("metrics", {}):
            if metric.startswith("exits.") and metric != "exits.total":
                names.setdefault(metric[len("exits."):])
    return [n for n in names if n != "other"] + [n for n in names if n == "other"]


CONFIG_COLORS = {"naive": "#7f7f7f", "optimized": "#009E73"}
SINGLE_COLOR = "#56B4E9"
HOST_NOTE = (
    "Exit counts are exact; all but the CR0-write counts (and the totals they add to) "
    "are the same on every host, and those follow from whether the host delivers "
    "ring-3 #NM (docs/exit-model.md). Timings (guest TSC) are only "
    "meaningful as ratios within one run; on software KVM with an emulated ring 0 "
    "(docs/hosts.md) they are dominated by instruction emulation."
)


def load(path):
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError) as e:
        print(f"plot_report.py: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    schema = record.get("schema") if isinstance(record, dict) else None
    if schema not in ("minivmm.run", "minivmm.bench"):
        print(f"plot_report.py: {path} is neither a run nor a bench record", file=sys.stderr)
        sys.exit(2)
    return record


def median(result, metric):
    m = result.get("metrics", {}).get(metric)
    return None if m is None else m.get("median")


def groups_of(bench):
    """Results grouped by (workload_spec, backend), configurations in bench order."""
    order = [c["name"] for c in bench.get("settings", {}).get("configurations", [])]
    groups = {}
    for r in bench.get("results", []):
        groups.setdefault((r["workload_spec"], r["backend"]), []).append(r)
    for rs in groups.values():
        rs.sort(key=lambda r: order.index(r["configuration"]) if r["configuration"] in order else 99)
    return groups


def config_color(name):
    return CONFIG_COLORS.get(name, SINGLE_COLOR)


def draw_exits(ax, results, title, causes):
    """Stacked exits by cause (`causes`: {cause: colour}), one bar per configuration."""
    names = [r["configuration"] for r in results]
    bottoms = [0.0] * len(results)
    for cause, color in causes.items():
        values = [median(r, "exits." + cause) or 0 for r in results]
        if not any(values):
            continue
        ax.bar(names, values, bottom=bottoms, color=color, label=cause_label(cause),
               edgecolor="white", linewidth=0.5)
        bottoms = [b + v for b, v in zip(bottoms, values)]
    if not any(bottoms):
        ax.bar(names, bottoms)  # no exits at all: keep the configuration axis
    for i, total in enumerate(bottoms):
        ax.annotate(f"{total:.0f}", (i, total), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(f"exits ({results[0].get('scope', 'workload')})")
    ax.set_ylim(0, max(bottoms + [1]) * 1.15)
    ax.tick_params(axis="x", labelrotation=35, labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def draw_time(ax, results, title, causes):
    """Guest TSC per operation, median with min-max whiskers."""
    names = [r["configuration"] for r in results]
    med, low, high = [], [], []
    for r in results:
        m = r.get("metrics", {}).get("guest.tsc_per_op_net")
        if m is None:
            med.append(0), low.append(0), high.append(0)
            continue
        med.append(m["median"])
        low.append(m["median"] - m["min"])
        high.append(m["max"] - m["median"])
    ax.bar(names, med, yerr=[low, high], capsize=3, color=[config_color(n) for n in names],
           error_kw={"elinewidth": 0.8})
    op = results[0].get("timing_operation", "op")
    ax.set_title(title, fontsize=10)
    ax.set_ylabel(f"guest TSC per {op} (net)")
    ax.tick_params(axis="x", labelrotation=35, labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 4))


def draw_summary(ax, groups):
    """Exits per operation, all naive against all optimized, per workload and backend."""
    labels, naive, optimized = [], [], []
    for (spec, backend), results in groups.items():
        by = {r["configuration"]: r for r in results}
        if "naive" not in by or "optimized" not in by:
            continue
        labels.append(f"{spec}\n{backend}")
        naive.append(median(by["naive"], "exits_per_op") or 0)
        optimized.append(median(by["optimized"], "exits_per_op") or 0)
    x = range(len(labels))
    w = 0.38
    ax.bar([i - w / 2 for i in x], naive, w, label="all naive", color=CONFIG_COLORS["naive"])
    ax.bar([i + w / 2 for i in x], optimized, w, label="all optimized", color=CONFIG_COLORS["optimized"])
    for i, (a, b) in enumerate(zip(naive, optimized)):
        if a > 0:
            ax.annotate(f"{(b - a) / a * 100:+.0f}%", (i + w / 2, b), ha="center", va="bottom",
                        fontsize=8, xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(list(x), labels, fontsize=8)
    ax.set_ylabel("exits per operation")
    ax.set_title("Exits per operation: all naive vs all optimized", fontsize=11)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def bench_figures(plt, bench):
    groups = groups_of(bench)
    keys = list(groups)
    if not keys:  # a bench stopped before any workload run: nothing to draw
        return []
    specs = list(dict.fromkeys(k[0] for k in keys))
    backends = list(dict.fromkeys(k[1] for k in keys))
    figs = []
    names = bench_causes(bench)
    causes = {c: color for c, color in cause_colors(names).items() if c in names}

    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(keys) + 2), 4))
    draw_summary(ax, groups)
    fig.tight_layout()
    figs.append(("Exits per operation", fig))

    for name, draw in (("Exits by cause, per configuration", draw_exits),
                       ("Guest time per operation, per configuration", draw_time)):
        fig, axes = plt.subplots(len(specs), len(backends), squeeze=False,
                                 figsize=(5.2 * len(backends), 3.4 * len(specs)))
        for i, spec in enumerate(specs):
            for j, backend in enumerate(backends):
                ax = axes[i][j]
                if (spec, backend) not in groups:
                    ax.set_visible(False)
                    continue
                draw(ax, groups[(spec, backend)], f"{spec} · backend={backend}", causes)
        if draw is draw_exits:
            handles, labels = {}, {}
            for ax in axes.flat:
                for h, l in zip(*ax.get_legend_handles_labels()):
                    handles.setdefault(l, h)
            order = [cause_label(c) for c in causes if cause_label(c) in handles]
            fig.tight_layout()
            # Above the panels; savefig's tight bounding box keeps it in the image.
            fig.legend([handles[l] for l in order], order, loc="lower center", bbox_to_anchor=(0.5, 1.0),
                       ncol=min(len(order), 2 * len(backends)), fontsize=8, frameon=False)
        else:
            fig.tight_layout()
        figs.append((name, fig))
    return figs


def run_figures(plt, run):
    causes = run.get("causes", {}).get("causes", {})
    names = list(causes)
    colors = cause_colors(record_causes(run))
    ops = [causes[c].get("ops", 0) for c in names]
    exits = [causes[c].get("exits", 0) for c in names]
    figs = []
    fig, ax = plt.subplots(figsize=(7, 3.6))
    y = range(len(names))
    h = 0.38
    ax.barh([i - h / 2 for i in y], ops, h, label="operations", color="#bbbbbb")
    ax.barh([i + h / 2 for i in y], exits, h, label="exits", color=[colors[c] for c in names])
    ax.set_yticks(list(y), [cause_label(c) for c in names])
    ax.invert_yaxis()
    ax.set_xlabel("count (whole run, source: vmm)")
    ax.set_title("Operations and the exits they took, by cause: " + run.get("config", {}).get("cmdline", ""),
                 fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    figs.append(("Exits by cause", fig))

    calls = run.get("hypercalls", {}).get("calls", {})
    if calls:
        fig, ax = plt.subplots(figsize=(7, 0.35 * len(calls) + 1.2))
        items = sorted(calls.items(), key=lambda kv: -kv[1].get("ops", 0))
        y = range(len(items))
        ax.barh([i - h / 2 for i in y], [v.get("ops", 0) for _, v in items], h, label="operations", color="#bbbbbb")
        ax.barh([i + h / 2 for i in y], [v.get("exits", 0) for _, v in items], h, label="exits", color="#0072B2")
        ax.set_yticks(list(y), [k for k, _ in items])
        ax.invert_yaxis()
        ax.set_xlabel("count (whole run, source: vmm)")
        ax.set_title("Hypercalls: operations (direct + multicall entries) and exits", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        fig.tight_layout()
        figs.append(("Hypercalls", fig))

    if run.get("sites"):
        figs.append(("Exits by stack (flame graph)", flame_graph(plt, run)))
    if run.get("timeline"):
        figs.append(("Exits over time, by cause", exits_over_time(plt, run)))
        return figs
    # Integer reports are JSON numbers since run schema version 2, strings of
    # digits before (docs/run-record.md); float() reads both.
    reports = run.get("guest", {}).get("reports", {})
    timed = sorted({k.split(".")[0] for k in reports if k.endswith(".tsc_net_per_op")})
    if timed:
        fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(timed) + 2), 3.4))
        ax.bar(timed, [float(reports[w + ".tsc_net_per_op"]) for w in timed], color="#0072B2")
        ax.set_ylabel("guest TSC per operation (net)")
        ax.set_title("Guest time per operation (one run)", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        fig.tight_layout()
        figs.append(("Guest time per operation", fig))
    return figs


# The causes a run record names, in its order, then "none" (an exit of no
# cause, docs/run-record.md "sites").
def record_causes(run):
    return list(run.get("causes", {}).get("causes", {})) + ["none"]


def cause_color(run, cause):
    return cause_colors(record_causes(run)).get(cause, UNCAUSED_COLOR)


def frame_name(frame):
    """A frame as folded stacks name it (docs/sites.md): its function, else its address."""
    return frame.get("function") or frame.get("pc", "?")


def flame_tree(run):
    """The record's stacks as a tree rooted at their causes: {name: [exits, children]};
    with --kernel-exits, the exits KVM handled in the kernel too, rooted at
    "kvm:reason", one frame deep (docs/sites.md "Folded stacks")."""
    paths = [([stack["cause"]] + [frame_name(f) for f in reversed(stack.get("frames", []))],
              stack["exits"]) for stack in run["sites"].get("stacks", [])]
    kernel = run.get("kernel_exits") or {}
    paths += [(["kvm:" + site["reason"]] + [frame_name(f) for f in site.get("frames", [])],
               site["exits"] - site.get("to_vmm", 0)) for site in kernel.get("sites", [])]
    root = {}
    for path, exits in paths:
        if exits == 0:
            continue
        level = root
        for name in path:
            node = level.setdefault(name, [0, {}])
            node[0] += exits
            level = node[1]
    return root


def flame_depth(tree):
    return 1 + max((flame_depth(children) for _, children in tree.values()), default=0) if tree else 0


def flame_graph(plt, run):
    """A flame graph of the run's exits by stack: the cause at the bottom, the
    exiting function on top, each frame a rectangle as wide as its exits."""
    tree = flame_tree(run)
    total = sum(n for n, _ in tree.values()) or 1
    depth = flame_depth(tree)
    fig, ax = plt.subplots(figsize=(11, 0.24 * depth + 1.2))
    rows = [([], []) for _ in range(depth)]  # per level: (x, width) and colour of each frame

    def draw(level, x, y, cause):
        for name in sorted(level):
            n, children = level[name]
            c = cause or name
            rows[y][0].append((x, n))
            rows[y][1].append(cause_color(run, c))
            if n / total > 0.04:
                ax.text(x + n / 2, y + 0.5, name if y else cause_label(name),
                        ha="center", va="center", fontsize=6, clip_on=True)
            draw(children, x, y + 1, c)
            x += n

    draw(tree, 0, 0, None)
    # One collection per level, not a patch per frame: a stack of a few
    # thousand frames draws in a fraction of the time.
    for y, (spans, colors) in enumerate(rows):
        ax.broken_barh(spans, (y, 1), facecolors=colors, edgecolor="white", linewidth=0.5,
                       alpha=1.0 if y == 0 else 0.55 + 0.4 * ((y % 2) == 0))
    ax.set_xlim(0, total)
    ax.set_ylim(0, depth)
    ax.set_yticks([])
    ax.set_xlabel(f"exits ({total} in all, source: vmm); bottom: the cause, top: the exiting function")
    ax.set_title("Exits by stack (docs/sites.md)", fontsize=10)
    fig.tight_layout()
    return fig


def exits_over_time(plt, run):
    """The record's timeline: exits per bin of host time, stacked by cause."""
    timeline = run["timeline"]
    bin_ms = timeline["bin_ns"] / 1e6
    rows = timeline.get("exits_by_cause", {})
    order = [c for c in record_causes(run) if c in rows] + sorted(c for c in rows if c not in record_causes(run))
    bins = timeline.get("bins", 0)
    # Each bin a step from its start to the next one's: one filled polygon
    # per cause, stacked, rather than a bar per bin and cause.
    edges = [i * bin_ms for i in range(bins + 1)]
    fig, ax = plt.subplots(figsize=(9, 3.6))
    if bins and order:
        ax.stackplot(edges, *[list(rows[c][:bins]) + [rows[c][bins - 1]] for c in order],
                     colors=[cause_color(run, c) for c in order],
                     labels=[cause_label(c) for c in order], step="post")
        ax.set_xlim(0, edges[-1])
    ax.set_xlabel(f"host time since the run started, ms (bins of {bin_ms:g} ms, source: host)")
    ax.set_ylabel("exits per bin")
    ax.set_title("Exits over time, by cause", fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    fig.tight_layout()
    return fig


def png_base64(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def fmt_value(v):
    if v is None:
        return "-"
    if float(v).is_integer() and abs(v) < 1e7:
        return f"{v:.0f}"
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.3g}"


def fmt_change(a, b):
    if a is None or b is None:
        return ""
    if a == b:
        return "="
    if a == 0:
        return "new"
    return f"{(b - a) / abs(a) * 100:+.1f}%"


def table_html(header, rows):
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    return "\n".join(out) + "</table>"


def per_vcpu_table(run):
    """A run record's exits per vCPU (source vmm): by cause, by hypercall and
    in total, one column per vCPU and the run's total; "" with one vCPU."""
    per_vcpu = run.get("exits", {}).get("per_vcpu", [])
    if len(per_vcpu) < 2:
        return ""
    causes = run.get("causes", {}).get("causes", {})
    names = list(causes)
    rows = []
    for name in names:
        cells = [v.get("causes", {}).get(name, {}).get("exits", 0) for v in per_vcpu]
        total = causes[name].get("exits", 0)
        if total or any(cells):
            rows.append([f"cause {cause_label(name)}"] + cells + [total])
    for name, c in sorted(run.get("hypercalls", {}).get("calls", {}).items()):
        cells = [v.get("hypercalls", {}).get(name, {}).get("exits", 0) for v in per_vcpu]
        if c.get("exits", 0) or any(cells):
            rows.append([f"hypercall {name}"] + cells + [c.get("exits", 0)])
    rows.append(["total"] + [v.get("total", 0) for v in per_vcpu] + [run["exits"].get("total", 0)])
    return table_html(["exits"] + [f"vCPU {v.get('vcpu', i)}" for i, v in enumerate(per_vcpu)] + ["total"],
                      rows)


def bench_tables(bench):
    parts = []
    metrics = [("exits.total", "exits")] + [("exits." + c, "exits: " + cause_label(c))
                                            for c in bench_causes(bench)] + [
        ("exits_per_op", "exits per operation"),
        ("guest.tsc_per_op_net", "guest TSC per operation, net"),
        ("kvm.insn_emulation_per_op", "emulated instructions per operation (kvm-stats)"),
    ]
    for (spec, backend), results in groups_of(bench).items():
        by = {r["configuration"]: r for r in results}
        if "naive" not in by or "optimized" not in by:
            continue
        rows = []
        for key, label in metrics:
            a, b = median(by["naive"], key), median(by["optimized"], key)
            if a is None and b is None or (key.startswith("exits.") and key != "exits.total" and not a and not b):
                continue
            rows.append([label, fmt_value(a), fmt_value(b), fmt_change(a, b)])
        parts.append(f"<h3>{html.escape(spec)}, backend={html.escape(backend)} "
                     f"(median of {by['optimized'].get('runs', '?')} runs, {html.escape(by['naive'].get('scope', ''))})</h3>")
        parts.append(table_html(["metric", "all naive", "all optimized", "change"], rows))
        rows = []
        for r in results:
            rows.append([r["configuration"], fmt_value(median(r, "exits.total")),
                         fmt_change(median(by["naive"], "exits.total"), median(r, "exits.total")),
                         fmt_value(median(r, "exits_per_op")), fmt_value(median(r, "guest.tsc_per_op_net")),
                         fmt_change(median(by["naive"], "guest.tsc_per_op_net"), median(r, "guest.tsc_per_op_net"))])
        parts.append(table_html(["optimized", "exits", "change", "exits/op", "TSC/op", "change"], rows))
    return "\n".join(parts)


def measured(value, yes, no):
    """A host probe answer (provenance.host): true, false, or null when not measured."""
    return "not measured" if value is None else (yes if value else no)


def record_cpus(record):
    """The vCPUs of every run: a bench's settings.cpus or a run's config.cpus
    (1 in records made before --cpus existed)."""
    where = record.get("settings" if record.get("schema") == "minivmm.bench" else "config", {})
    return where.get("cpus", 1)


def provenance_html(record):
    p = record.get("provenance", {})
    host = p.get("host", {})
    rows = [
        ["tool", f"{p.get('tool', '')} {p.get('tool_version', '')}"],
        ["command line", p.get("command_line", record.get("config", {}).get("cmdline", ""))],
        ["started at", p.get("started_at", "")],
        ["guest image", f"{p.get('guest_image', {}).get('path', '')} {p.get('guest_image', {}).get('digest', '')}"],
        ["vCPUs", str(record_cpus(record))],
        ["host kernel", host.get("kernel", "")],
        ["CPU", host.get("cpu", "")],
        ["KVM module", host.get("kvm_module", "")],
        ["guest ring 0", measured(host.get("ring0_emulated"), "emulated", "native")],
        ["ring-3 #NM", measured(host.get("ring3_nm"), "delivered", "not delivered")],
        ["vmcall", measured(host.get("vmcall_in_kernel"), "handled in the kernel",
                            "not handled in the kernel")],
    ]
    return table_html(["", ""], [r for r in rows if r[1].strip()])


def write_html(path, record, figs):
    kind = "bench" if record["schema"] == "minivmm.bench" else "run"
    body = [f"<h1>minivmm {kind} report</h1>", f"<p class=note>{html.escape(HOST_NOTE)}</p>",
            provenance_html(record)]
    for title, fig in figs:
        body.append(f"<h2>{html.escape(title)}</h2>")
        body.append(f'<img alt="{html.escape(title)}" src="data:image/png;base64,{png_base64(fig)}">')
    if kind == "run" and per_vcpu_table(record):
        body.append("<h2>Exits per vCPU</h2>")
        body.append(per_vcpu_table(record))
    if kind == "bench":
        body.append("<h2>Tables</h2>")
        body.append(bench_tables(record))
        failures = record.get("failures", 0)
        if failures:
            body.insert(1, f"<p class=bad>{failures} runs failed; see the record's runs[].failure.</p>")
        incomplete = record.get("incomplete")
        if isinstance(incomplete, dict):
            body.insert(1, "<p class=bad>Incomplete: " + html.escape(str(incomplete.get("reason", "stopped early")))
                        + f"; {incomplete.get('completed_runs', '?')} of {incomplete.get('planned_runs', '?')}"
                        " runs done (the record's incomplete.missing lists the rest).</p>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "img{max-width:100%}table{border-collapse:collapse;margin:0.5em 0 1.5em}"
             "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
             "td:first-child,th:first-child{text-align:left}.note{color:#555}.bad{color:#b00}")
    with open(path, "w") as f:
        f.write("<!DOCTYPE html>\n<html><head><meta charset=utf-8><title>minivmm report</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_image(path, plt, figs):
    """All figures stacked into one image."""
    import matplotlib.image as mpimg
    images = []
    for _, fig in figs:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        buf.seek(0)
        images.append(mpimg.imread(buf))
    width = max(i.shape[1] for i in images)
    height = sum(i.shape[0] for i in images)
    out = plt.figure(figsize=(width / 110, height / 110), dpi=110)
    top = 0
    for img in images:
        ax = out.add_axes([0, 1 - (top + img.shape[0]) / height, img.shape[1] / width, img.shape[0] / height])
        ax.imshow(img)
        ax.axis("off")
        top += img.shape[0]
    out.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("record")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--cause-label", action="append", default=[], metavar="NAME=LABEL",
                        help="a cause's label in the figures (minivmm report passes the VMM's)")
    parser.add_argument("--quiet-without-matplotlib", action="store_true",
                        help="exit 3 without a message when matplotlib is missing "
                             "(minivmm report then tries its next Python)")
    args = parser.parse_args()
    for item in args.cause_label:
        name, _, label = item.partition("=")
        CAUSE_LABELS[name] = label
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if not args.quiet_without_matplotlib:
            print("plot_report.py: matplotlib is missing (Debian: apt-get install "
                  "python3-matplotlib)", file=sys.stderr)
        return 3
    record = load(args.record)
    figs = bench_figures(plt, record) if record["schema"] == "minivmm.bench" else run_figures(plt, record)
    if not figs and not args.output.endswith((".html", ".htm")):
        print(f"plot_report.py: nothing to draw into {args.output}: the record has no results",
              file=sys.stderr)
        return 1
    try:
        if args.output.endswith((".html", ".htm")):
            write_html(args.output, record, figs)
        else:
            write_image(args.output, plt, figs)
    except OSError as e:
        print(f"plot_report.py: cannot write {args.output}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
