#!/usr/bin/python3
"""What a misbehaving handler can and cannot do to a secure deployment, tried from outside acan
(nats_raw.py speaks the NATS protocol itself) with the handler role's files.

  attack.py run URL DEPLOYMENT SECONDS
      During a run of job 'job': every chunked value it sees put is forged. A manager's (the
      versions, the state) by publishing a chunk on its subject, which the server must refuse; a
      handler's (step tensors, proposals) by reading its first chunk, deleting it and publishing
      it again with one float changed, which the server allows and the reader must refuse by the
      value's digest. Then the boundaries: another job's subjects and streams, purges, the
      fenced stream, other roles' replies (all refused), and deleting one task of its own job
      (allowed: it costs a retransmission). Prints a JSON account.

  attack.py purge URL DEPLOYMENT TIMES INTERVAL
      With the manager's files (a role that may purge), once the job has tasks: purges the job's
      tuple stream TIMES times, INTERVAL seconds apart, as a server that loses every tuple would.
      Prints how many purges the server confirmed.

  attack.py leftovers URL DEPLOYMENT
      As the observer, after a run: the chunks in the job's streams whose tuple is gone (none
      may be left behind) and the chunked tuples still there. Prints a JSON account.
"""
import json
import struct
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from nats_raw import NatsRaw  # noqa: E402

S, J = "acan", "job"


def connect(url, deployment, role):
    return NatsRaw(url, deployment, role, f"_ACAN.{S}.{J}.{role}")


def chunk_list(headers):
    count, digest, writer, cid = headers["Acan-Chunks"].split(" ")
    return int(count), digest, writer, cid


def run(url, deployment, seconds):
    h = connect(url, deployment, "handler")
    heads = h.subscribe(f"{S}.t.*.{J}.>")
    fenced = h.subscribe(f"{S}.w.t.*.{J}.>")
    h.flush()
    probes, deleted_task = boundaries(h)
    seen, tried_manager, forged_handler, missed_handler = set(), [], 0, 0
    end = time.time() + seconds
    while time.time() < end:
        h.wait(lambda: not fenced.empty() or not heads.empty(), 0.1)
        got = None
        for q in (fenced, heads):
            if not q.empty():
                got = q.get()
                break
        if got is None or "Acan-Chunks" not in got[1]:
            continue
        count, digest, writer, cid = chunk_list(got[1])
        if cid in seen:
            continue
        seen.add(cid)
        subject = f"{S}.c.{J}.{writer}.{cid}.0"
        if writer in ("f", "m"):
            h.publish(subject, b"\0" * 64, headers={"Nats-Msg-Id": "forged-" + cid})
            tried_manager.append(subject)
            continue
        first = h.direct_get(f"{S}_c_{J}", {"seq": 1, "next_by_subj": subject})
        if first is None:
            missed_handler += 1  # taken already
            continue
        data = bytearray(first[1])
        (x,) = struct.unpack_from("<f", data, 0)
        struct.pack_into("<f", data, 0, x + 1.0)
        deleted = h.api("STREAM.MSG.DELETE", f"{S}_c_{J}", {"seq": int(first[0]["Nats-Sequence"])})
        if not deleted or not deleted.get("success"):
            missed_handler += 1
            continue
        ack = h.request(subject, bytes(data))
        if ack is not None and b'"seq"' in ack[1]:
            forged_handler += 1
    h.flush()
    refused_manager = sum(1 for s in tried_manager if h.refused(s))
    print(json.dumps({"chunked_values_seen": len(seen), "manager_chunk_forgeries": len(tried_manager),
                      "manager_chunk_forgeries_refused": refused_manager,
                      "handler_chunks_forged": forged_handler,
                      "handler_chunks_gone_first": missed_handler, "probes": probes,
                      "own_task_deleted": deleted_task}))


def boundaries(h):
    """Another job's subjects and streams, purges, the fenced and cells streams, other roles'
    replies: {what: refused}; and whether deleting a task of its own job was let through."""
    probes = {}
    for subject in (f"{S}.c.{J}.m.forged.0", f"{S}.c.{J}.f.forged.0", f"{S}.c.other.h.x.0",
                    f"{S}.t.4.other.task.x", f"{S}.r.other.m.lease", f"{S}.r.{J}.m.lease",
                    f"{S}.f.t.4.{J}.p.l0.w.v1", f"{S}.t.4.{J}.m.job"):
        before = len(h.errors)
        h.publish(subject, b"rogue")
        probes["publish " + subject] = h.refused(subject, before=before)
    for verb, stream in (("STREAM.PURGE", f"{S}_t_{J}"), ("STREAM.PURGE", f"{S}_c_{J}"),
                         ("STREAM.PURGE", f"{S}_f_{J}"), ("STREAM.MSG.DELETE", f"{S}_f_{J}"),
                         ("STREAM.MSG.DELETE", f"{S}_cf_{J}"), ("STREAM.MSG.DELETE", f"{S}_r_{J}"),
                         ("STREAM.MSG.DELETE", f"{S}_t_other"), ("STREAM.PURGE", f"{S}_t_other"),
                         ("DIRECT.GET", f"{S}_t_other"), ("DIRECT.GET", f"{S}_c_other"),
                         ("STREAM.CREATE", f"{S}_t_other"), ("STREAM.DELETE", f"{S}_t_{J}")):
        subject = f"$JS.API.{verb}.{stream}"
        before = len(h.errors)
        answer = h.api(verb, stream, {"seq": 1}, timeout=0.5)
        probes[subject] = answer is None and h.refused(subject, before=before)
    for subject in ("_INBOX.>", f"_ACAN.{S}.{J}.manager.>", f"_ACAN.{S}.{J}.observer.>",
                    f"{S}.t.*.other.>", f"{S}.c.>"):
        before = len(h.errors)
        h.subscribe(subject)
        probes["subscribe " + subject] = h.refused(subject, verb="Subscription", before=before)
    # A task of its own job, deleted as a take does: allowed. (One that a handler did not take
    # between the look and the delete.)
    deleted_task, give_up = False, time.time() + 60
    while not deleted_task and time.time() < give_up:
        task = h.direct_get(f"{S}_t_{J}", {"seq": 1, "next_by_subj": f"{S}.t.*.{J}.task.>"})
        if task is None:
            h.wait(lambda: False, 0.02)
            continue
        answer = h.api("STREAM.MSG.DELETE", f"{S}_t_{J}", {"seq": int(task[0]["Nats-Sequence"])})
        deleted_task = bool(answer and answer.get("success"))
        if answer is None:
            break  # refused: no answer
    return probes, deleted_task


def purge(url, deployment, times, interval):
    m = connect(url, deployment, "manager")
    give_up = time.time() + 60
    while time.time() < give_up and m.direct_get(
            f"{S}_t_{J}", {"seq": 1, "next_by_subj": f"{S}.t.*.{J}.task.>"}) is None:
        m.wait(lambda: False, 0.05)
    done = 0
    for _ in range(times):
        answer = m.api("STREAM.PURGE", f"{S}_t_{J}")
        done += bool(answer and answer.get("success"))
        m.wait(lambda: False, interval)
    print(json.dumps({"purges": done}))


def leftovers(url, deployment):
    o = connect(url, deployment, "observer")
    named = set()
    for stream, prefix in ((f"{S}_t_{J}", f"{S}.t.*.{J}.>"), (f"{S}_f_{J}", f"{S}.f.t.*.{J}.>")):
        seq = 1
        while True:
            got = o.direct_get(stream, {"seq": seq, "next_by_subj": prefix})
            if got is None:
                break
            if "Acan-Chunks" in got[0]:
                named.add(chunk_list(got[0])[3])
            seq = int(got[0]["Nats-Sequence"]) + 1
    chunks = {}
    for stream in (f"{S}_c_{J}", f"{S}_cf_{J}"):
        info = o.api("STREAM.INFO", stream, {"subjects_filter": f"{S}.c.>"})
        for subject in (info or {}).get("state", {}).get("subjects", {}) or {}:
            chunks.setdefault(subject.split(".")[4], []).append(subject)
    orphans = sorted(cid for cid in chunks if cid not in named)
    print(json.dumps({"chunked_tuples": len(named), "chunk_ids": len(chunks),
                      "orphan_ids": orphans[:5], "orphans": len(orphans)}))


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], float(sys.argv[4]))
    elif sys.argv[1] == "purge":
        purge(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        leftovers(sys.argv[2], sys.argv[3])
