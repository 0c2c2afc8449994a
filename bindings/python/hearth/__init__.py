"""hearth: run GGUF language models on CPUs and GPUs from Python.

    import hearth
    with hearth.Model("SmolLM2-135M-Instruct.Q4_1.gguf", n_gpu_layers=-1) as m:
        print(m.generate("The capital of France is", max_tokens=16, temperature=0))

A thin layer over hearth's C library (include/hearth.h): the engine that
batches every request, the sampling and the chat templates live there.
"""

from __future__ import annotations

from typing import List, Tuple, TypedDict

from . import _hearth
from .errors import (BY_STATUS, BusyError, CancelledError, ContextFullError, DeviceError, GenerationError, HearthError,
                     InvalidArgumentError, ModelFileError, ModelFormatError, NetworkError, OutOfMemoryError,
                     UnsupportedError)

_hearth._set_errors(HearthError, BY_STATUS)

from ._model import Model  # noqa: E402  (the error classes must be registered first)



class GpuDevice(TypedDict):
    """One device as :func:`gpu_devices` reports it (memory in bytes)."""
    index: int
    id: str                              # "cuda0", "opencl1": what Model(devices=...) takes
    name: str
    is_gpu: bool                         # False for an OpenCL CPU device (PoCL), used only when named
    compute_capability: Tuple[int, int]  # CUDA's; (0, 0) for OpenCL
    compute_units: int                   # CUDA multiprocessors or OpenCL compute units
    free_bytes: int                      # free at the call
    total_bytes: int


__version__: str = _hearth.__version__


def supports_gpu_offload() -> bool:
    """Whether model layers can be placed on a GPU in this process (a CUDA
    build, a driver and a device; ``HEARTH_FORCE_CPU`` unset)."""
    return _hearth.supports_gpu_offload()


def gpu_devices() -> List["GpuDevice"]:
    """The devices hearth can offload layers to, CUDA first, then OpenCL
    (an OpenCL CPU device such as PoCL's takes layers only when named in
    ``Model(devices=...)``); [] without one. Raises DeviceError when a
    driver fails."""
    return _hearth.gpu_devices()


def system_info() -> str:
    """One line: version, SIMD level, backends compiled in, CPU cores, and
    the GPUs (or why there is none)."""
    return _hearth.system_info()


__all__ = ["Model", "GpuDevice", "supports_gpu_offload", "gpu_devices", "system_info", "HearthError", "InvalidArgumentError",
           "ModelFileError", "ModelFormatError", "UnsupportedError", "OutOfMemoryError", "ContextFullError",
           "DeviceError", "BusyError", "NetworkError", "CancelledError", "GenerationError", "__version__"]
