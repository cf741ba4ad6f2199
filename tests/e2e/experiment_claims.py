"""Judges an experiment's experiment.json: the claims are listed with their figure, goal
and baseline; every one holds but those goals_not_met.txt lists as not met (each with its figure
and why: the README says so too), whichever way they come out; claims_hold says whether all held;
the command exits 0 when all held, 1 otherwise.
Usage: experiment_claims.py EXPERIMENT_JSON EXIT_CODE"""
import json
import os
import sys

path, rc = sys.argv[1], int(sys.argv[2])
not_met = set()
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "goals_not_met.txt")):
    if line.strip() and not line.startswith("#"):
        not_met.add(line.split()[0])
if not os.path.exists(path):
    sys.exit(f"FAIL: no {path} (the experiment exited {rc})")
e = json.load(open(path))
claims = e.get("claims")
if not isinstance(claims, list) or not claims:
    sys.exit(f"FAIL: {path} lists no claims")
failed, unmet = [], []
kind = e["experiment"] + ("-processes" if e.get("processes") else "")
for c in claims:
    for field in ("name", "figure", "goal", "baseline", "holds"):
        if field not in c:
            sys.exit(f"FAIL: claim {c.get('name', '?')} has no '{field}'")
    if not isinstance(c["baseline"], str) or not c["baseline"]:
        sys.exit(f"FAIL: claim {c['name']} names no baseline")
    known = f"{kind}.{c['name']}" in not_met
    print(f"{'holds' if c['holds'] else 'FAILS'}{' (a goal known not met)' if known else ''}: "
          f"{c['name']}: {c['figure']} (goal {c['goal']}; against {c['baseline']})")
    if c["holds"] is not True:
        (unmet if known else failed).append(c["name"])
if e.get("claims_hold") is not (not failed and not unmet):
    sys.exit(f"FAIL: claims_hold is {e.get('claims_hold')} with {failed + unmet or 'none'} failing")
if failed:
    sys.exit(f"FAIL: {len(failed)} of {len(claims)} claims do not hold: {', '.join(failed)}")
if rc != (1 if unmet else 0):
    sys.exit(f"FAIL: the experiment exited {rc} with {len(unmet)} claims failing")
print(f"{kind}: {len(claims)} claims, {len(claims) - len(unmet)} hold"
      + (f"; not met, as goals_not_met.txt says: {', '.join(unmet)}" if unmet else ""))
