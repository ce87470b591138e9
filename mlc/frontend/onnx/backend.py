"""An ONNX backend (`onnx.backend.base.Backend`) that runs ONNX models through mlc.

    from mlc.frontend.onnx.backend import MlcBackend
    rep = MlcBackend.prepare(model, device="interp")     # "interp" | "cpu" | "cuda"
    y, = rep.run([x])                                    # numpy arrays in graph-input order (or a dict)

Devices:

* `interp`: the reference interpreter (`mlc.interpret`), the semantic reference; every model the
  importer accepts runs there.
* `cpu` / `cuda`: `mlc.compile(module, device=...)`, the whole lowering pipeline, then the native
  CPU code or the PTX kernels. ONNX's own device names are accepted too: `CPU` is mlc's `cpu`,
  `CUDA` (or `CUDA:0`) its `cuda`; mlc compiles for CUDA device 0 only.

`MlcBackend.pinned(device)` is a subclass for ONNX's test runner (`onnx.backend.test.BackendTest`),
which knows only the devices CPU and CUDA: it runs every model on `device`, answering the runner's
CPU (for `interp` and `cpu`) or CUDA (for `cuda`).

Specialisation. mlc compiles static shapes and reads some inputs at import time (a Reshape's shape,
Slice's bounds, the axes of Squeeze, Unsqueeze and the reductions). ONNX's node tests give those
as graph inputs, so the representation defers the import to `run` when the model has such inputs
(or graph inputs of dynamic shape): their values (and the dynamic inputs' shapes) are bound as
constants, and the specialised module is cached by those values and shapes; a run with other values
imports and compiles again. A model without such inputs is imported and compiled in `prepare`.

Errors:

* `UnsupportedModelError` (an `MlcError`): mlc cannot run the model on that device: the importer
  rejects it (`OnnxImportError`: an op, attribute, element type or shape mlc does not support), or
  a lowering pass cannot lower one of its ops yet (`mlc.compile` raises `mlc.LoweringError`). Tools
  and the conformance table count these as *unsupported* rather than *failed*.
* `DeviceUnavailableError`: `cuda` was asked for on a machine without a CUDA device.
* `ValueError`: an unknown device, or inputs of the wrong count, dtype or shape (naming the input).

Anything else (a verifier failure after a pass, an importer message saying it is a bug in mlc, a
runtime error) propagates unchanged: it is a failure, not a known limit. Not supported: models
whose graph outputs are not tensors (sequences, optionals), training-mode ops, and everything the
importer's docstring lists (`mlc.frontend.onnx`). `Backend.run_node` builds a one-node model and
runs it the same way. The model is not checked with `onnx.checker`; the importer reports what it
cannot read.

Layering. This adapter is a client of mlc's public API (`mlc.compile`, `mlc.interpret`,
`mlc.available_devices`, `mlc.LoweringError`), imported inside its functions: the API sits above
the frontend, and the adapter reaches none of the compiler's stages (passes, interpreter, runtime)
directly. It stays in the ONNX frontend because it is where ONNX users look for it and it shares
the importer's knowledge of which inputs an op reads at import time (`inputs_read_at_import`).
`test/python/test_layering.py` holds it to that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from mlc.errors import MlcError

try:
    import onnx
    from onnx import ModelProto, NodeProto, helper, numpy_helper
    from onnx.backend.base import Backend, BackendRep, namedtupledict
except ImportError:  # pragma: no cover - depends on the environment
    raise ImportError("mlc.frontend.onnx.backend needs the 'onnx' package: pip install 'mlc[onnx]'") from None

from mlc.frontend.onnx import OnnxImportError, import_model

DEVICES = ("interp", "cpu", "cuda")
"""mlc's devices, as `prepare` takes them."""

_ONNX_DEVICES = {"CPU": "cpu", "CUDA": "cuda"}
"""ONNX's device names (`onnx.backend.base.DeviceType`) and the mlc devices they mean."""

_IGNORED_OPTIONS = frozenset({"rtol", "atol"})
"""Keywords ONNX's test runner forwards to `prepare` with its tolerances; they mean nothing here."""

_CACHE_SIZE = 8
"""Specialisations kept per representation (the oldest is dropped first)."""

Executable = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


class UnsupportedModelError(MlcError):
    """mlc cannot run this model on this device: a known limit, not a bug.

    `stage` is "import" (the ONNX importer rejected it) or "compile" (a lowering pass cannot lower
    one of its ops); `reason` is the underlying message.
    """

    def __init__(self, stage: str, reason: str):
        super().__init__(f"not supported by mlc ({stage}): {reason}")
        self.stage = stage
        self.reason = reason


class DeviceUnavailableError(MlcError):
    """The device asked for is not present on this machine."""


def resolve_device(device: str) -> str:
    """'interp', 'cpu' or 'cuda' for mlc's or ONNX's name of a device; ValueError otherwise."""
    if device in DEVICES:
        return device
    kind, _, ordinal = device.partition(":")
    if kind in _ONNX_DEVICES and (not ordinal or ordinal.isdigit()):
        if ordinal and int(ordinal) != 0:
            raise ValueError(f"mlc runs on {kind} device 0 only, not '{device}'")
        return _ONNX_DEVICES[kind]
    raise ValueError(f"device must be one of {', '.join(DEVICES)} (or ONNX's CPU, CUDA), got '{device}'")


def cuda_available() -> bool:
    """Whether a CUDA device can be used (never raises)."""
    import mlc

    return "cuda" in mlc.available_devices()


# -- which inputs the importer reads as constants ---------------------------------------------------


def graph_inputs(model: ModelProto) -> list[onnx.ValueInfoProto]:
    """The graph inputs that are run-time inputs (not initializers), in order."""
    initializers = {tensor.name for tensor in model.graph.initializer}
    return [value for value in model.graph.input if value.name not in initializers]


def inputs_read_at_import(model: ModelProto) -> frozenset[str]:
    """The graph inputs whose values the importer needs as constants (shapes, axes, bounds).

    Walks back from every input position a mapped op reads as a constant, through the nodes that
    compute it (not through `Shape`, which reads only a shape), to graph inputs.
    """
    from mlc.frontend.onnx.model import DEFAULT_DOMAINS
    from mlc.frontend.onnx.registry import mappings

    table = mappings()
    names = {value.name for value in graph_inputs(model)}
    producers: dict[str, NodeProto] = {}
    pending: list[str] = []
    for node in model.graph.node:
        for output in node.output:
            producers[output] = node
        mapping = table.get(node.op_type) if node.domain in DEFAULT_DOMAINS else None
        if mapping is not None:
            pending.extend(node.input[p] for p in mapping.constant_inputs if p < len(node.input) and node.input[p])
    found: set[str] = set()
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in names:
            found.add(name)
        elif name in producers and not (producers[name].op_type == "Shape" and producers[name].domain in DEFAULT_DOMAINS):
            pending.extend(input_name for input_name in producers[name].input if input_name)
    return frozenset(found)


def _static_shape(value: onnx.ValueInfoProto) -> tuple[int, ...] | None:
    """The declared shape when every dimension is known, else None."""
    tensor = value.type.tensor_type
    if value.type.WhichOneof("value") != "tensor_type" or not tensor.HasField("shape"):
        return None
    dims = tensor.shape.dim
    if not all(dim.HasField("dim_value") for dim in dims):
        return None
    return tuple(dim.dim_value for dim in dims)


def _declared_dtype(value: onnx.ValueInfoProto) -> np.dtype | None:
    """The numpy dtype of a tensor input's declared element type (None when unknown or exotic)."""
    if value.type.WhichOneof("value") != "tensor_type" or not value.type.tensor_type.elem_type:
        return None
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type))
    except (KeyError, TypeError, ValueError):
        return None


# -- import and compile ---------------------------------------------------------------------------


def _import(model: ModelProto, input_shapes: Mapping[str, Sequence[int]] | None) -> ModuleOp:
    try:
        return import_model(model, input_shapes=input_shapes)
    except OnnxImportError as error:
        if "a bug in mlc" in error.reason:  # the importer's own words for an internal inconsistency
            raise
        raise UnsupportedModelError("import", str(error)) from None


def _as_list(results: np.ndarray | tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """The results of a call through the API (one array, or a tuple of several) as a list."""
    return list(results) if isinstance(results, tuple) else [results]


def _interpreted(module: ModuleOp) -> Executable:
    import mlc

    def execute(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        return _as_list(mlc.interpret(module, *arrays, entry="main"))

    return execute


def _compiled(module: ModuleOp, device: str) -> Executable:
    import mlc

    try:
        function = mlc.compile(module, device=device, entry="main")
    except mlc.LoweringError as error:  # a known limit; other compile errors are failures
        raise UnsupportedModelError("compile", str(error)) from None

    def execute(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        return _as_list(function(*arrays))

    return execute


def _executable(model: ModelProto, device: str, input_shapes: Mapping[str, Sequence[int]] | None) -> Executable:
    module = _import(model, input_shapes)
    if device == "interp":
        return _interpreted(module)
    return _compiled(module, device)


# -- the backend ----------------------------------------------------------------------------------


class MlcBackendRep(BackendRep):
    """A model prepared for one device; `run(inputs)` returns its outputs (see the module docstring)."""

    def __init__(self, model: ModelProto, device: str, input_shapes: Mapping[str, Sequence[int]] | None = None):
        self.model = model
        self.device = device
        self.input_shapes = dict(input_shapes or {})
        self.inputs = graph_inputs(model)
        self.input_names = [value.name for value in self.inputs]
        self.output_names = [value.name for value in model.graph.output]
        unknown = [name for name in self.input_shapes if name not in self.input_names]
        if unknown:
            raise ValueError(f"input_shapes names {unknown}, which are not graph inputs (inputs: {self.input_names})")
        for value in model.graph.output:
            if value.type.WhichOneof("value") not in (None, "tensor_type"):
                raise UnsupportedModelError("import", f"graph output '{value.name}' is not a tensor")
        self.bound = inputs_read_at_import(model)
        """Inputs bound as constants at run time."""
        self.dynamic = frozenset(
            value.name
            for value in self.inputs
            if value.name not in self.bound and value.name not in self.input_shapes and _static_shape(value) is None
        )
        """Inputs whose shapes are taken from the run's arrays."""
        self._cache: dict[tuple, Executable] = {}
        self._outputs = namedtupledict("Outputs", self.output_names)
        if not self.bound and not self.dynamic:
            self._cache[()] = _executable(model, device, self.input_shapes or None)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """The outputs for `inputs`: arrays (or `TensorProto`s) in graph-input order, by name, or one array."""
        if kwargs:
            raise TypeError(f"unexpected keyword arguments: {', '.join(kwargs)}")
        arrays = self._arrange(inputs)
        key = self._specialisation_key(arrays)
        executable = self._cache.get(key)
        if executable is None:
            executable = self._specialise(arrays)
            if len(self._cache) >= _CACHE_SIZE:
                del self._cache[next(iter(self._cache))]
            self._cache[key] = executable
        runtime_inputs = [array for name, array in zip(self.input_names, arrays) if name not in self.bound]
        return self._outputs(*executable(runtime_inputs))

    def _arrange(self, inputs: Any) -> list[np.ndarray]:
        """The inputs as arrays in graph-input order, each checked against its declaration."""
        if isinstance(inputs, Mapping):
            missing = [name for name in self.input_names if name not in inputs]
            unknown = [name for name in inputs if name not in self.input_names]
            if missing or unknown:
                raise ValueError(
                    f"inputs by name: missing {missing or 'none'}, unknown {unknown or 'none'} "
                    f"(the model's inputs: {self.input_names})"
                )
            values = [inputs[name] for name in self.input_names]
        elif isinstance(inputs, np.ndarray):
            values = [inputs]
        else:
            values = list(inputs)
        if len(values) != len(self.inputs):
            raise ValueError(f"the model takes {len(self.inputs)} input(s) {self.input_names}, got {len(values)}")
        arrays = []
        for value, declared in zip(values, self.inputs):
            array = numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)
            dtype = _declared_dtype(declared)
            if dtype is not None and array.dtype != dtype:
                raise ValueError(f"input '{declared.name}' has dtype {array.dtype}; the model declares {dtype}")
            shape = _static_shape(declared)
            if shape is not None and declared.name not in self.input_shapes and array.shape != shape:
                raise ValueError(
                    f"input '{declared.name}' has shape {list(array.shape)}; the model declares {list(shape)}"
                )
            arrays.append(array)
        return arrays

    def _specialisation_key(self, arrays: Sequence[np.ndarray]) -> tuple:
        key: list[tuple] = []
        for name, array in zip(self.input_names, arrays):
            if name in self.bound:
                key.append((name, array.dtype.str, array.shape, array.tobytes()))
            elif name in self.dynamic:
                key.append((name, array.shape))
        return tuple(key)

    def _specialise(self, arrays: Sequence[np.ndarray]) -> Executable:
        """Imports and compiles the model with the bound inputs as initializers."""
        model = ModelProto()
        model.CopyFrom(self.model)
        shapes = dict(self.input_shapes)
        for name, array in zip(self.input_names, arrays):
            if name in self.bound:
                model.graph.initializer.append(numpy_helper.from_array(array, name))
            elif name in self.dynamic:
                shapes[name] = list(array.shape)
        return _executable(model, self.device, shapes or None)


class MlcBackend(Backend):
    """ONNX's backend interface over mlc; the device is `interp`, `cpu` or `cuda` (or ONNX's names)."""

    pinned_device: ClassVar[str | None] = None
    """The device every model runs on, for subclasses made by `pinned` (None: as asked)."""

    @classmethod
    def pinned(cls, device: str) -> type[MlcBackend]:
        """A backend that runs every model on `device` and answers ONNX's matching device name
        (CPU for `interp` and `cpu`, CUDA for `cuda`): the way to run ONNX's test runner on `interp`."""
        target = resolve_device(device)
        return type(f"MlcBackend_{target}", (cls,), {"pinned_device": target, "__module__": cls.__module__})

    @classmethod
    def target(cls, device: str) -> str:
        """The mlc device that serves `device`; ValueError when this backend does not serve it."""
        requested = resolve_device(device)
        if cls.pinned_device is None:
            return requested
        serves_host = cls.pinned_device in ("interp", "cpu")
        if (requested == "cuda") == serves_host:
            raise ValueError(f"this backend is pinned to '{cls.pinned_device}' and does not serve '{device}'")
        return cls.pinned_device

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            target = cls.target(device)
        except ValueError:
            return False
        return target != "cuda" or cuda_available()

    @classmethod
    def prepare(cls, model: ModelProto, device: str = "interp", **kwargs: Any) -> MlcBackendRep:
        """Imports `model` (and compiles it for `cpu`/`cuda`) unless it must wait for input values.

        Keyword `input_shapes` ({name: shape}) fixes the shapes of graph inputs, as for
        `import_model`; ONNX's test runner's `rtol`/`atol` are ignored.
        """
        unknown = set(kwargs) - _IGNORED_OPTIONS - {"input_shapes"}
        if unknown:
            raise TypeError(f"unexpected options: {', '.join(sorted(unknown))} (known: input_shapes)")
        target = cls.target(device)
        if target == "cuda" and not cuda_available():
            raise DeviceUnavailableError("device 'cuda' was asked for, but no CUDA device is available")
        if not isinstance(model, ModelProto):
            raise TypeError(f"prepare takes an onnx.ModelProto, got {type(model).__name__}")
        return MlcBackendRep(model, target, kwargs.get("input_shapes"))

    @classmethod
    def run_model(cls, model: ModelProto, inputs: Any, device: str = "interp", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: NodeProto,
        inputs: Any,
        device: str = "interp",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Runs one node on `inputs` (one array per present node input, in order, or by name).

        `opset_version` picks the default domain's opset (default: the newest onnx knows);
        `outputs_info` ((dtype, shape) per output) declares the outputs where inference cannot.
        """
        opset = kwargs.pop("opset_version", onnx.defs.onnx_opset_version())
        names = [name for name in node.input if name]
        values = [inputs[name] for name in names] if isinstance(inputs, Mapping) else list(inputs)
        if len(values) != len(names):
            raise ValueError(f"node {node.op_type} has {len(names)} input(s) {names}, got {len(values)}")
        arrays = [np.asarray(value) for value in values]
        graph_inputs_ = [
            helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), array.shape)
            for name, array in zip(names, arrays)
        ]
        outputs = [name for name in node.output if name]
        if outputs_info is not None:
            graph_outputs = [
                helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), shape)
                for name, (dtype, shape) in zip(outputs, outputs_info)
            ]
        else:
            graph_outputs = [helper.make_empty_tensor_value_info(name) for name in outputs]
        graph = helper.make_graph([node], f"{node.op_type}_node", graph_inputs_, graph_outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        return cls.prepare(model, device, **kwargs).run(arrays)


__all__ = [
    "DEVICES",
    "DeviceUnavailableError",
    "MlcBackend",
    "MlcBackendRep",
    "UnsupportedModelError",
    "inputs_read_at_import",
    "resolve_device",
]
