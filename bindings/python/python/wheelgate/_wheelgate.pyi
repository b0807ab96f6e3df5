"""Type stubs of the extension module ``wheelgate._wheelgate`` (re-exported by ``wheelgate``)."""

from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, Optional, Union, final

__all__ = [
    "Build",
    "Choice",
    "Chosen",
    "Gpu",
    "InternalError",
    "Machine",
    "MachineError",
    "PageError",
    "RequirementError",
    "VersionChoice",
    "WheelgateError",
    "choose",
    "detect",
    "run_cli",
    "select",
    "_test_panic",
]

class WheelgateError(Exception):
    """Base class of every error wheelgate raises."""

class MachineError(WheelgateError):
    """A machine description (token, JSON, override, sysroot) that describes no machine."""

class RequirementError(WheelgateError):
    """A requirement that does not parse, names no PyTorch project, or matches no release."""

class PageError(WheelgateError):
    """A candidate list or index page that cannot be read."""

class InternalError(WheelgateError):
    """A bug in wheelgate (a Rust panic), caught before it could end the interpreter."""

@final
class Gpu:
    """One GPU of a machine."""

    vendor: Literal["nvidia", "amd", "intel"]
    name: Optional[str]
    architecture: Optional[str]
    """Compute capability (``9.0``), gfx target (``gfx90a``) or Intel device IP (``12.60.7``)."""
    integrated: bool

@final
class Machine:
    """A machine as selection sees it: platform, C library, GPUs and their drivers."""

    @staticmethod
    def from_token(token: str) -> Machine: ...
    @staticmethod
    def from_json(json: str) -> Machine: ...
    @property
    def token(self) -> str: ...
    def to_json(self) -> str: ...
    @property
    def platform(self) -> str: ...
    @property
    def os(self) -> str: ...
    @property
    def arch(self) -> str: ...
    @property
    def glibc(self) -> Optional[str]: ...
    @property
    def nvidia_driver(self) -> Optional[str]: ...
    @property
    def cuda_version(self) -> Optional[str]: ...
    @property
    def rocm_version(self) -> Optional[str]: ...
    @property
    def gpus(self) -> list[Gpu]: ...

@final
class Choice:
    """One requirement's answer from ``select``."""

    project: str
    version: str
    backend: Optional[str]
    index_url: Optional[str]
    reasons: list[tuple[str, str]]
    """Every other backend and why it was not chosen: ``(backend, reason)``."""
    notes: list[str]
    files: list[str]
    """With ``index``: the files of that version the proxy would serve."""

@final
class Build:
    """What happened to one backend of a version."""

    backend: str
    verdict: Literal["chosen", "usable", "rejected"]
    reason: Optional[str]

@final
class VersionChoice:
    """One version's choice in ``choose``."""

    version: str
    backend: Optional[str]
    kept: list[str]
    builds: list[Build]
    notes: list[str]
    platforms: dict[str, Optional[str]]
    """The backend kept on each other platform the version's wheels are built for
    (``linux-aarch64``, ``windows-x86_64``, ...), for the same accelerators; ``None`` where none
    runs. ``backend`` is the machine's own platform's."""

@final
class Chosen:
    """What ``choose`` kept, and why."""

    project: str
    files: list[Any]
    """The kept entries: the very objects given, in the order given."""
    versions: list[VersionChoice]
    dropped: list[tuple[str, str]]
    """Every file left off: ``(filename, reason)``."""

def detect(sysroot: Union[str, PathLike[str], None] = None) -> Machine:
    """This machine, probed as ``wheelgate detect`` probes it (``WHEELGATE_*`` overrides)."""

def select(
    requirements: Union[str, Sequence[str]],
    machine: Optional[Machine] = None,
    index: Optional[str] = None,
) -> list[Choice]:
    """Each requirement's build and index URL, as ``wheelgate select`` answers."""

def choose(
    project: str,
    files: Sequence[Union[str, dict[str, Any]]],
    machine: Optional[Machine] = None,
    *,
    torch: Optional[Sequence[Union[str, dict[str, Any]]]] = None,
    metadata: Union[
        Mapping[str, Union[str, bytes]],
        Callable[[str], Union[str, bytes, None]],
        None,
    ] = None,
) -> Chosen:
    """The candidate files the proxy would serve this machine, with the reasons; a project
    built against torch is bound to torch's builds when ``torch`` (torch's candidates) and
    ``metadata`` (each file's core metadata, by filename) are given."""

def run_cli(argv: list[str]) -> int: ...
def _test_panic(message: str) -> None: ...
