"""Hostile inputs: each gets the status chit verify gives it, in the same
bytes, and none raises (a panic would surface as pyo3's PanicException, a
BaseException these tests do not catch) or crashes the interpreter."""

from __future__ import annotations

import pathlib
import random
import subprocess
import sys
from typing import List, Tuple

import pytest

import chit
from conftest import ROOT, chit as chit_cli, lines

EXAMPLES = ROOT / "examples"

HOSTILE: List[Tuple[str, bytes, str]] = [
    ("empty", b"", "unreadable"),
    ("truncated", b'{"receiptVersion": "0.1", "seats": [', "unreadable"),
    ("deep", b"[" * 200_000 + b"]" * 200_000, "unreadable"),
    ("deep-object", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "unreadable"),
    ("duplicate-keys", b'{"a": 1, "a": 2}', "unreadable"),
    ("bad-utf8", b'{"a": "\xff\xfe"}', "unreadable"),
    ("overlong-utf8", b'{"a": "\xc0\xaf"}', "unreadable"),
    ("lone-surrogate", b'{"a": "\\ud800"}', "unreadable"),
    ("nul", b'{"a": 1}\x00', "unreadable"),
    ("bom", b'\xef\xbb\xbf{"a": 1}', "invalid"),
    ("huge-number", b'{"a": 1e999999}', "unreadable"),
    ("not-json", b"hello", "unreadable"),
    ("unknown-kind", b'{"a": 1}', "invalid"),
    ("envelope-garbage", b'{"payload": "!!!", "payloadType": "x", "signatures": []}', "invalid"),
    ("many-keys", b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(20_000)) + b"}", "unreadable"),
]


@pytest.mark.parametrize("name,data,status", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_input_gets_its_status(tmp_path: pathlib.Path, name: str, data: bytes, status: str) -> None:
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    report = chit.check(data, name=str(path))
    assert report.status == status
    _, out, _ = chit_cli("verify", "--json", str(path))
    assert report.to_json() == lines(out)[0]
    assert all(f.message and "\n" not in f.message for f in report.errors)


def test_past_the_size_limit_says_how_to_raise_it() -> None:
    data = b'{"a": "' + b"x" * (64 * 1024 * 1024) + b'"}'
    report = chit.check(data)
    assert report.status == "unreadable"
    assert "(raise it with --max-size)" in report.errors[0].message


def mutations(seed: int, n: int) -> List[bytes]:
    rng = random.Random(seed)
    sources = [
        (EXAMPLES / p).read_bytes()
        for p in [
            "run-receipts/agreed-verified.json",
            "packets/p0.env.json",
            "lattice/packet.json",
            "lineage/receipt.json",
            "reason/certificate.json",
        ]
    ]
    out = []
    for _ in range(n):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            choice = rng.random()
            if choice < 0.4:
                data[at] = rng.randrange(256)
            elif choice < 0.6:
                del data[at : at + rng.randint(1, 20)]
            elif choice < 0.8:
                data[at:at] = data[rng.randrange(len(data)) :][: rng.randint(1, 40)]
            else:
                del data[at:]
        out.append(bytes(data))
    return out


def test_mutated_receipts_match_the_binary(tmp_path: pathlib.Path) -> None:
    files = []
    for i, data in enumerate(mutations(44, 1500)):
        path = tmp_path / f"m-{i:05}.json"
        path.write_bytes(data)
        files.append((str(path), data))
    reports = chit.check_all(files)
    _, out, _ = chit_cli("verify", "--json", str(tmp_path))
    ours = [r.to_json() for r in reports] + [c.to_json() for c in reports.across]
    assert ours == lines(out)
    statuses = {r.status for r in reports}
    assert {"unreadable", "invalid"} <= statuses


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError):
        chit.check("text, not bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        chit.check_all([b"{}", 3])  # type: ignore[list-item]
    with pytest.raises(chit.Error, match="unknown kind"):
        chit.check(b"{}", kind="no-such-kind")
    with pytest.raises(chit.Error, match="threshold"):
        chit.check(b"{}", threshold=0)
    with pytest.raises(chit.Error, match="cannot read the request"):
        chit.check(b"{}", request=b"{")


def test_the_interpreter_survives_everything() -> None:
    # In a child interpreter, so that a crash shows as its exit status.
    script = (
        "import chit, random\n"
        "rng = random.Random(7)\n"
        "for i in range(3000):\n"
        "    data = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))\n"
        "    chit.check(data)\n"
        "    chit.check(b'{\"payload\":' + data + b'}')\n"
        "chit.check_all([bytes([i % 256]) * i for i in range(2000)])\n"
        "print('done')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.strip() == b"done"
