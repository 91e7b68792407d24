"""What the tests share: the chit binaries they compare against.

The binaries are the workspace's own (``cargo build`` puts them in
``target/debug``; ``CHIT_BIN_DIR`` names another folder). Under CI=true a
missing binary fails the tests that need it, never skips them.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Dict, List, Optional, Sequence, Tuple, Union

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _bin_dir() -> pathlib.Path:
    given = os.environ.get("CHIT_BIN_DIR")
    if given:
        return pathlib.Path(given)
    target = os.environ.get("CARGO_TARGET_DIR")
    base = ROOT / target if target else ROOT / "target"
    return base / "debug"


def binary(name: str) -> pathlib.Path:
    path = _bin_dir() / name
    if not path.is_file():
        message = f"{path} is missing: build it with cargo build --bin {name} (or set CHIT_BIN_DIR)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def run(name: str, args: Sequence[str], stdin: bytes = b"") -> Tuple[int, bytes, bytes]:
    """Runs one of the workspace's binaries: its exit status, stdout and stderr."""
    done = subprocess.run(
        [str(binary(name)), *args],
        input=stdin,
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=600,
    )
    assert done.returncode != 101, f"{name} panicked: {done.stderr.decode(errors='replace')}"
    return done.returncode, done.stdout, done.stderr


def chit(*args: str, stdin: bytes = b"") -> Tuple[int, bytes, bytes]:
    return run("chit", args, stdin)


def lines(out: bytes) -> List[str]:
    return out.decode().splitlines()


def packet(stream_id: str, seq: int, previous: Optional[str]) -> Dict[str, Union[str, int, None]]:
    """A verification.packet.v1 payload: packet `seq` of a stream."""
    return {
        "schema": "verification.packet.v1",
        "stream_id": stream_id,
        "packet_id": f"{stream_id}-{seq}",
        "sequence": seq,
        "prev_packet_id": previous,
        "produced_at": "2026-12-01T00:00:00Z",
        "reproducibility": "bit_exact",
        "model_digest": "sha256:" + "a" * 64,
        "input_digest": "sha256:" + f"{seq:064x}",
        "output_digest": "sha256:" + "b" * 64,
        "token_count": 1,
    }
