"""check_all and check from several Python threads at once give what they
give alone: the GIL is released while the core works, and nothing is
shared between calls."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import threading
import time
from typing import Dict, List

import chit
from conftest import packet as make_packet


def stream(key: chit.Key, stream_id: str, n: int) -> List[bytes]:
    out = []
    previous = None
    for seq in range(n):
        packet = make_packet(stream_id, seq, previous)
        previous = str(packet["packet_id"])
        out.append(key.sign("verification.packet.v1", json.dumps(packet).encode()))
    return out


def test_check_all_from_several_threads() -> None:
    key = chit.Key.generate()
    trust = chit.Trust(f'[[key]]\nname = "k"\npublic_key = "{key.treeship}"\n')
    inputs = {f"s{t}": stream(key, f"s{t}", 400) for t in range(6)}
    # Thread 3 checks a stream with a gap.
    del inputs["s3"][100]
    alone = {
        name: [r.to_json() for r in chit.check_all(data, trust=trust)]
        + [c.to_json() for c in chit.check_all(data, trust=trust).across]
        for name, data in inputs.items()
    }
    results: Dict[str, List[List[str]]] = {name: [] for name in inputs}
    failures: List[BaseException] = []

    def work(name: str) -> None:
        try:
            for _ in range(3):
                reports = chit.check_all(inputs[name], trust=trust)
                results[name].append(
                    [r.to_json() for r in reports] + [c.to_json() for c in reports.across]
                )
                for data in inputs[name][:20]:
                    assert chit.check(data, trust=trust).valid
        except BaseException as e:  # a failure in a thread fails the test
            failures.append(e)

    threads = [threading.Thread(target=work, args=(name,)) for name in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    for name, runs in results.items():
        assert len(runs) == 3
        for run in runs:
            assert run == alone[name]
    assert any('"rule":"P3"' in line for line in alone["s3"])
    assert all('"valid":true' in line for line in alone["s0"])


def test_check_all_lets_other_threads_run() -> None:
    # While check_all works in one thread, another runs Python: the
    # longest pause between its steps is a small part of the call (held
    # for the whole call, the GIL would make it the whole call).
    key = chit.Key.generate()
    trust = chit.Trust(f'[[key]]\nname = "k"\npublic_key = "{key.treeship}"\n')
    inputs = stream(key, "long", 400) * 20
    took: List[float] = []

    def work() -> None:
        start = time.perf_counter()
        chit.check_all(inputs, trust=trust)
        took.append(time.perf_counter() - start)

    worker = threading.Thread(target=work)
    steps = [time.perf_counter()]
    worker.start()
    while worker.is_alive():
        steps.append(time.perf_counter())
    worker.join()
    longest = max(b - a for a, b in zip(steps, steps[1:]))
    assert took[0] > 0.2, f"the call took {took[0]:.3f} s: too short to tell"
    assert longest < took[0] / 2, f"Python paused {longest:.3f} s of a {took[0]:.3f} s call"


def test_a_log_shared_by_threads_never_deadlocks(tmp_path: pathlib.Path) -> None:
    # One thread appends what the log refuses (each refusal an exception)
    # while another reads the log: in a child interpreter with a deadline,
    # so that a deadlock fails the test instead of hanging it.
    from conftest import chit as chit_cli

    key = tmp_path / "log.pem"
    chit_cli("keygen", "--out", str(key))
    store = tmp_path / "log.db"
    code, _, err = chit_cli("log", "init", "--store", str(store), "--key", str(key), "--origin", "example.com/t")
    assert code == 0, err
    script = f"""
import chit, threading
log = chit.Log.open({str(store)!r}, key={str(key)!r})
def refused():
    for _ in range(300):
        try:
            log.append(b'{{"not": "a receipt"}}')
        except chit.Invalid:
            pass
t = threading.Thread(target=refused)
t.start()
reads = 0
while t.is_alive():
    assert log.origin == "example.com/t" and log.size == 0 and repr(log) == 'Log("example.com/t")'
    reads += 1
t.join()
log.close()
assert repr(log) == "Log(closed)"
print(reads)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert int(done.stdout) > 0
