"""The native module under ``chit``: types for mypy --strict."""

from os import PathLike
from types import TracebackType
from typing import Dict, List, Optional, Tuple, Type, Union, final

__version__: str

class Error(Exception):
    """What stopped a call of chit's: its message is the one line the chit
    command prints."""

class Unreadable(Error):
    """The bytes given could not be read: not JSON, mis-encoded, or past a
    limit."""

class Invalid(Error):
    """Refused for what the input is: a payload that breaks its kind's
    rules (signing, sealing), or an entry a log's policy refuses."""

@final
class Finding:
    """One thing a check found."""

    @property
    def rule(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def path(self) -> str: ...

@final
class Report:
    """One input's verdict."""

    @property
    def status(self) -> str: ...
    @property
    def valid(self) -> bool: ...
    @property
    def kind(self) -> Optional[str]: ...
    @property
    def artifact_id(self) -> Optional[str]: ...
    @property
    def name(self) -> Optional[str]: ...
    @property
    def errors(self) -> List[Finding]: ...
    @property
    def warnings(self) -> List[Finding]: ...
    def to_json(self) -> str: ...

@final
class Across:
    """A check across inputs."""

    @property
    def subject(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def valid(self) -> bool: ...
    @property
    def errors(self) -> List[Finding]: ...
    @property
    def warnings(self) -> List[Finding]: ...
    def to_json(self) -> str: ...

@final
class Trust:
    """A trust file: the keys whose signatures count."""

    def __init__(self, text: str) -> None: ...
    @staticmethod
    def from_path(path: Union[str, "PathLike[str]"]) -> "Trust": ...

@final
class Key:
    """An Ed25519 signing key."""

    @staticmethod
    def generate() -> "Key": ...
    @staticmethod
    def from_path(path: Union[str, "PathLike[str]"]) -> "Key": ...
    @staticmethod
    def from_pem(text: str) -> "Key": ...
    def to_pem(self) -> str: ...
    @property
    def did(self) -> str: ...
    @property
    def treeship(self) -> str: ...
    def sign(
        self,
        kind: str,
        payload: bytes,
        *,
        subject: Optional[str] = None,
        system: str = "chit://sign",
    ) -> bytes: ...

@final
class Appended:
    """What ``Log.append`` did."""

    @property
    def index(self) -> int: ...
    @property
    def address(self) -> str: ...
    @property
    def proof(self) -> str: ...
    @property
    def present(self) -> bool: ...

@final
class Log:
    """A chit receipt log."""

    @staticmethod
    def open(
        store: Union[str, "PathLike[str]"],
        *,
        key: Union[str, "PathLike[str]", None] = None,
    ) -> "Log": ...
    def append(self, data: bytes) -> Appended: ...
    def entry(self, which: Union[int, str]) -> bytes: ...
    def proof(self, index: int, *, policy: Optional[str] = None) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def checkpoint(self) -> str: ...
    @property
    def origin(self) -> str: ...
    @property
    def verifier_key(self) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Log": ...
    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None: ...

def check(
    data: bytes,
    *,
    name: Optional[str] = None,
    kind: Optional[str] = None,
    trust: Optional[Trust] = None,
    threshold: int = 1,
    allow_unchecked: bool = False,
    request: Optional[bytes] = None,
    call: Optional[bytes] = None,
    transcript: Optional[bytes] = None,
    expected_art: Optional[str] = None,
    accept_unsigned: bool = False,
    require_authorized: bool = False,
) -> Report: ...
def check_all(
    inputs: object,
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
) -> Tuple[List[Report], List[Across]]: ...
def verify_proof(
    proof: Union[str, bytes],
    entry: bytes,
    policy: str,
    *,
    name: Optional[str] = None,
    trust: Optional[Trust] = None,
    allow_unchecked: bool = False,
) -> Report: ...
def canon(data: bytes, *, profile: str = "jcs") -> bytes: ...
def digest(data: bytes, *, kind: Optional[str] = None) -> Dict[str, str]: ...
def seal(data: bytes, *, kind: Optional[str] = None) -> bytes: ...
