"""Signing round trips with the chit command, both ways, and the document
tools (canon, digest, seal) byte for byte against theirs."""

from __future__ import annotations

import json
import os
import pathlib
import warnings

import pytest

import chit
from conftest import ROOT, chit as chit_cli

EXAMPLES = ROOT / "examples"

PACKET = {
    "schema": "verification.packet.v1",
    "stream_id": "s",
    "packet_id": "p0",
    "sequence": 0,
    "prev_packet_id": None,
    "produced_at": "2026-12-01T00:00:00Z",
    "reproducibility": "bit_exact",
    "model_digest": "sha256:" + "a" * 64,
    "input_digest": "sha256:" + "b" * 64,
    "output_digest": "sha256:" + "c" * 64,
    "token_count": 3,
}


def trust_for(key: chit.Key, path: pathlib.Path) -> pathlib.Path:
    path.write_text(
        f'[[key]]\nname = "k"\npublic_key = "{key.treeship}"\n'
        'kinds = ["verification.packet.v1"]\n'
    )
    return path


def test_python_signs_and_chit_verifies(tmp_path: pathlib.Path) -> None:
    key = chit.Key.generate()
    envelope = key.sign("verification.packet.v1", json.dumps(PACKET).encode())
    (tmp_path / "p.env.json").write_bytes(envelope)
    trust = trust_for(key, tmp_path / "trust.toml")
    code, out, err = chit_cli("verify", "--json", "--trust", str(trust), str(tmp_path / "p.env.json"))
    assert code == 0, err
    assert json.loads(out.splitlines()[0])["status"] == "valid"
    report = chit.check(envelope, trust=chit.Trust.from_path(trust))
    assert report.valid and report.kind == "verification.packet.v1"
    assert report.artifact_id is not None and report.artifact_id.startswith("art_")
    # Another key's trust file does not pass it.
    other = trust_for(chit.Key.generate(), tmp_path / "other.toml")
    code, _, _ = chit_cli("verify", "--trust", str(other), str(tmp_path / "p.env.json"))
    assert code == 1
    assert not chit.check(envelope, trust=chit.Trust.from_path(other)).valid


def test_chit_signs_and_python_verifies(tmp_path: pathlib.Path) -> None:
    pem = tmp_path / "k.pem"
    code, out, err = chit_cli("keygen", "--out", str(pem))
    assert code == 0, err
    (tmp_path / "p.json").write_text(json.dumps(PACKET))
    code, envelope, err = chit_cli(
        "sign", "--key", str(pem), "--kind", "verification.packet.v1", str(tmp_path / "p.json")
    )
    assert code == 0, err
    key = chit.Key.from_path(pem)
    assert key.treeship in out.decode() and key.did in out.decode()
    trust = chit.Trust.from_path(trust_for(key, tmp_path / "trust.toml"))
    assert chit.check(envelope, trust=trust).status == "valid"
    # The same key signs in Python what chit verifies under that trust.
    again = key.sign("verification.packet.v1", json.dumps(PACKET).encode(), subject=None)
    (tmp_path / "again.json").write_bytes(again)
    code, _, err = chit_cli("verify", "--trust", str(tmp_path / "trust.toml"), str(tmp_path / "again.json"))
    assert code == 0, err
    # A key written by Python is read by chit.
    (tmp_path / "py.pem").write_text(chit.Key.generate().to_pem())
    os.chmod(tmp_path / "py.pem", 0o600)
    code, _, err = chit_cli(
        "sign", "--key", str(tmp_path / "py.pem"), "--kind", "verification.packet.v1",
        str(tmp_path / "p.json"),
    )
    assert code == 0, err


def test_a_payload_chit_would_reject_is_not_signed() -> None:
    key = chit.Key.generate()
    broken = dict(PACKET, sequence=-1)
    with pytest.raises(chit.Invalid, match="refusing to sign the payload: as a verification.packet.v1 it breaks"):
        key.sign("verification.packet.v1", json.dumps(broken).encode())
    with pytest.raises(chit.Invalid, match="a payload must be a JSON object"):
        key.sign("verification.packet.v1", b"[1]")
    with pytest.raises(chit.Unreadable):
        key.sign("verification.packet.v1", b'{"a":')
    with pytest.raises(chit.Error, match="is not an art id"):
        key.sign("verification.packet.v1", json.dumps(PACKET).encode(), subject="nope")


def test_key_and_trust_errors_say_what_chit_says(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "missing.pem"
    code, _, err = chit_cli("sign", "--key", str(missing), "--kind", "x", str(tmp_path))
    assert code == 2
    with pytest.raises(chit.Error) as raised:
        chit.Key.from_path(missing)
    assert err.decode().strip() == f"chit: {raised.value}"
    (tmp_path / "bad.toml").write_text("[[key]]\nname = 1\n")
    code, _, err = chit_cli("verify", "--trust", str(tmp_path / "bad.toml"), str(EXAMPLES / "packets"))
    assert code == 2
    with pytest.raises(chit.Error) as raised:
        chit.Trust.from_path(tmp_path / "bad.toml")
    assert err.decode().strip() == f"chit: {raised.value}"
    with pytest.raises(chit.Error):
        chit.Trust("not toml [")
    with pytest.raises(chit.Error):
        chit.Key.from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")


def test_an_open_key_file_warns(tmp_path: pathlib.Path) -> None:
    pem = tmp_path / "k.pem"
    pem.write_text(chit.Key.generate().to_pem())
    os.chmod(pem, 0o644)
    with pytest.warns(UserWarning, match="open to others"):
        chit.Key.from_path(pem)
    os.chmod(pem, 0o600)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chit.Key.from_path(pem)


@pytest.mark.parametrize(
    "path",
    [
        "run-receipts/agreed-verified.json",
        "run-receipts/not-unanimous-failing.json",
        "lattice/packet.json",
        "lineage/receipt.json",
    ],
)
def test_canon_as_chit_canon(path: str) -> None:
    data = (EXAMPLES / path).read_bytes()
    code, out, err = chit_cli("canon", str(EXAMPLES / path))
    assert code == 0, err
    assert chit.canon(data) == out
    if path.startswith("lattice"):
        code, out, err = chit_cli("canon", "--profile", "lattice", str(EXAMPLES / path))
        assert code == 0, err
        assert chit.canon(data, profile="lattice") == out


def test_digest_and_seal_as_chit_does(tmp_path: pathlib.Path) -> None:
    receipt = (EXAMPLES / "run-receipts/agreed-verified.json").read_bytes()
    code, out, _ = chit_cli("digest", str(EXAMPLES / "run-receipts/agreed-verified.json"))
    assert code == 0
    assert chit.digest(receipt) == {"digest": out.decode().strip()}
    lattice = EXAMPLES / "lattice/unsealed.json"
    code, out, _ = chit_cli("digest", str(lattice))
    assert code == 0
    shown = dict(line.split() for line in out.decode().splitlines())
    assert chit.digest(lattice.read_bytes()) == shown
    # Sealing: a receipt whose digest is wrong, mended as chit seal mends it.
    stale = receipt.replace(chit.digest(receipt)["digest"].encode(), b"sha256:" + b"0" * 64)
    assert stale != receipt and not chit.check(stale).valid
    (tmp_path / "stale.json").write_bytes(stale)
    code, sealed, err = chit_cli("seal", "--out", "-", str(tmp_path / "stale.json"))
    assert code == 0, err
    assert chit.seal(stale) == sealed == receipt
    code, sealed, err = chit_cli("seal", "--out", "-", str(lattice))
    assert code == 0, err
    assert chit.seal(lattice.read_bytes()) == sealed
    with pytest.raises(chit.Error, match="not a receipt chit recognises"):
        chit.seal(b"{}")
    with pytest.raises(chit.Unreadable):
        chit.digest(b"\xff")
    with pytest.raises(chit.Error, match="unknown kind 'nope'"):
        chit.digest(receipt, kind="nope")


def test_an_unknown_kind_is_signed_with_a_warning() -> None:
    key = chit.Key.generate()
    with pytest.warns(UserWarning, match="chit does not know the kind 'verification.packet.V1'"):
        key.sign("verification.packet.V1", b'{"a": 1}')


def test_files_that_could_block_are_refused(tmp_path: pathlib.Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(chit.Error, match="is not a regular file"):
        chit.Trust.from_path(fifo)
    with pytest.raises(chit.Error, match="is not a regular file"):
        chit.Key.from_path(fifo)
    with pytest.raises(chit.Error, match="is a folder"):
        chit.Key.from_path(tmp_path)


def test_digest_says_what_chit_digest_says(tmp_path: pathlib.Path) -> None:
    receipt = EXAMPLES / "run-receipts/agreed-verified.json"
    code, _, err = chit_cli("digest", "--kind", "verification.packet.v1", str(receipt))
    assert code == 2
    with pytest.raises(chit.Error) as raised:
        chit.digest(receipt.read_bytes(), kind="verification.packet.v1")
    assert err.decode().strip() == f"chit: {raised.value}"
    assert chit.check_all([]).valid is False
