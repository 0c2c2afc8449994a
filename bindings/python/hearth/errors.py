"""The exceptions hearth raises. Each carries hearth's one-line message
(``str(err)``: what is wrong and what to do) and the C status it came from
(``err.status``, a ``hearth_status`` value of include/hearth.h)."""

from __future__ import annotations


class HearthError(Exception):
    """Base class of every error hearth raises."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class InvalidArgumentError(HearthError, ValueError):
    """A parameter is out of range, or the model was closed (HEARTH_ERR_INVALID_ARG)."""


class ModelFileError(HearthError, OSError):
    """The model file is missing, a folder or unreadable; or a model name is
    not in the store while hearth is offline (HEARTH_ERR_IO)."""


class ModelFormatError(HearthError):
    """The file is not a valid GGUF model: truncated, malformed or hostile (HEARTH_ERR_FORMAT)."""


class UnsupportedError(HearthError):
    """Valid input hearth cannot run: an architecture, tensor type or chat template feature (HEARTH_ERR_UNSUPPORTED)."""


class OutOfMemoryError(HearthError, MemoryError):
    """Host or GPU memory ran out; the message gives the size needed (HEARTH_ERR_OUT_OF_MEMORY)."""


class ContextFullError(HearthError):
    """The prompt does not fit in a request's context, n_ctx (HEARTH_ERR_CONTEXT_FULL)."""


class DeviceError(HearthError):
    """A compute device failed or is missing (HEARTH_ERR_DEVICE)."""


class BusyError(HearthError):
    """The engine's queue of waiting requests is full; retry later (HEARTH_ERR_BUSY)."""


class NetworkError(HearthError):
    """Fetching a model by name failed: host unknown or unreachable, refused
    (HTTP 401/403/404), or cut too often (HEARTH_ERR_NETWORK)."""


class CancelledError(HearthError):
    """A progress callback stopped the operation (HEARTH_ERR_CANCELLED)."""


class GenerationError(HearthError):
    """A forward pass failed while a request was generating."""


#: hearth_status values (include/hearth.h) and the class raised for each.
BY_STATUS = {
    1: InvalidArgumentError,
    2: ModelFileError,
    3: ModelFormatError,
    4: UnsupportedError,
    5: OutOfMemoryError,
    6: ContextFullError,
    8: DeviceError,
    9: BusyError,
    10: NetworkError,
    11: CancelledError,
}

__all__ = ["HearthError", "InvalidArgumentError", "ModelFileError", "ModelFormatError", "UnsupportedError",
           "OutOfMemoryError", "ContextFullError", "DeviceError", "BusyError", "NetworkError", "CancelledError", "GenerationError"]
