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
from ._structured import Schema, schema_text  # noqa: E402



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
    backend: str                         # the backend that drives it, "cuda" or "opencl" (id's prefix)
    backend_label: str                   # the same as messages print it: "CUDA", "OpenCL"


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


def json_schema_to_grammar(schema: Schema) -> str:
    """The GBNF grammar (start rule ``root``) of the JSON texts ``schema``
    accepts: the grammar ``json_schema=`` and ``response_format`` constrain
    the text with. ``schema`` is a dict (or True / False), its JSON text, or
    a pydantic model class. The subset of JSON Schema: type, properties,
    required, additionalProperties, enum, const, anyOf, oneOf, allOf of
    objects, $ref to #/$defs or #/definitions, items, prefixItems,
    minItems/maxItems, minLength/maxLength, pattern, format (date, time,
    date-time, uuid), integer minimum/maximum; annotations such as title
    and description are ignored.

    Raises InvalidArgumentError with the library's message for text that is
    not JSON, a keyword outside the subset ("json_schema at
    /properties/age: unsupported keyword 'multipleOf'") or a $ref
    that does not resolve."""
    return _hearth.json_schema_to_grammar(schema_text("schema", schema))


__all__ = ["Model", "GpuDevice", "supports_gpu_offload", "gpu_devices", "system_info", "json_schema_to_grammar",
           "HearthError", "InvalidArgumentError",
           "ModelFileError", "ModelFormatError", "UnsupportedError", "OutOfMemoryError", "ContextFullError",
           "DeviceError", "BusyError", "NetworkError", "CancelledError", "GenerationError", "__version__"]
