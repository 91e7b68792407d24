"""One door: the same inputs through chit.check / chit.check_all and
through ``chit verify --json`` give byte-identical JSON lines, over the
corpora the binary's own one-API test uses: the run-receipt parity corpus
(8,000 cases), the Lattice parity cases (6,000) and a signed packet stream
with a gap, a forgery, a stranger's key and envelopes filed under art ids."""

from __future__ import annotations

import json
import pathlib
from typing import List, Tuple

import chit
from conftest import packet as make_packet, chit as chit_cli, lines, run


def write_cases(folder: pathlib.Path, texts: List[bytes]) -> List[Tuple[str, bytes]]:
    files = []
    for i, text in enumerate(texts):
        path = folder / f"case-{i:05}.json"
        path.write_bytes(text)
        files.append((str(path), text))
    return files


def corpus(kind: str, n: int) -> List[bytes]:
    code, out, err = run("chit-corpus", [kind, "2026", str(n)])
    assert code == 0, err
    return [json.loads(line)["text"].encode() for line in out.splitlines()]


def python_lines(files: List[Tuple[str, bytes]], **options: object) -> List[str]:
    reports = chit.check_all(files, **options)  # type: ignore[arg-type]
    return [r.to_json() for r in reports] + [c.to_json() for c in reports.across]


def assert_same(python: List[str], binary: List[str], cases: int) -> None:
    assert len(python) >= cases
    for i, (p, b) in enumerate(zip(python, binary)):
        assert p == b, f"line {i + 1} differs"
    assert len(python) == len(binary)


def test_the_run_receipt_corpus(tmp_path: pathlib.Path) -> None:
    files = write_cases(tmp_path, corpus("parity", 8000))
    code, out, _ = chit_cli("verify", "--json", str(tmp_path))
    binary = lines(out)
    assert_same(python_lines(files), binary, len(files))
    # One check at a time gives the same lines as all at once.
    one = [chit.check(text, name=name).to_json() for name, text in files]
    assert one == binary[: len(files)]
    text = "\n".join(binary)
    assert '"valid":true' in text and '"valid":false' in text
    assert code == 1


def test_the_lattice_cases(tmp_path: pathlib.Path) -> None:
    files = write_cases(tmp_path, corpus("lattice-cases", 6000))
    code, out, _ = chit_cli("verify", "--json", str(tmp_path))
    binary = lines(out)
    assert_same(python_lines(files), binary, len(files))
    text = "\n".join(binary)
    # Unreadable cases, invalid and valid ones, and rebinds across packets.
    assert '"rule":"read"' in text
    assert '"valid":true' in text and '"valid":false' in text
    assert '{"rebind":' in text
    assert code == 2


def signed_stream(folder: pathlib.Path) -> Tuple[List[Tuple[str, bytes]], chit.Key]:
    key = chit.Key.generate()
    stranger = chit.Key.generate()
    texts: List[bytes] = []
    previous = None
    for seq in range(300):
        packet = make_packet("s1", seq, previous)
        previous = str(packet["packet_id"])
        if seq == 17:
            continue  # a gap: P3
        signer = stranger if seq == 40 else key
        text = bytearray(signer.sign("verification.packet.v1", json.dumps(packet).encode()))
        if seq == 5:
            # A payload byte changed after signing.
            opening = text.index(b'"', text.index(b":", text.index(b'"payload"')))
            at = opening + 4
            text[at] = ord("B") if text[at] != ord("B") else ord("A")
        texts.append(bytes(text))
    files = write_cases(folder, texts)
    # Filed under its art id, and under a wrong one.
    for i in range(2):
        name, data = files[i]
        art = chit.check(data).artifact_id if i == 0 else "art_" + "0" * 32
        named = folder / f"case-{i:05}__{art}.json"
        pathlib.Path(name).rename(named)
        files[i] = (str(named), data)
    return sorted(files), key


def test_a_signed_stream(tmp_path: pathlib.Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    files, key = signed_stream(inputs)
    trust_file = tmp_path / "trust.toml"
    trust_file.write_text(f'[[key]]\nname = "me"\npublic_key = "{key.treeship}"\n')
    trust = chit.Trust.from_path(trust_file)
    code, out, _ = chit_cli("verify", "--json", "--trust", str(trust_file), str(inputs))
    binary = lines(out)
    assert_same(python_lines(files, trust=trust), binary, len(files))
    text = "\n".join(binary)
    for rule in ["signature", "art", "P3"]:
        assert f'"rule":"{rule}"' in text, f"{rule} never fires"
    assert '{"stream":"s1"' in text
    assert code == 1
    # --expect-count too.
    code, out, _ = chit_cli(
        "verify", "--json", "--expect-count", "300", "--trust", str(trust_file), str(inputs)
    )
    assert_same(python_lines(files, trust=trust, expect_count=300), lines(out), len(files))
