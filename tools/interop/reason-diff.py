#!/usr/bin/env python3
"""Differential test of chit's Reason verifier and authorizer against Zerker
Reason's own, over a generated corpus.

    tools/interop/reason-diff.py --reason PATH/TO/reason-verify-bundle \
        [--chit target/release/chit] [--cases 2000] [--seed 1] BUNDLE...

PATH/TO/reason-verify-bundle is a small program around Reason's library
(zerkerlabs/reason, not part of this repository) that reads a bundle on
standard input, calls `verify_authorization_bundle` and prints
{"status": "verified", "authorization_status", "request_digest",
"reasoning_result_digest"} or {"status": "error", ...} (exit 0 or 1); given
the argument `authorize`, it reads a request and prints Reason's certificate.

Each case starts from one of the BUNDLEs and makes one of two kinds:

- request: random changes to the request, most of them ones a policy
  author could make (a fact's authority, times, negation, supersession, a
  fact dropped or duplicated, a rule's condition dropped, the admitted
  authorities, the evaluation time, the mission's window, an argument's
  value), the rest any leaf of any JSON type or members added or removed;
  then both authorize it: the certificates must be equal, or both refuse.
- certificate: a random change to the certificate (any leaf, any member
  removed or added, array elements dropped or swapped), then both verify
  the bundle: both verify with the same status and digests, or both refuse.

Prints a summary and the first disagreements (each written to
bench/out/reason-diff/); exits 1 if there is any.
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys

STRINGS = ["", " ", "$x", "$", "x", "production", "staging", "ci", "human-authorized",
           "agent-proposed", "system-bound", "2026-11-30T12:00:00Z", "2026-11-30T12:00:00+00:00",
           "2026-02-30T00:00:00Z", "2026-11-30T23:59:60Z", "2099-01-01T00:00:00Z",
           "1970-01-01T00:00:00Z", "number:3", "none:", "é", "\u0000", "\u2028", "a\"b",
           "zerker.action.binding.x", "sha256:" + "0" * 64]
NUMBERS = [0, 1, -1, 3, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -(2**63), 1.5, 0.1, -0.0, 1e300, 100.0]


def leaves(v, path=()):
    """Every (path, value) below v, containers included."""
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))


def get(v, path):
    for p in path:
        v = v[p]
    return v


def put(v, path, x):
    get(v, path[:-1])[path[-1]] = x


def other_value(rng, old):
    pick = rng.random()
    if isinstance(old, bool) or pick < 0.15:
        return rng.choice([True, False, None])
    if isinstance(old, (int, float)) or pick < 0.35:
        return rng.choice(NUMBERS)
    if pick < 0.45:
        return rng.choice([[], {}, ["x"], {"k": 1}])
    return rng.choice(STRINGS)


def mutate(rng, doc, root=()):
    """One random change below `root` in doc (in place)."""
    try:
        spots = [p for p, _ in leaves(get(doc, root), root) if p != root]
    except (KeyError, IndexError, TypeError):
        return  # an earlier change took `root` away
    if not spots:
        return
    path = rng.choice(spots)
    parent = get(doc, path[:-1])
    target = get(doc, path)
    r = rng.random()
    if r < 0.55:
        put(doc, path, other_value(rng, target))
    elif r < 0.7 and isinstance(parent, dict):
        del parent[path[-1]]
    elif r < 0.8 and isinstance(parent, list):
        if len(parent) > 1 and rng.random() < 0.5:
            i, j = rng.sample(range(len(parent)), 2)
            parent[i], parent[j] = parent[j], parent[i]
        else:
            parent.append(copy.deepcopy(rng.choice(parent)))
    elif isinstance(target, dict):
        target[rng.choice(["extra", "negated", "valid_until", "supersedes", "value"])] = other_value(rng, None)
    else:
        put(doc, path, other_value(rng, target))


TIMES = ["2026-08-14T11:00:00Z", "2026-08-14T12:00:00Z", "2026-08-14T12:00:01Z",
         "2026-11-30T08:00:00Z", "2026-11-30T12:00:00Z", "2026-11-30T18:00:00Z",
         "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", "2025-01-01T00:00:00Z"]


def meaningful(rng, req):
    """One change a policy author could make (the request stays readable,
    so the reasoning itself is what both sides must agree on)."""
    policy = req["policy"]
    facts = policy.setdefault("facts", [])
    classes = sorted(policy["authority"]["classes"])
    r = rng.randrange(11)
    if r == 0 and facts:
        f = rng.choice(facts)
        f["negated"] = not f.get("negated", False)
    elif r == 1 and facts:
        rng.choice(facts)["authority"] = rng.choice(classes)
    elif r == 2 and facts:
        facts.remove(rng.choice(facts))
    elif r == 3:
        policy["evaluation_time"] = rng.choice(TIMES)
    elif r == 4 and facts:
        f = rng.choice(facts)
        field = rng.choice(["observed_at", "valid_from", "valid_until"])
        if field != "observed_at" and rng.random() < 0.3:
            f.pop(field, None)
        else:
            f[field] = rng.choice(TIMES)
    elif r == 5 and len(facts) > 1:
        a, b = rng.sample(facts, 2)
        a["supersedes"] = [b["id"]]
    elif r == 6 and facts:
        f = copy.deepcopy(rng.choice(facts))
        f["id"] = f["id"] + "_copy"
        f["observed_at"] = rng.choice(TIMES)
        f.pop("supersedes", None)
        facts.append(f)
    elif r == 7 and policy.get("rules"):
        rule = rng.choice(policy["rules"])
        if len(rule["when"]) > 1:
            rule["when"].pop(rng.randrange(len(rule["when"])))
    elif r == 8:
        key = rng.choice(["default_admit"] + [f"predicate_admit/{p}" for p in policy["authority"].get("predicate_admit", {})])
        target = policy["authority"]
        for part in key.split("/"):
            target = target[part] if part in target else target
        if isinstance(target, list):
            c = rng.choice(classes)
            if c in target:
                target.remove(c)
            else:
                target.append(c)
    elif r == 9:
        args = req["action"].setdefault("arguments", {})
        if args:
            k = rng.choice(sorted(args))
            args[k] = rng.choice([args[k], "staging", 3, 2**53 + 1, True, None, [1, "a"], {"b": 1, "a": 2}])
    else:
        m = req["mission"]
        m["valid_until" if rng.random() < 0.5 else "issued_at"] = rng.choice(TIMES)


def run(cmd, data):
    p = subprocess.run(cmd, input=data, capture_output=True)
    return p.returncode, p.stdout


def reason_verify(reason, bundle_bytes):
    code, out = run([reason], bundle_bytes)
    v = json.loads(out)
    if v.get("status") == "verified":
        return ("verified", v["authorization_status"], v["request_digest"], v["reasoning_result_digest"])
    return ("error",)


# chit refuses, on purpose, numbers whose double depends on the JSON parser
# (see crates/chit-core/src/kinds/reason/value.rs); Reason reads them with
# its own parser. Such a refusal is fail-closed, counted apart.
RISKY = "depends on the JSON parser"


def chit_verify(chit, bundle_bytes):
    code, out = run([chit, "reason", "--format", "json", "verify-authorization-bundle", "-"], bundle_bytes)
    v = json.loads(out)
    if v.get("status") == "verified":
        return ("verified", v["authorization_status"], v["request_digest"], v["reasoning_result_digest"])
    return ("error", "risky") if RISKY in v.get("error", "") else ("error",)


def reason_authorize(reason, req_bytes):
    code, out = run([reason, "authorize"], req_bytes)
    v = json.loads(out)
    return v if code == 0 else "error"


def chit_authorize(chit, req_bytes):
    code, out = run([chit, "reason", "--format", "json", "authorize", "-"], req_bytes)
    v = json.loads(out)
    if v.get("schema") == "zerker.reason.error.v1":
        return "risky" if RISKY in v.get("error", "") else "error"
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reason", required=True)
    ap.add_argument("--chit", default="target/release/chit")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("bundles", nargs="+")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    seeds = [json.load(open(p)) for p in a.bundles]
    outdir = os.path.join("bench", "out", "reason-diff")
    os.makedirs(outdir, exist_ok=True)
    counts = {"request": [0, 0, 0, 0], "certificate": [0, 0, 0, 0]}
    outcomes = {}
    bad = 0
    for n in range(a.cases):
        seed = copy.deepcopy(rng.choice(seeds))
        kind = "request" if n % 2 == 0 else "certificate"
        if kind == "request":
            req = seed["request"]
            for _ in range(rng.choice([1, 1, 2, 3])):
                if rng.random() < 0.7:
                    try:
                        meaningful(rng, req)
                    except (KeyError, TypeError, AttributeError, ValueError, IndexError):
                        pass  # an earlier change took away what this one edits
                else:
                    mutate(rng, req, ("policy",) if rng.random() < 0.7 else ())
            data = json.dumps(req).encode()
            ours, theirs = chit_authorize(a.chit, data), reason_authorize(a.reason, data)
            risky = ours == "risky"
            same = ours == theirs or (risky and theirs == "error")
            passed_only_by_chit = theirs == "error" and ours not in ("error", "risky")
            label = "error" if theirs == "error" else theirs["status"]
        else:
            for _ in range(rng.choice([1, 1, 2])):
                mutate(rng, seed, ("certificate",))
            data = json.dumps(seed).encode()
            ours, theirs = chit_verify(a.chit, data), reason_verify(a.reason, data)
            risky = ours == ("error", "risky")
            same = ours == theirs or (risky and theirs == ("error",))
            passed_only_by_chit = theirs[0] == "error" and ours[0] == "verified"
            label = theirs[0] if theirs[0] == "error" else theirs[1]
        counts[kind][0] += 1
        outcomes[(kind, label)] = outcomes.get((kind, label), 0) + 1
        if risky and not same:
            counts[kind][2] += 1
        elif not same:
            counts[kind][3] += passed_only_by_chit
            counts[kind][1] += 1
            bad += 1
            path = os.path.join(outdir, f"case-{n}-{kind}.json")
            with open(path, "wb") as f:
                f.write(data)
            if bad <= 10:
                print(f"DISAGREE case {n} ({kind}): chit {str(ours)[:200]} / reason {str(theirs)[:200]} -> {path}")
    for kind, (total, diff, risky, open_) in counts.items():
        print(f"{kind}: {total} cases, {diff} disagreements ({open_} passed by chit alone), "
              f"{risky} refused by chit alone for a parser-dependent number")
    for (kind, label), c in sorted(outcomes.items()):
        print(f"  {kind:12} reason says {label:22} {c}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
