#!/usr/bin/env python3
"""Checks a run's numbers against each other (tests/e2e/observe_numbers.sh).

  check_numbers.py scrape URL DIR PID MIN
      Scrapes URL (/metrics) into DIR/NNNN.prom every 0.1 s until process PID has exited; fails
      unless MIN scrapes held the job's figures.
  check_numbers.py monotonic DIR FINAL
      No counter series (TYPE counter, and a histogram's _bucket, _count and _sum) ever drops
      from one scrape in DIR to the next, nor from the last to FINAL (the run's metrics.prom),
      and none vanishes once seen (Prometheus reads either as a reset).
  check_numbers.py final RUN_DIR
      RUN_DIR/metrics.prom (the last /metrics page) says what RUN_DIR/summary.json says, figure
      by figure, exactly; every family on the page is checked or named as having no counterpart.
  check_numbers.py charts RUN_DIR CHARTS_JSON report|dashboard
      What the charts hold (chart_values.py, read from Chart.js) is what the run recorded:
      metrics.csv's rows (the report: all of them, the throughput line up to the row that
      applied the last step; the dashboard: the rows it had fetched, the first of the file),
      summary.json's epochs, per-handler work and crash counts, recovery times; the share and
      recovery bars as drawn (heights read back from their pixels); the header's steps; each
      drawn element stands where its value puts it, and a chart with nothing to draw says so.
  final and charts read summary.json only of the version this script knows (SUMMARY_VERSION).
"""
import csv
import json
import math
import os
import re
import sys
import time
import urllib.request

# The summary.json layout this script reads (runtime/core/summary.h, kSummaryVersion).
SUMMARY_VERSION = 1

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def fail(message):
    sys.exit("FAIL: " + message)


def read_summary(run):
    """RUN_DIR/summary.json, refused unless it is of the layout this script reads (its "version";
    runtime/core/summary.h)."""
    path = os.path.join(run, "summary.json")
    summary = json.load(open(path))
    version = summary.get("version")
    if version != SUMMARY_VERSION:
        fail(f"{path} is summary.json version {version!r}; this script reads version "
             f"{SUMMARY_VERSION} (runtime/core/summary.h): update SUMMARY_VERSION and the checks "
             f"together")
    return summary


def parse(text):
    """A page of the text format: {(name, ((label, value), ...)): value} and {family: type}."""
    series, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ", 3)
            types[family] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(f"unparsable metrics line: {line!r}")
        labels = tuple(LABEL.findall(m.group(2) or ""))
        series[(m.group(1), labels)] = float(m.group(3))
    return series, types


def family_of(name, types):
    for suffix in ("_bucket", "_count", "_sum"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def is_counter(name, types):
    return types.get(family_of(name, types)) in ("counter", "histogram")


def show(key):
    name, labels = key
    return name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else "")


# ---- scrape ----

def scrape(url, directory, pid, least):
    os.makedirs(directory, exist_ok=True)
    held = 0
    n = 0
    while True:
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        if not alive:
            break
        try:
            text = urllib.request.urlopen(url, timeout=10).read().decode()
        except OSError:
            time.sleep(0.05)  # the run is ending: its server is gone
            continue
        with open(os.path.join(directory, f"{n:04d}.prom"), "w") as f:
            f.write(text)
        n += 1
        held += "acan_steps_applied_total{" in text
        time.sleep(0.1)
    print(f"scrape: {n} scrapes of {url}, {held} with the job's figures")
    if held < least:
        fail(f"only {held} scrapes held the job's figures (at least {least} wanted): the run was "
             f"too short to watch")


# ---- monotonic ----

def monotonic(directory, final):
    pages = sorted(os.path.join(directory, p) for p in os.listdir(directory) if p.endswith(".prom"))
    last, seen_at, checked = {}, {}, set()
    for page in pages + [final]:
        series, types = parse(open(page).read())
        for key, value in series.items():
            if not is_counter(key[0], types):
                continue
            checked.add(key)
            if key in last and value < last[key]:
                fail(f"{show(key)} dropped from {last[key]} ({seen_at[key]}) to {value} ({page})")
            last[key], seen_at[key] = value, page
        for key in last:
            if key not in series:
                fail(f"{show(key)} (last {last[key]} in {seen_at[key]}) is missing from {page}")
    crashes = sum(v for (name, _), v in last.items() if name == "acan_handler_crashes_total")
    print(f"monotonic: {len(checked)} counter series over {len(pages)} scrapes and the final page "
          f"never dropped; {crashes:.0f} handler crashes meanwhile")


# ---- final ----

class Page:
    def __init__(self, path):
        self.series, self.types = parse(open(path).read())
        self.used = set()

    def values(self, name):
        """{labels other than job and role: value} of one family's samples."""
        out = {}
        for (n, labels), v in self.series.items():
            if n == name:
                out[tuple((k, x) for k, x in labels if k not in ("job", "role"))] = v
        if not out:
            fail(f"metrics.prom has no {name}")
        self.used.add(family_of(name, self.types))
        return out

    def one(self, name):
        (v,) = self.values(name).values()
        return v

    def by(self, name, label):
        return {dict(k)[label]: v for k, v in self.values(name).items()}


def expect(what, got, want, rel=0.0):
    if isinstance(want, dict) or isinstance(got, dict):
        if set(got) != set(want):
            fail(f"{what}: keys {sorted(got)} on the page, {sorted(want)} in the summary")
        for k in want:
            expect(f"{what}[{k}]", got[k], want[k], rel)
        return
    if not (got == want or (rel > 0 and math.isclose(got, want, rel_tol=rel))):
        fail(f"{what}: {got} on the page, {want} in the summary")


def final(run):
    summary = read_summary(run)
    page = Page(os.path.join(run, "metrics.prom"))
    tasks, updates, crashes = summary["tasks"], summary["updates"], summary["crashes"]
    with open(os.path.join(run, "metrics.csv")) as f:
        last_row = list(csv.DictReader(f))[-1]
    if updates["versions_applied"] % updates["shards"]:
        fail(f"versions_applied {updates['versions_applied']} is no multiple of the shards")
    steps = updates["versions_applied"] // updates["shards"]  # each step writes every shard once
    expect("acan_steps_applied_total", page.one("acan_steps_applied_total"), steps)
    expect("metrics.csv's last step", float(last_row["step"]), steps)
    expect("acan_steps", page.one("acan_steps"), steps)  # all of them: the run finished
    expect("acan_samples_total", page.one("acan_samples_total"), summary["samples"])
    expect("acan_versions_applied_total", page.one("acan_versions_applied_total"),
           updates["versions_applied"])
    expect("acan_version_gaps_total", page.one("acan_version_gaps_total"), updates["gaps"])
    expect("acan_version_repeats_total", page.one("acan_version_repeats_total"), updates["repeats"])
    expect("acan_training_loss", page.one("acan_training_loss"), summary["loss_per_epoch"][-1],
           rel=1e-12)
    expect("acan_epoch", page.one("acan_epoch"), len(summary["loss_per_epoch"]))
    expect("acan_tasks_dispatched_total", page.one("acan_tasks_dispatched_total"),
           tasks["dispatched"])
    completed = page.by("acan_tasks_completed_total", "type")
    expect("acan_tasks_completed_total", completed, tasks["by_type"])
    expect("acan_tasks_completed_total, all types", sum(completed.values()), tasks["completed"])
    expect("acan_tasks_retransmitted_total", page.one("acan_tasks_retransmitted_total"),
           tasks["retransmitted"])
    reasons = page.by("acan_retransmissions_total", "reason") if tasks["retransmit_reasons"] \
        else {}
    expect("acan_retransmissions_total", reasons, tasks["retransmit_reasons"])
    expect("acan_duplicates_discarded_total", page.one("acan_duplicates_discarded_total"),
           tasks["duplicates_discarded"])
    expect("acan_speculative_copies_total", page.one("acan_speculative_copies_total"),
           tasks["speculated"])
    expect("acan_deadlines_extended_total", page.one("acan_deadlines_extended_total"),
           tasks["deadlines_extended"])
    controller = summary["controller"]
    expect("acan_timeout_seconds", page.by("acan_timeout_seconds", "class"),
           {c: ms / 1e3 for c, ms in controller["timeout_ms"].items()}, rel=1e-12)
    expect("acan_pouch", page.one("acan_pouch"), controller["pouch"])
    expect("acan_task_size", page.one("acan_task_size"), controller["task_size"])
    expect("acan_completion_rate", page.one("acan_completion_rate"), controller["completion_rate"])
    expect("acan_manager_crashes_total", page.one("acan_manager_crashes_total"), crashes["manager"])
    expect("acan_stalls_total", page.one("acan_stalls_total"), len(summary["stalls"]))
    space = summary["space"]
    expect("acan_space_resident_tuples", page.one("acan_space_resident_tuples"), space["tuples"])
    expect("acan_space_resident_bytes", page.one("acan_space_resident_bytes"), space["bytes"])
    expect("acan_space_bytes_put_total", page.one("acan_space_bytes_put_total"),
           space["bytes_put"])
    expect("acan_space_bytes_returned_total", page.one("acan_space_bytes_returned_total"),
           space["bytes_returned"])
    expect("acan_space_operation_seconds_count",
           page.by("acan_space_operation_seconds_count", "op"),
           {op: c["count"] for op, c in space["calls"].items() if c["count"] > 0})
    handlers = {str(h["id"]): h for h in summary["per_handler"]}
    for metric, field in (("acan_handler_tasks_total", "tasks"), ("acan_handler_work_total", "work"),
                          ("acan_handler_busy_seconds_total", "busy_s"),
                          ("acan_handler_slowdown", "speed"),
                          ("acan_handler_crashes_total", "crashes")):
        expect(metric, page.by(metric, "handler"), {i: h[field] for i, h in handlers.items()})
    expect("acan_handler_crashes_total, all handlers",
           sum(page.by("acan_handler_crashes_total", "handler").values()), crashes["handlers"])
    busy = page.by("acan_handler_busy_seconds_total", "handler")
    lost = page.by("acan_handler_lost_seconds_total", "handler")
    total = 0.0
    for h in summary["per_handler"]:  # summed in the summary's order, as it sums them
        total += busy[str(h["id"])] + lost[str(h["id"])]
    expect("busy + lost seconds, all handlers", total, summary["compute"]["total_task_s"],
           rel=1e-12)
    # No counterpart in the summary: the idle time is bounded by the run's time, all of it taken
    # apart into disjoint waits and tasks (the last row of metrics.csv is the final sample).
    idle = page.by("acan_handler_idle_seconds_total", "handler")
    for i in handlers:
        spent = idle[i] + busy[i] + lost[i]
        if not (idle[i] > 0 and spent <= float(last_row["t_s"]) + 0.001):
            fail(f"handler {i}: idle {idle[i]} s, busy {busy[i]} s, lost {lost[i]} s: more than "
                 f"the run's {last_row['t_s']} s, or never idle")
    for no_counterpart in ("acan_task_seconds", "acan_space_operation_seconds",
                           "acan_manager_takeovers_total"):
        page.used.add(no_counterpart)  # histograms of times; take-overs are not in summary.json
    unchecked = set(page.types) - page.used
    if unchecked:
        fail(f"metrics.prom has families this check does not compare: {sorted(unchecked)}")
    print(f"final: {len(page.used)} families of metrics.prom equal summary.json's figures "
          f"({steps} steps, {tasks['retransmitted']} retransmitted, {crashes['handlers']} handler "
          f"and {crashes['manager']} manager crashes)")


# ---- charts ----

def csv_rows(run):
    """metrics.csv's rows, each cell as (value, tolerance): the file rounds to its decimals."""
    out = []
    with open(os.path.join(run, "metrics.csv")) as f:
        for row in csv.DictReader(f):
            cells = {}
            for k, text in row.items():
                try:
                    v = float(text)
                except ValueError:
                    continue
                decimals = len(text.split(".")[1]) if "." in text else 0
                cells[k] = (v, 0.5 * 10.0 ** -decimals * 1.0001 + 1e-12 * abs(v))
            out.append(cells)
    return out


def close(got, cell):
    want, tolerance = cell
    return got is not None and abs(got - want) <= tolerance


def dataset(charts, chart, label):
    c = charts["charts"].get(chart)
    if c is None:
        fail(f"no chart on {chart}")
    for ds in c["datasets"]:
        if ds["label"] == label:
            return ds
    fail(f"{chart} has no dataset '{label}'")


def check_drawn(charts):
    """Each element drawn stands where its value puts it (the pixel read back through its
    scale), so what the data says is what the reader sees; a bar rises from 0. A chart that says
    it has nothing to draw is hidden and not looked at here (events_or_none checks it)."""
    n = 0
    for cid, c in charts["charts"].items():
        if c is None or c["none"]:
            continue
        for ds in c["datasets"]:
            lo, hi = ds["y_range"]
            span = max(abs(hi - lo), 1e-300)
            if len(ds["drawn"]) != len(ds["data"]):
                fail(f"{cid} '{ds['label']}': {len(ds['data'])} values, "
                     f"{len(ds['drawn'])} drawn")
            for i, (value, el) in enumerate(zip(ds["data"], ds["drawn"])):
                y = value["y"] if isinstance(value, dict) else value
                if el["y"] is None or abs(el["y"] - y) > 1e-6 * span:
                    fail(f"{cid} '{ds['label']}' point {i}: value {y}, drawn at {el['y']}")
                if isinstance(value, dict) and abs(el["x"] - value["x"]) > 1e-6 * max(
                        abs(value["x"]), 1):
                    fail(f"{cid} '{ds['label']}' point {i}: x {value['x']}, drawn at {el['x']}")
                if not isinstance(value, dict) and el["index"] != i:
                    fail(f"{cid} '{ds['label']}' bar {i} drawn in slot {el['index']}")
                # Chart.js sets a bar's base on a whole pixel: half a pixel from 0 at most.
                if "base" in el and (el["base"] is None or
                                     abs(el["base"]) > 0.5 * ds["y_per_pixel"] + 1e-9 * span):
                    fail(f"{cid} '{ds['label']}' bar {i} rises from {el['base']}, not 0")
                n += 1
    return n


def bars(charts, chart, label):
    """The heights of a bar chart's bars as drawn (read back from their pixels), in slot order."""
    ds = dataset(charts, chart, label)
    if charts["charts"][chart]["none"]:
        fail(f"{chart} says '{charts['charts'][chart]['none']}' instead of its bars")
    drawn = ds["drawn"]
    if [el["index"] for el in drawn] != list(range(len(drawn))) or any(
            el["y"] is None for el in drawn):
        fail(f"{chart} '{label}': bars drawn as {drawn}")
    return [el["y"] for el in drawn]


def same_bars(what, got, want, span=1.0):
    if len(got) != len(want) or any(abs(g - w) > 1e-9 * span for g, w in zip(got, want)):
        fail(f"{what}: bars drawn at {got}, {want} from the run's records")


def series_against_csv(charts, rows, chart, label, column, scale=1.0, last=None):
    """The chart's points are metrics.csv's rows, the first of them; `last` (x, y), where given,
    stands for the last row."""
    points = dataset(charts, chart, label)["data"]
    if len(points) > len(rows):
        fail(f"{chart} '{label}': {len(points)} points, metrics.csv has {len(rows)} rows")
    for i, p in enumerate(points):
        t, v = rows[i]["t_s"], rows[i][column]
        if last and i == len(points) - 1:
            t, v = (last[0], 1e-9 * abs(last[0])), (last[1], 1e-6 * abs(last[1]))
        if not close(p["x"], t) or not close(p["y"] * scale, (v[0], v[1])):
            fail(f"{chart} '{label}' point {i}: ({p['x']}, {p['y'] * scale}), metrics.csv row "
                 f"{i + 1}: t_s {t[0]}, {column} {v[0]}")
    return len(points)


def training_rows(rows):
    """metrics.csv's rows up to the one that applied the run's last step: a row after it (the
    last epoch's held-out evaluation, the shutdown) measured no training, and the throughput line
    leaves it off rather than fall to its 0 samples/s."""
    last = rows[-1]["step"][0]
    end = next(i for i, r in enumerate(rows) if r["step"][0] >= last)
    return rows[: end + 1]


def last_throughput(summary, rows):
    """Where summary.json says when the last step was applied (last_step_t_s, to come from the
    runtime), a last row sampled after it is drawn then, its samples over the time up to then
    (the page's throughputPoints); None: drawn as it is."""
    end = summary.get("last_step_t_s")
    if end is None or len(rows) < 2:
        return None
    (t0, _), (t1, _), (rate, _) = rows[-2]["t_s"], rows[-1]["t_s"], rows[-1]["samples_per_s"]
    return (end, rate * (t1 - t0) / (end - t0)) if t0 < end < t1 else None


def steps_of(summary):
    """The run's steps from summary.json: its `steps` where it has one (a manager's summary);
    an in-process summary has none, and versions_applied / shards stands for it (one version per
    shard and step in observe_numbers.sh's job, no momentum: `final` checks it against
    metrics.csv's last step)."""
    if "steps" in summary:
        return summary["steps"]
    return summary["updates"]["versions_applied"] // summary["updates"]["shards"]


def events_or_none(charts, cid, events, kind):
    """A chart says it has nothing to draw, in words where its plot would be, exactly when the
    run had none of its events."""
    c = charts["charts"].get(cid)
    if c is None:
        fail(f"no chart on {cid}")
    if events and c["none"]:
        fail(f"{kind}: {cid} says '{c['none']}', the run had {events}")
    if not events and not (c["none"].startswith("none") and c["none_shown"]):
        fail(f"{kind}: {cid} has nothing to draw and does not say so in words "
             f"(data-none '{c['none']}', shown instead of the plot: {c['none_shown']})")
    return c["none"]


def charts_check(run, charts_path, kind):
    charts = json.load(open(charts_path))
    summary = read_summary(run)
    rows = csv_rows(run)
    report = kind == "report"
    trained = training_rows(rows)
    n = series_against_csv(charts, rows, "c-throughput", "samples/s", "samples_per_s",
                           last=last_throughput(summary, trained) if report else None)
    if report and n != len(trained):
        fail(f"the report draws {n} throughput points, metrics.csv has {len(rows)} rows of "
             f"which {len(trained)} run to the last step")
    if n < 2:
        fail(f"{kind}: {n} throughput points, too few to check")
    fetched = 0
    for label, column in (("retransmitted (total)", "retransmitted"),
                          ("handler crashes (total)", "handler_crashes"),
                          ("manager crashes (total)", "manager_crashes")):
        fetched = series_against_csv(charts, rows, "c-faults", label, column)
    if report and fetched != len(rows):
        fail(f"the report's fault chart holds {fetched} rows, metrics.csv has {len(rows)}")
    series_against_csv(charts, rows, "c-controller", "mean timeout (ms)", "mean_timeout_ms")
    series_against_csv(charts, rows, "c-controller", "pouch", "pouch")
    series_against_csv(charts, rows, "c-space", "tuples", "space_tuples")
    series_against_csv(charts, rows, "c-space", "MiB", "space_bytes", scale=1048576)
    # The header: the run's steps, never its versions applied (one per shard and step). The
    # dashboard's "step N / total" while it goes.
    steps, facts = steps_of(summary), charts["facts"]
    if report and facts.get("steps") != str(steps):
        fail(f"report: the header says steps {facts.get('steps')!r}, summary.json {steps} "
             f"(versions applied {summary['updates']['versions_applied']})")
    if not report:
        m = re.fullmatch(r"(\d+) / (\d+)", facts.get("step", ""))
        if "steps" in facts or not m or int(m.group(2)) != steps or int(m.group(1)) > steps:
            fail(f"dashboard: the header says {facts}, summary.json has {steps} steps")
    # Epochs: the summary's losses and held-out figures (the dashboard: the epochs ended so far).
    epochs = dataset(charts, "c-epochs", "training loss")["data"]
    losses = summary["loss_per_epoch"]
    if (report and len(epochs) != len(losses)) or not 0 < len(epochs) <= len(losses):
        fail(f"{kind}: {len(epochs)} epochs drawn, the summary has {len(losses)}")
    events_or_none(charts, "c-epochs", len(epochs), kind)
    for i, p in enumerate(epochs):
        if p["x"] != i + 1 or not math.isclose(p["y"], losses[i], rel_tol=1e-12):
            fail(f"{kind}: epoch point {i}: {p}, summary loss_per_epoch[{i}] {losses[i]}")
    tests = summary["test_per_epoch"]
    for label, field in (("test loss", "test_loss"), ("test accuracy", "test_accuracy")):
        drawn = dataset(charts, "c-epochs", label)["data"]
        if len(drawn) != len(epochs):
            fail(f"{kind}: {len(drawn)} '{label}' points for {len(epochs)} epochs")
        for p, t in zip(drawn, tests):
            if p["x"] != t["epoch"] or not math.isclose(p["y"], t[field], rel_tol=1e-12):
                fail(f"{kind}: '{label}' point {p}, summary {field} {t[field]} of epoch "
                     f"{t['epoch']}")
    # Faults: the report's last point is the run's total; a run (or, on the dashboard, the rows
    # fetched so far) without any says so instead of drawing a flat line at 0.
    faults = {label: dataset(charts, "c-faults", label)["data"][-1]["y"]
              for label in ("retransmitted (total)", "handler crashes (total)",
                            "manager crashes (total)")}
    if report and faults != {"retransmitted (total)": summary["tasks"]["retransmitted"],
                             "handler crashes (total)": summary["crashes"]["handlers"],
                             "manager crashes (total)": summary["crashes"]["manager"]}:
        fail(f"report: the fault chart ends at {faults}, summary.json has retransmitted "
             f"{summary['tasks']['retransmitted']}, crashes {summary['crashes']}")
    said = [events_or_none(charts, "c-faults", sum(
        r[c][0] for r in rows[:fetched]
        for c in ("retransmitted", "handler_crashes", "manager_crashes")), kind)]
    # Share of work, as drawn: the report's is the summary's per-handler work; the dashboard's
    # that of the last row it had, metrics.csv's row of that index.
    handlers = summary["per_handler"]
    labels = charts["charts"]["c-share"]["labels"]
    if labels != [f"h{h['id']}" for h in handlers]:
        fail(f"{kind}: share chart labels {labels}, handlers {[h['id'] for h in handlers]}")
    if report:
        work = [h["work"] for h in handlers]
    else:
        work = [rows[fetched - 1][f"h{h['id']}_work"][0] for h in handlers]
    same_bars(f"{kind}: share of work of {labels}", bars(charts, "c-share", "share of work"),
              [w / sum(work) for w in work])
    if report:  # of speed: the inverse of each one's mean slow-down over the rows
        speeds = [sum(r[f"h{h['id']}_speed"][0] for r in rows) / len(rows) for h in handlers]
    else:
        speeds = [rows[fetched - 1][f"h{h['id']}_speed"][0] for h in handlers]
    inverse = [1 / max(1, s) for s in speeds]
    same_bars(f"{kind}: share of speed of {labels} (slow-downs {speeds})",
              bars(charts, "c-share", "share of speed"), [v / sum(inverse) for v in inverse])
    recovered = ""
    if report:  # recovery: each lost task's crash to its redo, in power-of-two buckets from 1 ms
        recovery = summary["recovery"]
        ms = [x["done_ms"] for x in recovery.get("lost", []) if "done_ms" in x] or \
            recovery.get("handler_ms", [])
        said.append(events_or_none(charts, "c-recovery", len(ms), kind))
        want = []
        if ms:
            top = max(1, math.ceil(math.log2(max(max(ms), 1))))
            want = [0] * (top + 1)
            for v in ms:
                want[min(top, max(0, math.ceil(math.log2(max(v, 1)))))] += 1
            same_bars("report: recovery histogram", bars(charts, "c-recovery", "lost tasks"),
                      want, span=max(want))
        elif dataset(charts, "c-recovery", "lost tasks")["data"]:
            fail("report: no lost task in summary.json, bars in the recovery histogram")
        recovered = f", {len(ms)} recoveries"
    drawn = check_drawn(charts)
    nothing = "; ".join(s for s in said if s)
    print(f"charts ({kind}): {n} rows of metrics.csv drawn of {len(rows)}, {len(epochs)} epochs, "
          f"steps {steps} in the header, per-handler shares (drawn) and fault totals as "
          f"recorded{recovered}; {drawn} drawn elements where their values put them"
          + (f"; said instead of a chart: {nothing}" if nothing else ""))


def main():
    command = sys.argv[1]
    if command == "scrape":
        scrape(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif command == "monotonic":
        monotonic(sys.argv[2], sys.argv[3])
    elif command == "final":
        final(sys.argv[2])
    elif command == "charts":
        charts_check(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        fail(f"unknown command {command}")


if __name__ == "__main__":
    main()
