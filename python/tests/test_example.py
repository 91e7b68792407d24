"""The producer's example in docs/python.md, run as written against the
lineage fixture server: what it writes passes chit verify --expect-count,
its log holds the same envelopes, and dropping a packet fails P3."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Iterator

import pytest

import chit
from conftest import ROOT, binary, chit as chit_cli

GUIDE = ROOT / "docs" / "python.md"
MARKER = "# file: producer.py\n"


def example() -> str:
    text = GUIDE.read_text()
    start = text.index(MARKER)
    return text[start : text.index("\n```", start) + 1]


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = subprocess.Popen(
        [str(binary("chit-fixture")), "--api", "openai", "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline().decode()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        server.kill()
        server.wait()


def test_the_producer_example(tmp_path: pathlib.Path, endpoint: str) -> None:
    (tmp_path / "producer.py").write_text(example())
    code, shown, err = chit_cli("keygen", "--out", str(tmp_path / "prover.pem"))
    assert code == 0, err
    public = next(l.split()[1] for l in shown.decode().splitlines() if l.startswith("treeship "))
    trust = tmp_path / "trust.toml"
    trust.write_text(
        f'[[key]]\nname = "prover"\npublic_key = "{public}"\nkinds = ["verification.packet.v1"]\n'
    )
    chit_cli("keygen", "--out", str(tmp_path / "log.pem"))
    store = tmp_path / "receipts.db"
    code, _, err = chit_cli(
        "log", "init", "--store", str(store), "--key", str(tmp_path / "log.pem"),
        "--origin", "example.com/receipts", "--trust", str(trust),
    )
    assert code == 0, err
    out = tmp_path / "packets.jsonl"
    done = subprocess.run(
        [
            sys.executable, str(tmp_path / "producer.py"), "--url", endpoint,
            "--key", str(tmp_path / "prover.pem"), "--log", str(store), "--out", str(out),
            "one", "two", "three",
        ],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert done.returncode == 0, done.stderr.decode()
    assert len(done.stdout.decode().splitlines()) == 3
    packets = out.read_bytes().splitlines()
    assert len(packets) == 3
    code, shown, err = chit_cli("verify", "--trust", str(trust), "--expect-count", "3", "--lines", str(out))
    assert code == 0, shown.decode() + err.decode()
    # The log holds the very envelopes, in order, each proven.
    log = chit.Log.open(store)
    assert log.size == 3
    for i, line in enumerate(packets):
        entry = log.entry(i)
        assert json.loads(entry) == json.loads(line)
        assert chit.verify_proof(log.proof(i), entry, log.verifier_key, trust=chit.Trust.from_path(trust)).valid
    # A packet dropped: a gap in the stream, P3.
    (tmp_path / "dropped.jsonl").write_bytes(packets[0] + b"\n" + packets[2] + b"\n")
    code, shown, _ = chit_cli(
        "verify", "--json", "--trust", str(trust), "--expect-count", "3", "--lines",
        str(tmp_path / "dropped.jsonl"),
    )
    assert code == 1
    assert '"rule":"P3"' in shown.decode()


def test_the_example_type_checks(tmp_path: pathlib.Path) -> None:
    # mypy --strict accepts the example, and so the package's types.
    (tmp_path / "producer.py").write_text(example())
    if os.environ.get("CI") == "true":
        import mypy.api as mypy
    else:
        mypy = pytest.importorskip("mypy.api")
    out, err, status = mypy.run(["--strict", "--no-incremental", str(tmp_path / "producer.py")])
    assert status == 0, out + err
