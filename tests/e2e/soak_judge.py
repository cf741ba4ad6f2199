#!/usr/bin/env python3
"""Judges a soak's samples (tests/e2e/soak.sh writes them): flat memory after the warm-up.

    soak_judge.py DIR MODE [PREFIX]
    soak_judge.py --heap < PROFILE   (soak.sh's reading of nats-server's heap: see heap_fields)

reads DIR/PREFIX{samples,roles,incarnations,server}.csv (soak.sh's names, or with
PREFIX=soak-MODE- the copies it leaves in $ACAN_SOAK_OUT) and exits non-zero naming each series
that grows. The warm-up is the run's first third. A series is flat when its least-squares slope,
projected over the rest of the run, stays within a bound:

- in process, the one process's RSS: max(5% of its median, 8 MiB);
- across processes, each long-lived acan process (the supervisor) by its RSS, the same bound;
  each restarted role (handler and manager processes, SIGKILLed every few seconds and started
  again) by the peak RSS (VmHWM) of each incarnation born after the warm-up, against its birth
  time: max(5% of the median peak, 2 MiB). (Their RSS at a sample depends on how old the
  incarnation the sample finds is: 16-49 MiB, a slope of +-90 KiB/min of noise.)
- the nats-server nats:local starts (a Go program, not acan's): what it keeps, its live heap
  after a collection (Go's HeapAlloc) less two stores that nats-server 2.9 keeps at a high-water
  mark, read from its own heap profile at each sample (heap_fields): the message ids of the
  de-duplication window (a map that keeps its largest size: the most puts seen in a 30-s window)
  and the cache of a file-stored block (the cells stream's block loaded whole, in a buffer of up to
  4 MB, the block's size). The rest must stay within max(10% of its median, 1 MiB) plus what the
  closed connections it records add (nats-server 2.9 keeps the last 10 000, about 950 bytes each
  with two subscriptions: counted at 2 KiB). Its RSS is reported, with the part of it Go's
  allocator holds for the heap's past peaks (HeapSys - HeapReleased), and judged with the bound of
  a long-lived process plus twice (Go's heap goal is twice the live heap) what the closed
  connections and the two stores added.
- the space's resident bytes: max(10% of its median, 256 KiB);
- file descriptors, threads and processes: the second half's peak at most 2 above the first's.
"""
import collections
import csv
import math
import re
import statistics
import sys

CLOSED_CONNECTION_BYTES = 2048
# Where nats-server 2.9.10 allocates the two stores it keeps at a high-water mark.
HIGH_WATER_SITES = {"dedupe_bytes": "(*stream).storeMsgIdLocked",
                    "block_cache_bytes": "server.getMsgBlockBuf"}


def heap_fields(profile):
    """HeapAlloc,HeapSys,HeapReleased,dedupe_bytes,block_cache_bytes of a Go heap profile in its
    text form (/debug/pprof/heap?debug=1): the last two are the in-use bytes of the records whose
    stack passes through HIGH_WATER_SITES, scaled up for the sampling as pprof does (one sample per
    MemProfileRate bytes: the header's heap/N is twice the rate). Both stores are large blocks
    (a map's buckets, a block's buffer), which the sampling nearly always sees."""
    stats = dict(re.findall(r"^# (\w+) = (\d+)$", profile, re.M))
    rate = int(re.search(r"@ heap/(\d+)", profile).group(1)) / 2
    kept = dict.fromkeys(HIGH_WATER_SITES, 0.0)
    for record in re.split(r"\n(?=\d+: \d+ \[)", profile):
        m = re.match(r"(\d+): (\d+) \[", record)
        if not m or m.group(1) == "0":
            continue
        count, size = int(m.group(1)), int(m.group(2))
        for name, site in HIGH_WATER_SITES.items():
            if site in record:
                kept[name] += size / (1 - math.exp(-(size / count) / rate))
                break
    return ",".join([stats["HeapAlloc"], stats["HeapSys"], stats["HeapReleased"]] +
                    [f"{kept[name]:.0f}" for name in HIGH_WATER_SITES])


def rows_of(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def fit(points):
    """Least-squares slope (per second) of (t, v) points, the span of t and the median of v."""
    mt = statistics.fmean(t for t, _ in points)
    mv = statistics.fmean(v for _, v in points)
    den = sum((t - mt) ** 2 for t, _ in points) or 1.0
    slope = sum((t - mt) * (v - mv) for t, v in points) / den
    span = points[-1][0] - points[0][0]
    return slope, span, statistics.median(v for _, v in points)


def main():
    if sys.argv[1:] == ["--heap"]:
        print(heap_fields(sys.stdin.read()))
        return
    d, mode = sys.argv[1], sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else ""
    path = lambda name: f"{d}/{prefix}{name}.csv"
    samples = rows_of(path("samples"))
    if len(samples) < 8:
        sys.exit(f"FAIL: only {len(samples)} samples")
    end_t = float(samples[-1]["t_s"])
    warm_t = end_t / 3
    bad = []

    def judge(name, points, frac, floor, extra=0.0, unit=1.0):
        """points in bytes (after unit) against t in s; prints and records a failure."""
        points = sorted((t, v * unit) for t, v in points)
        if len(points) < 4:
            bad.append(f"{name} ({len(points)} samples after the warm-up)")
            print(f"{mode}: {name}: only {len(points)} samples after the warm-up")
            return
        slope, span, median = fit(points)
        growth = slope * span
        bound = max(frac * median, floor) + extra
        verdict = "flat" if growth <= bound else "GROWS"
        print(f"{mode}: {name}: median {median / 2**20:.2f} MiB, slope {slope * 60 / 1024:+.1f} KiB/min,"
              f" projected growth over {span / 60:.1f} min {growth / 2**20:+.2f} MiB"
              f" (bound {bound / 2**20:.2f} MiB): {verdict}")
        if growth > bound:
            bad.append(name)

    after = [r for r in samples if float(r["t_s"]) >= warm_t]
    total = [(float(r["t_s"]), float(r["rss_kb"])) for r in after]
    resident = [(float(r["t_s"]), float(r["resident_bytes"])) for r in after if r["resident_bytes"]]
    if mode == "in-process":
        judge("RSS", total, 0.05, 8 << 20, unit=1024)
    else:
        slope, span, median = fit(total)
        print(f"{mode}: RSS of every process (not judged: restarted roles are sampled at random ages):"
              f" median {median / 1024:.1f} MiB, slope {slope * 60:+.0f} KiB/min")
        by_role = collections.defaultdict(list)
        for r in rows_of(path("roles")):
            if float(r["t_s"]) >= warm_t:
                by_role[r["role"]].append((float(r["t_s"]), float(r["rss_kb"])))
        judge("supervisor RSS", by_role["supervisor"], 0.05, 8 << 20, unit=1024)
        incarnations = collections.defaultdict(list)
        for r in rows_of(path("incarnations")):
            incarnations[r["role"]].append(r)
        for role in ("handlers", "managers"):
            born_after = [(float(r["born_s"]), float(r["hwm_kb"])) for r in incarnations[role]
                          if float(r["born_s"]) >= warm_t]
            print(f"{mode}: {role}: {len(incarnations[role])} processes in all,"
                  f" {len(born_after)} born after the warm-up")
            judge(f"{role}' peak RSS by incarnation", born_after, 0.05, 2 << 20, unit=1024)
        server = [r for r in rows_of(path("server")) if float(r["t_s"]) >= warm_t]
        heap = [(float(r["t_s"]), float(r["heap_alloc"])) for r in server if r["heap_alloc"]]
        kept_grew = 0.0
        split = bool(heap) and server[0].get("dedupe_bytes") is not None  # older CSVs: no split
        if split:
            kept = {float(r["t_s"]): sum(float(r[k]) for k in HIGH_WATER_SITES)
                    for r in server if r["heap_alloc"]}
            slope, span, median = fit(heap)
            print(f"{mode}: nats-server live heap in all: median {median / 2**20:.2f} MiB,"
                  f" slope {slope * 60 / 1024:+.1f} KiB/min")
            for k in HIGH_WATER_SITES:
                series = [(float(r["t_s"]), float(r[k])) for r in server if r["heap_alloc"]]
                slope, span, median = fit(series)
                print(f"{mode}: nats-server {k.replace('_bytes', '').replace('_', ' ')}: median"
                      f" {median / 2**20:.2f} MiB, at most {max(v for _, v in series) / 2**20:.2f},"
                      f" slope {slope * 60 / 1024:+.1f} KiB/min")
            slope, span, _ = fit(sorted(kept.items()))
            kept_grew = max(slope * span, 0.0)
            heap = [(t, v - kept[t]) for t, v in heap]
        held = [(float(r["t_s"]), float(r["heap_sys"]) - float(r["heap_released"]))
                for r in server if r["heap_sys"] and r["heap_released"]]
        closed = [int(r["closed_connections"]) for r in server if r["closed_connections"]]
        added = (closed[-1] - closed[0]) if len(closed) >= 2 else 0
        allowance = added * CLOSED_CONNECTION_BYTES
        print(f"{mode}: nats-server: {closed[-1] if closed else '?'} closed connections recorded,"
              f" {added} after the warm-up ({allowance / 2**20:.2f} MiB allowed for them)")
        judge("nats-server live heap" + (" beyond those two stores" if split else ""), heap, 0.10,
              1 << 20, extra=allowance)
        if held:
            slope, span, median = fit(sorted(held))
            print(f"{mode}: nats-server heap held by Go's allocator (HeapSys - HeapReleased):"
                  f" median {median / 2**20:.2f} MiB, slope {slope * 60 / 1024:+.1f} KiB/min")
        judge("nats-server RSS", by_role["nats-server"], 0.05, 8 << 20,
              extra=2 * (allowance + kept_grew), unit=1024)
    judge("space resident bytes", resident, 0.10, 256 << 10)
    half = len(after) // 2
    for key in ("fds", "threads", "processes"):
        first = max(int(r[key]) for r in after[:half])
        second = max(int(r[key]) for r in after[half:])
        print(f"{mode}: {key}: peak {first} in the first half, {second} in the second")
        if second > first + 2:
            bad.append(key)
    if bad:
        sys.exit("FAIL: growing: " + ", ".join(bad))
    print(f"{mode}: flat over {len(samples)} samples")


if __name__ == "__main__":
    main()
