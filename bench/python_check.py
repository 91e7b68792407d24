"""Times chit for Python, for bench/python.sh.

    python_check.py all FILE TRUST N    check_all over FILE's lines (JSON Lines),
                                        the stream held to N packets; fails
                                        unless every report and check is valid
    python_check.py one FILE CALLS ROUNDS
                                        nanoseconds per chit.check(FILE's bytes),
                                        the best of ROUNDS rounds of CALLS calls
    python_check.py append STORE KEY FILE N
                                        Log.append of FILE's first N lines, one
                                        at a time, to the log at STORE: wall and
                                        CPU microseconds an append
"""

import sys
import time

import chit


def check_all(path: str, trust_path: str, n: int) -> None:
    with open(path, "rb") as f:
        lines = f.read().splitlines()
    reports = chit.check_all(lines, trust=chit.Trust.from_path(trust_path), expect_count=n)
    if len(reports) != n or not reports.valid:
        sys.exit("not every envelope and stream is valid")


def per_call(path: str, calls: int, rounds: int) -> None:
    with open(path, "rb") as f:
        data = f.read()
    check = chit.check
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            check(data)
        best = min(best, (time.perf_counter_ns() - start) / calls)
    print(f"{best:.0f}")


def append(store: str, key: str, path: str, n: int) -> None:
    with open(path, "rb") as f:
        lines = f.read().splitlines()[:n]
    log = chit.Log.open(store, key=key)
    cpu, wall = time.process_time(), time.perf_counter()
    for line in lines:
        log.append(line)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{wall / len(lines) * 1e6:.0f} {cpu / len(lines) * 1e6:.0f}")


if __name__ == "__main__":
    if sys.argv[1] == "all":
        check_all(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "append":
        append(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        per_call(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
