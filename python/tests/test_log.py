"""The log from Python: a log made by chit log init, appended to, read and
proven; each answer the one the chit command gives."""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import Tuple

import pytest

import chit
from conftest import ROOT, chit as chit_cli, lines

RECEIPT = (ROOT / "examples/run-receipts/agreed-verified.json").read_bytes()
FAILING = (ROOT / "examples/run-receipts/not-unanimous-failing.json").read_bytes()


def new_log(tmp_path: pathlib.Path) -> Tuple[pathlib.Path, pathlib.Path, str]:
    key = tmp_path / "log.pem"
    code, _, err = chit_cli("keygen", "--out", str(key))
    assert code == 0, err
    store = tmp_path / "receipts.db"
    code, out, err = chit_cli(
        "log", "init", "--store", str(store), "--key", str(key), "--origin", "example.com/py"
    )
    assert code == 0, err
    vkey = next(w for w in out.decode().split() if w.startswith("example.com/py+"))
    return store, key, vkey


def test_append_read_and_prove(tmp_path: pathlib.Path) -> None:
    store, _, vkey = new_log(tmp_path)
    with chit.Log.open(store) as log:
        assert log.size == 0 and log.origin == "example.com/py"
        assert log.verifier_key == vkey
        first = log.append(RECEIPT)
        assert (first.index, first.present) == (0, False)
        assert first.address == "sha256:" + hashlib.sha256(RECEIPT).hexdigest()
        second = log.append(FAILING)
        assert (second.index, second.present) == (1, False)
        again = log.append(RECEIPT)
        assert (again.index, again.present) == (0, True)
        assert log.size == 2
        assert log.entry(1) == FAILING
        assert log.entry(first.address) == RECEIPT
        with pytest.raises(IndexError, match="no entry 5: the log holds 2"):
            log.entry(5)
        with pytest.raises(IndexError):
            log.entry(-1)
        with pytest.raises(IndexError, match="past the end of any log"):
            log.entry(2**64)
        with pytest.raises(TypeError):
            log.entry(True)
        with pytest.raises(KeyError, match="no entry has content address sha256:000"):
            log.entry("sha256:" + "0" * 64)
        # Text is read as chit log get reads it.
        assert log.entry("1") == FAILING
        with pytest.raises(chit.Error, match="sha256:abc: sha256: takes 64 hex digits"):
            log.entry("sha256:abc")
        proof = log.proof(0)
        checkpoint = log.checkpoint
    # The proof is the one chit log proof writes.
    code, out, err = chit_cli("log", "proof", "0", "--store", str(store))
    assert code == 0, err
    assert out.decode() == proof
    assert checkpoint in proof
    # Proven offline, by the log's key alone or a tlog-policy naming it.
    report = chit.verify_proof(first.proof, RECEIPT, vkey)
    assert report.valid, report.to_json()
    # Each append's proof, a repeat's too, is under the checkpoint it signed.
    assert chit.verify_proof(second.proof, FAILING, vkey).valid
    assert chit.verify_proof(again.proof, RECEIPT, vkey).valid
    assert "\n2\n" in again.proof.split("\n\n", 1)[1]
    policy = f"log {vkey}\nquorum none\n"
    assert chit.verify_proof(proof, RECEIPT, policy).valid
    # chit verify --proof says the same, byte for byte.
    (tmp_path / "r.json").write_bytes(RECEIPT)
    (tmp_path / "r.proof").write_text(proof)
    code, out, err = chit_cli(
        "verify", "--json", "--log-key", vkey, "--proof", str(tmp_path / "r.proof"), str(tmp_path / "r.json")
    )
    assert code == 0, err
    assert lines(out)[0] == chit.verify_proof(proof, RECEIPT, vkey, name=str(tmp_path / "r.json")).to_json()
    # Another entry's bytes, or another log's key, are not proven.
    wrong = chit.verify_proof(proof, FAILING, vkey)
    assert not wrong.valid and "log-inclusion" in {f.rule for f in wrong.errors}
    (tmp_path / "other").mkdir()
    _, _, other_vkey = new_log(tmp_path / "other")
    assert not chit.verify_proof(proof, RECEIPT, other_vkey).valid
    with pytest.raises(chit.Unreadable, match="not a tlog-proof"):
        chit.verify_proof("nonsense", RECEIPT, vkey)
    with pytest.raises(chit.Error):
        chit.verify_proof(proof, RECEIPT, "not a policy\n")
    with pytest.raises(chit.Error, match="the log key example.com"):
        chit.verify_proof(proof, RECEIPT, "example.com+0000+AAAA")


def test_the_log_refuses_what_its_policy_refuses(tmp_path: pathlib.Path) -> None:
    store, key, _ = new_log(tmp_path)
    log = chit.Log.open(store, key=key)
    broken = json.loads(RECEIPT)
    broken["grade"] = "passed" if broken["grade"] != "passed" else "failed"
    with pytest.raises(chit.Invalid, match="the log example.com/py refused the entry: "):
        log.append(json.dumps(broken).encode())
    with pytest.raises(chit.Unreadable, match="the entry: "):
        log.append(b'{"truncated":')
    assert log.size == 0
    log.close()
    with pytest.raises(chit.Error, match="the log is closed"):
        log.append(RECEIPT)


def test_a_log_without_its_key_cannot_be_appended_to(tmp_path: pathlib.Path) -> None:
    store, key, _ = new_log(tmp_path)
    stranger = tmp_path / "stranger.pem"
    chit_cli("keygen", "--out", str(stranger))
    log = chit.Log.open(store, key=stranger)
    with pytest.raises(chit.Error, match="this key is not the log's"):
        log.append(RECEIPT)
    # Refused, the log stays open for reading, and a second try is refused alike.
    assert log.size == 0 and log.origin == "example.com/py"
    with pytest.raises(chit.Error, match="this key is not the log's"):
        log.append(RECEIPT)
    with pytest.raises(chit.Error, match="cannot read the key"):
        chit.Log.open(store, key=tmp_path / "nope.pem").append(RECEIPT)
    with pytest.raises(chit.Error):
        chit.Log.open(tmp_path / "not-a-log-folder" / "x.db")
    # The CLI and Python append to one log in turn.
    assert chit.Log.open(store, key=key).append(RECEIPT).index == 0
    (tmp_path / "f.json").write_bytes(FAILING)
    code, _, err = chit_cli("log", "append", "--store", str(store), "--key", str(key), str(tmp_path / "f.json"))
    assert code == 0, err
    assert chit.Log.open(store).entry(1) == FAILING
