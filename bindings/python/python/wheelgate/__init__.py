"""wheelgate: the right PyTorch build for every machine.

``detect()`` describes this machine, ``select()`` answers which build (and index URL) each
requirement resolves to, and ``choose()`` reduces an installer's own candidate files to the ones
wheelgate's proxy would serve this machine. The work is done by the Rust crates of wheelgate
(``wheelgate-resolver``, ``wheelgate-selectors``) in the extension module ``wheelgate._wheelgate``.
"""

from wheelgate._wheelgate import (
    Build,
    Choice,
    Chosen,
    Gpu,
    InternalError,
    Machine,
    MachineError,
    PageError,
    RequirementError,
    VersionChoice,
    WheelgateError,
    choose,
    detect,
    select,
)

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
    "select",
]
