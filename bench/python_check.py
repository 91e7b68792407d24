"""Times chit for Python, for bench/python.sh.

    python_check.py all FILE TRUST N    check_all over FILE's lines (JSON Lines),
                                        the stream held to N packets; fails
                                        unless every report and check is valid
    python_check.py one FILE CALLS ROUNDS
                                        nanoseconds per chit.check(FILE's bytes),
                                        the best of ROUNDS rounds of CALLS calls
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


if __name__ == "__main__":
    if sys.argv[1] == "all":
        check_all(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        per_call(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
