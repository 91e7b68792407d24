"""chit: receipts of AI work, checked.

The verdicts, signing and receipt log of the ``chit`` command, natively:
every verdict comes from chit's own core, so ``chit.check(data,
name=path).to_json()`` is exactly the line ``chit verify --json path``
writes (without ``name``, the same line without its ``file``).

>>> import chit
>>> report = chit.check(open("receipt.json", "rb").read())   # doctest: +SKIP
>>> report.status, [f.rule for f in report.errors]            # doctest: +SKIP
('valid', [])

An input chit cannot read gives a Report of status ``unreadable``;
exceptions (``chit.Error`` and its kinds) are for what stops a call: a bad
trust file or key, a payload chit refuses to sign or seal, an entry a log
refuses.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple, Union

from ._chit import (
    Across,
    Appended,
    Error,
    Finding,
    Invalid,
    Key,
    Log,
    Report,
    Trust,
    Unreadable,
    __version__,
    canon,
    check,
    digest,
    seal,
    verify_proof,
)
from ._chit import check_all as _check_all

__all__ = [
    "Across",
    "Appended",
    "Error",
    "Finding",
    "Invalid",
    "Key",
    "Log",
    "Report",
    "Reports",
    "Trust",
    "Unreadable",
    "__version__",
    "canon",
    "check",
    "check_all",
    "digest",
    "seal",
    "verify_proof",
]


class Reports(List[Report]):
    """``check_all``'s answer: one Report per input, in order, and in
    ``.across`` the checks across the inputs (packet streams, recompute
    results, Lattice rebinds, Treeship chains)."""

    across: List[Across]

    def __init__(self, reports: Iterable[Report] = (), across: Iterable[Across] = ()) -> None:
        super().__init__(reports)
        self.across = list(across)

    @property
    def valid(self) -> bool:
        """Whether there are inputs and every one, and every check across
        them, is valid (what makes ``chit verify`` exit 0 without
        ``--allow-unchecked``; with no input at all it exits 2)."""
        return len(self) > 0 and all(r.valid for r in self) and all(c.valid for c in self.across)


def check_all(
    inputs: Iterable[Union[bytes, Tuple[str, bytes]]],
    *,
    kind: Optional[str] = None,
    trust: Optional[Trust] = None,
    threshold: int = 1,
    allow_unchecked: bool = False,
    request: Optional[bytes] = None,
    call: Optional[bytes] = None,
    transcript: Optional[bytes] = None,
    accept_unsigned: bool = False,
    require_authorized: bool = False,
    expect_count: Optional[int] = None,
) -> Reports:
    """Checks many inputs at once, on all cores with the GIL released.

    Each input is bytes, or a ``(name, bytes)`` pair (a name is the
    ``file`` of its JSON line, and an art id in it is the one a signed
    envelope must carry, as ``chit verify`` takes it from a file's name).
    Returns one Report per input, in order, and the checks across them in
    ``.across``: with each input named by its path, exactly what ``chit
    verify --json`` writes for those files in the same order. An input
    without a name is ``inputs[i]`` where a check across inputs names it.
    ``expect_count`` holds every packet stream to that many packets
    (``--expect-count``).
    """
    reports, across = _check_all(
        inputs,
        kind=kind,
        trust=trust,
        threshold=threshold,
        allow_unchecked=allow_unchecked,
        request=request,
        call=call,
        transcript=transcript,
        accept_unsigned=accept_unsigned,
        require_authorized=require_authorized,
        expect_count=expect_count,
    )
    return Reports(reports, across)
