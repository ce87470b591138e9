"""The device a compile is for, and what follows from it: the default pipeline, what the device
refuses before lowering, its backend and how its program is loaded.

What: `resolve_device` turns `device=` ('auto', 'cuda', 'cpu') into 'cuda' or 'cpu' (a clear
error for a device that cannot be used, a suggestion for another library's name);
`default_pipeline_for` spells the pipeline `mlc.compile` runs by default (sm_90 adds
`HOPPER_STAGING`); `refuse_what_the_target_cannot_compute` raises the `LoweringError` for a
matmul precision the target's lowering does not honour or bf16 on a GPU without it, before
anything is lowered; `build_kernels` and `load_program` are the compile's backend (PTX or native
code) and runtime steps.

Preconditions: `target` is what `resolve_device` returned. Limits: one GPU, the current device
(`mlc.runtime.get_device`). Nothing heavy is imported at the top: the cached path spells the
default pipeline (part of the cache key) without loading xDSL or the passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mlc.errors import ArgumentError, ArgumentTypeError
from mlc.sources import LoweringError, close_matches

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp


DEVICES = ("auto", "cuda", "cpu")
DEVICE_ALIASES = {"gpu": "cuda", "nvidia": "cuda", "cuda:0": "cuda", "host": "cpu"}
"""Other libraries' names for mlc's devices: suggested in the error, never accepted silently."""


def resolve_device(device: str) -> str:
    """'cuda' or 'cpu' for a requested device ('auto' takes the GPU when one can be used)."""
    if not isinstance(device, str):
        raise ArgumentTypeError(
            f"device must be a string, one of {', '.join(map(repr, DEVICES))}; got {type(device).__name__}"
        )
    if device not in DEVICES:
        close = DEVICE_ALIASES.get(device.lower()) or next(
            iter(close_matches(device.lower(), DEVICES, n=1, cutoff=0.5)), None
        )
        hint = f" (did you mean '{close}'?)" if close else ""
        raise ArgumentError(f"unknown device '{device}': use one of {', '.join(map(repr, DEVICES))}{hint}")
    if device == "auto":
        return available_devices()[0]
    if device == "cuda":
        require_cuda_device()
    return device


def available_devices() -> tuple[str, ...]:
    """The devices `compile` can target on this machine, the one 'auto' takes first: ('cuda', 'cpu')
    when a CUDA device can be used, else ('cpu',). Never raises."""
    from mlc.runtime import is_available

    return ("cuda", "cpu") if is_available() else ("cpu",)


def require_cuda_device() -> None:
    """Raises a CudaError saying why device='cuda' cannot be used, when it cannot."""
    from mlc.runtime.cuda import CudaError, device_count

    advice = "Compile with device='cpu', or device='auto' to use the GPU only when there is one."
    try:
        count = device_count()
    except CudaError as error:
        reason = str(error).rstrip(". ")
        raise CudaError(f"device='cuda' was requested, but there is no usable CUDA device ({reason}). {advice}") from None
    if count == 0:
        raise CudaError(f"device='cuda' was requested, but no CUDA device is visible. {advice}")


def default_pipeline(target: str, precision: str | None = None) -> str:
    """`default_pipeline_for` the device that `target` compiles for."""
    arch = ""
    if target == "cuda":
        from mlc.runtime import get_device

        arch = get_device().arch
    return default_pipeline_for(target, arch, precision)


HOPPER_STAGING = ("tma=true", "warp-specialize=true", "stage-epilogue=true", "l2-group-tiles=8", "tf32-swap=true")
"""mlc-lower-to-gpu's options that `mlc.compile` adds on sm_90: warpgroup products fed by TMA from a
producer warpgroup, tiles stored through shared memory (0.84-0.98x cuBLAS at 4096^3 and 8192^3
against 0.72-0.87x for the cp.async pipeline: BENCHMARKS.md, ninth step), the grouped tile
order for tensor-core kernels reading an operand larger than L2 (8192^3: 1-7.5% faster in 4
interleaved pairs, BENCHMARKS.md, wg13; the other kernels it regroups, the conv's implicit GEMM
and the fp16 MLP's products, measured no slower with it: BENCHMARKS.md, session 13 start), and
plain TF32 products on a row-major B computed transposed, B's block in wgmma's A registers (two
register sets, `mlc.a_register_sets`), instead of a transpose kernel and the K-major product
(BENCHMARKS.md, tf16)."""


def default_pipeline_for(target: str, arch: str = "", precision: str | None = None) -> str:
    """`mlc-lower-to-cpu`, or `mlc-lower-to-gpu` with the GPU's `arch` where it changes the
    lowering (sm_90: wgmma, with `HOPPER_STAGING`), and `precision` if given: what `mlc.compile`
    runs by default."""
    options = [] if precision is None else [f"precision={precision}"]
    if target == "cuda" and arch:
        from mlc.targets import WGMMA_ARCHS

        options = options + [f"arch={arch}", *HOPPER_STAGING] if arch in WGMMA_ARCHS else options
    name = "mlc-lower-to-gpu" if target == "cuda" else "mlc-lower-to-cpu"
    return name + ("{" + " ".join(options) + "}" if options else "")


def chosen_pipeline(target: str, pipeline: str | None, precision: str | None) -> str:
    """The pipeline that lowers for `target`: `pipeline`, or the default one with `precision`."""
    return pipeline or default_pipeline(target, precision)


def refuse_what_the_target_cannot_compute(
    module: ModuleOp, target: str, pipeline: str | None, precision: str | None, source_map: Any, name: str
) -> None:
    """What `target` cannot compute is refused before lowering: a precision its matmul lowering
    does not honour, bf16 on a GPU without it."""
    from mlc.dialects.precision import DEFAULT_PRECISION

    if not pipeline:
        _refuse_unhonoured_precisions(module, precision or DEFAULT_PRECISION, target, source_map, name)
    if target == "cuda":
        _refuse_bfloat16_without_support(module, source_map, name)


def check_precision_argument(precision: str | None, pipeline: str | None) -> None:
    if precision is None:
        return  # before importing the dialects (xDSL): a cache hit never loads them
    from mlc.dialects.precision import PRECISIONS

    if precision not in PRECISIONS:
        close = close_matches(precision.lower(), PRECISIONS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ArgumentError(f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}{hint}")
    if pipeline:
        raise ArgumentError(
            "precision= sets the precision option of the default pipeline; with pipeline= give it to "
            "convert-graph-to-tile in the pipeline instead (convert-graph-to-tile{precision=...})"
        )


def _refuse_unhonoured_precisions(module: ModuleOp, precision: str, target: str, source_map: Any, name: str) -> None:
    """A matmul whose precision `target`'s lowering cannot compute is a LoweringError naming the op
    (at its place in the source) and the target, before anything is lowered."""
    from mlc.diagnostics import describe_op
    from mlc.dialects.graph import ops as graph
    from mlc.transforms.lowering.dot_precision import honoured_precisions
    from mlc.transforms.lowering.matmul_plan import matmul_precision

    honoured = honoured_precisions(target, target != "cuda" or _has_tensor_cores())
    for op in module.walk():
        if isinstance(op, graph.MatmulOp) and (wanted := matmul_precision(op, precision)) not in honoured:
            message = (
                f"precision '{wanted}' cannot be honoured on target '{target}': {honoured.reason} "
                f"(precisions computed there: {', '.join(sorted(honoured.precisions))})"
            )
            raise LoweringError(describe_op(op, message, source_map, name))


def _has_tensor_cores() -> bool:
    """Whether the GPU runs TF32 tensor-core products (mma.sync m16n8k8 .tf32: sm_80+)."""
    from mlc.backend.nvptx import BFLOAT16_MINIMUM_ARCH, arch_number
    from mlc.runtime import get_device

    number = arch_number(get_device().arch)
    return number is None or number >= BFLOAT16_MINIMUM_ARCH


def _refuse_bfloat16_without_support(module: ModuleOp, source_map: Any, name: str) -> None:
    """On a GPU older than sm_80 (no bf16 instructions), the first op over bf16 tensors is a
    LoweringError naming it and the GPU, before anything is lowered."""
    from xdsl.dialects.builtin import BFloat16Type, TensorType

    from mlc.backend.nvptx import BFLOAT16_MINIMUM_ARCH, arch_number
    from mlc.diagnostics import describe_op
    from mlc.runtime import get_device

    gpu = get_device()
    number = arch_number(gpu.arch)
    if number is None or number >= BFLOAT16_MINIMUM_ARCH:
        return
    for op in module.walk():
        types = [value.type for value in (*op.operands, *op.results)]
        if any(isinstance(t, TensorType) and isinstance(t.element_type, BFloat16Type) for t in types):
            message = (
                f"computes on bf16, which needs a GPU of compute capability 8.0 or newer (sm_80+); "
                f"the target, {gpu.name}, is {gpu.arch} (compile for device='cpu', or cast to f16/f32)"
            )
            raise LoweringError(describe_op(op, message, source_map, name))


def device_arch(target: str) -> str | None:
    """The GPU's architecture for a 'cuda' compile (opening the device in this thread), else None."""
    if target != "cuda":
        return None
    from mlc.runtime import get_device

    return get_device().arch


def build_kernels(module: ModuleOp, arch: str | None, shared_library: bool) -> Callable[[], Any]:
    """The backend for the lowered `module` in `lower`'s two halves (`then`): PTX for `arch`, else
    the CPU's code (with a shared library when `shared_library`). Only reads `module`."""
    if arch is not None:
        from mlc.backend.nvptx import prepare_ptx

        return prepare_ptx(module, arch)
    from mlc.backend.cpu import prepare_cpu_code

    return prepare_cpu_code(module, shared_library)


def linked_cubin_keeps(ptx: str) -> bool:
    """Whether the driver's linker (the compile cache's cubin, `CudaModule(keep_cubin=True)`)
    compiles `ptx` as a whole-program load would. It compiles PTX as relocatable code and then
    ignores `setmaxnreg` ("to maintain compatibility across compilation units", ptxas C7504): a
    warp-specialized kernel's consumers keep the launch's register count, and where they need
    more (a TF32 product with A in registers: 128 accumulators and two sets of A) ptxas
    serializes the wgmmas (C7512) and spills: 480 us against 392-405 at 4096^3 on an H100, the
    same PTX. Such PTX is loaded by the JIT (the driver's own compute cache keeps it) instead."""
    return "setmaxnreg" not in ptx


def load_program(
    module: ModuleOp,
    target: str,
    built: Any,
    function_name: str,
    cuda_graph: bool | None,
    num_threads: int | None,
    shared_library: bool,
) -> tuple[str | bytes, Any, bytes | None]:
    """The kernels (`built` by `build_kernels`), the runtime's program of `function_name`, and (CPU, when
    `shared_library` is asked for and a linker is there) the kernels as a shared library; on the
    GPU, `shared_library` keeps the driver's compiled image (cubin) with the program."""
    from mlc.runtime import HostProgram

    if target == "cuda":
        from mlc.runtime import get_device

        # For the cache (`shared_library`: a later process loads what this one compiled), the
        # driver's compiled image is kept too: a hit then loads it without the PTX JIT.
        program = HostProgram.for_cuda(
            module, built, entry=function_name, device=get_device(), cuda_graph=cuda_graph, keep_cubin=shared_library and linked_cubin_keeps(built)
        )
        return built, program, None
    program = HostProgram.for_cpu(module, built.object_code, function_name, num_threads, built.shared_library)
    return built.object_code, program, built.shared_library
