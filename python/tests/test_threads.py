"""check_all and check from several Python threads at once give what they
give alone: the GIL is released while the core works, and nothing is
shared between calls."""

from __future__ import annotations

import json
import threading
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
