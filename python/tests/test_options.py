"""check's keywords are chit verify's flags: each gives the line the flag
gives, on the shipped examples that need it."""

from __future__ import annotations

import pathlib
from typing import Dict, List

import pytest

import chit
from conftest import ROOT, chit as chit_cli, lines

EXAMPLES = ROOT / "examples"
REASON = EXAMPLES / "reason"
LINEAGE = EXAMPLES / "lineage"

CASES: List[Dict[str, object]] = [
    {"file": REASON / "certificate.json", "flags": [], "keywords": {}},
    {
        "file": REASON / "certificate.json",
        "flags": ["--request", str(REASON / "request.json"), "--call", str(REASON / "call.json")],
        "keywords": {"request": (REASON / "request.json").read_bytes(), "call": (REASON / "call.json").read_bytes()},
    },
    {
        "file": REASON / "certificate.json",
        "flags": ["--request", str(REASON / "request.json"), "--require-authorized"],
        "keywords": {"request": (REASON / "request.json").read_bytes(), "require_authorized": True},
    },
    {
        "file": EXAMPLES / "run-receipts/agreed-verified.json",
        "flags": ["--require-authorized"],
        "keywords": {"require_authorized": True},
    },
    {"file": LINEAGE / "receipt.json", "flags": [], "keywords": {}},
    {
        "file": LINEAGE / "receipt.json",
        "flags": ["--transcript", str(LINEAGE / "transcript.jsonl")],
        "keywords": {"transcript": (LINEAGE / "transcript.jsonl").read_bytes()},
    },
    {
        "file": LINEAGE / "receipt.json",
        "flags": ["--trust", str(LINEAGE / "trust.toml"), "--transcript", str(LINEAGE / "transcript.jsonl")],
        "keywords": {
            "trust": chit.Trust.from_path(LINEAGE / "trust.toml"),
            "transcript": (LINEAGE / "transcript.jsonl").read_bytes(),
        },
    },
    {
        "file": LINEAGE / "receipt.json",
        "flags": ["--transcript", "SHORT"],
        "keywords": {"transcript": b"\n".join((LINEAGE / "transcript.jsonl").read_bytes().splitlines()[:-1])},
    },
    {
        "file": EXAMPLES / "packets/p0.env.json",
        "flags": ["--trust", str(EXAMPLES / "packets/trust.toml"), "--threshold", "2"],
        "keywords": {"trust": chit.Trust.from_path(EXAMPLES / "packets/trust.toml"), "threshold": 2},
    },
    {
        "file": EXAMPLES / "run-receipts/agreed-verified.json",
        "flags": ["--trust", str(EXAMPLES / "packets/trust.toml"), "--accept-unsigned"],
        "keywords": {"trust": chit.Trust.from_path(EXAMPLES / "packets/trust.toml"), "accept_unsigned": True},
    },
    {
        "file": EXAMPLES / "lattice/packet.json",
        "flags": ["--kind", "run-receipt"],
        "keywords": {"kind": "run-receipt"},
    },
]


def case_id(case: Dict[str, object]) -> str:
    flags = case["flags"]
    assert isinstance(flags, list)
    return " ".join(str(f).rsplit("/", 1)[-1] for f in flags) or "plain"


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_keywords_are_flags(case: Dict[str, object], tmp_path: pathlib.Path) -> None:
    path = case["file"]
    flags = case["flags"]
    keywords = case["keywords"]
    assert isinstance(flags, list) and isinstance(keywords, dict)
    if "SHORT" in flags:
        # A transcript with its last line gone, from a file for the binary.
        short = tmp_path / "short.jsonl"
        short.write_bytes(keywords["transcript"])
        flags = [str(short) if f == "SHORT" else f for f in flags]
    _, out, err = chit_cli("verify", "--json", *flags, str(path))
    expected = lines(out)
    assert expected, err
    data = ROOT.joinpath(str(path)).read_bytes()
    report = chit.check(data, name=str(path), **keywords)
    assert report.to_json() == expected[0]
