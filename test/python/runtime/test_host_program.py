"""HostProgram (mlc/runtime/host.py) on a fake executor whose kernels are Python functions.

The fake keeps buffers in host memory like the CPU executor, but runs each launch as a Python
function of numpy views of the launched buffers, so argument binding, result handling, reuse of
buffers and error messages are tested without any backend or GPU.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np
import pytest
from ptx_kernels import parse

from mlc.errors import ArgumentError, OutOfMemoryError
from mlc.runtime.executor import LoadedKernel
from mlc.runtime.host import HostProgram
from mlc.runtime.host_memory import HostMemoryExecutor, aligned_empty
from mlc.runtime.plan import CPU_LAUNCH, GPU_LAUNCH, BufferSpec, HostProgramError, KernelLaunch


def view_of(pointer: int, spec: BufferSpec) -> np.ndarray:
    """A writable numpy view of `spec.nbytes` bytes at `pointer`."""
    if spec.nbytes == 0:
        return np.empty(spec.shape, spec.dtype)
    memory = (ctypes.c_char * spec.nbytes).from_address(pointer)
    return np.frombuffer(memory, dtype=spec.dtype).reshape(spec.shape)


class _PythonKernel(LoadedKernel):
    def __init__(self, executor: PythonKernels, launch: KernelLaunch):
        self.executor = executor
        self.launch_site = launch
        self.function = executor.kernels[launch.kernel]
        self.pointers: list[int | None] = [None] * len(launch.slots)

    def set_pointer(self, parameter: int, pointer: int) -> None:
        self.executor.pointer_updates += 1
        self.pointers[parameter] = pointer

    def launch(self) -> None:
        assert None not in self.pointers, "a parameter was never set"
        self.executor.log.append((self.launch_site.kernel, tuple(self.pointers)))  # type: ignore[arg-type]
        self.function(*(view_of(p, s) for p, s in zip(self.pointers, self.launch_site.buffer_specs)))  # type: ignore[arg-type]


class PythonKernels(HostMemoryExecutor):
    """Host memory, kernels given as Python functions; counts what the program asks for."""

    def __init__(self, kernels: dict[str, Callable[..., None]], launch_op_name: str = CPU_LAUNCH):
        self.kernels = kernels
        self.launch_op_name = launch_op_name  # type: ignore[misc]
        self.log: list[tuple[str, tuple[int, ...]]] = []
        self.allocations = 0
        self.uploads = 0
        self.pointer_updates = 0

    def load_kernel(self, launch: KernelLaunch) -> LoadedKernel:
        return _PythonKernel(self, launch)

    def allocate(self, spec: BufferSpec, alignment: int) -> object:
        self.allocations += 1
        return super().allocate(spec, alignment)

    def upload(self, values: np.ndarray, alignment: int) -> object:
        self.uploads += 1
        return super().upload(values, alignment)


def add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    out[...] = a + b


def double(a: np.ndarray, out: np.ndarray) -> None:
    out[...] = 2 * a.reshape(out.shape)  # out is a reshape of a (same element count)


KERNELS = {"add": add, "double": double}

MODULE = """
builtin.module {
  "memref.global"() <{sym_name = "bias", sym_visibility = "private", type = memref<2x3xf32>, initial_value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>, constant}> : () -> ()
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  llvm.func @double(!llvm.ptr, !llvm.ptr)
  func.func @main(%x: memref<2x3xf32>, %y: memref<2x3xf32>) -> (memref<2x3xf32>, memref<6xf32>) {
    %bias = memref.get_global @bias : memref<2x3xf32>
    %t = memref.alloc() : memref<2x3xf32>
    loop.launch @add(%x, %y, %t) : memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>
    %o = memref.alloc() : memref<2x3xf32>
    loop.launch @add(%t, %bias, %o) : memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>
    %r = memref.alloc() : memref<6xf32>
    loop.launch @double(%o, %r) : memref<2x3xf32>, memref<6xf32>
    func.return %o, %r : memref<2x3xf32>, memref<6xf32>
  }
}
"""
BIAS = np.array([[1, 2, 3], [4, 5, 6]], np.float32)


def reference(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    o = x + y + BIAS
    return o, 2 * o.reshape(6)


def make_program(
    text: str = MODULE,
    kernels: dict[str, Callable[..., None]] | None = None,
    launch_op_name: str = CPU_LAUNCH,
) -> tuple[HostProgram, PythonKernels]:
    executor = PythonKernels(kernels or KERNELS, launch_op_name)
    return HostProgram.from_module(parse(text), executor), executor


def random_inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(seed)
    return (
        generator.standard_normal((2, 3)).astype(np.float32),
        generator.standard_normal((2, 3)).astype(np.float32),
    )


def test_run_computes_the_results() -> None:
    program, executor = make_program()
    x, y = random_inputs()
    o, r = program.run(x, y)
    expected_o, expected_r = reference(x, y)
    np.testing.assert_array_equal(o, expected_o)
    np.testing.assert_array_equal(r, expected_r)
    assert (o.shape, r.shape, o.dtype, r.dtype) == ((2, 3), (6,), np.float32, np.float32)
    assert [kernel for kernel, _ in executor.log] == ["add", "add", "double"]
    assert program(x, y)[0].shape == (2, 3)  # calling the program is `run`


def test_constants_and_intermediates_are_set_up_once() -> None:
    program, executor = make_program()
    assert (executor.uploads, executor.allocations) == (1, 1)  # @bias and %t, at build time
    for seed in range(3):
        x, y = random_inputs(seed)
        np.testing.assert_array_equal(program.run(x, y)[0], reference(x, y)[0])
    assert executor.uploads == 1
    assert executor.allocations == 1 + 3 * 2  # two fresh results per call
    intermediate_pointers = {pointers[2] for kernel, pointers in executor.log if kernel == "add"} - {
        pointers[2] for kernel, pointers in executor.log[1::3]
    }
    assert len(intermediate_pointers) == 1  # %t is the same buffer in every call


def test_results_belong_to_the_caller() -> None:
    program, _ = make_program()
    x, y = random_inputs(1)
    first = program.run(x, y)
    kept = [a.copy() for a in first]
    program.run(*random_inputs(2))
    for before, now in zip(kept, first):
        np.testing.assert_array_equal(before, now)  # a later call does not overwrite earlier results


def test_unchanged_pointers_are_not_set_again() -> None:
    program, executor = make_program()
    x, y = random_inputs()
    kept = [program.run(x, y)]
    executor.pointer_updates = 0
    kept.append(program.run(x, y))  # same arguments, fresh results (the first ones are still alive)
    assert executor.pointer_updates == 3  # %o: add's out and double's in; %r: double's out
    executor.pointer_updates = 0
    program.run_on_device(x, y, outputs=kept[-1])  # the buffers the kernels already point at
    assert executor.pointer_updates == 0


def test_contiguous_aligned_arguments_are_used_in_place() -> None:
    program, executor = make_program()
    x, y = random_inputs()
    program.run(x, y)
    first_add = executor.log[0][1]
    assert first_add[:2] == (x.ctypes.data, y.ctypes.data)


def test_well_formed_arrays_skip_the_binders_and_others_take_them() -> None:
    """The hot path (`NumpyFastCheck`): arrays exactly as the kernels expect them are pointed at
    without the general binders; anything else (here a strided view, a byteswapped copy, a
    read-only output) goes through them, which stage, convert or refuse it."""
    program, executor = make_program()
    x, y = random_inputs()
    calls = []
    program._binders = [lambda value, binder=binder: calls.append(value) or binder(value) for binder in program._binders]
    o, r = program.run(x, y)
    assert calls == [] and [pointers[:2] for _, pointers in executor.log[:1]] == [(x.ctypes.data, y.ctypes.data)]
    np.testing.assert_array_equal(o, reference(x, y)[0])
    strided = np.repeat(x, 2, axis=1)[:, ::2]
    swapped = y.astype(y.dtype.newbyteorder())
    o, r = program.run(strided, swapped)
    assert len(calls) == 2
    np.testing.assert_array_equal(r, reference(x, y)[1])
    read_only = np.empty((2, 3), np.float32)
    read_only.setflags(write=False)
    with pytest.raises(ArgumentError, match="writable"):
        program.run_on_device(x, y, outputs=(read_only, np.empty(6, np.float32)))


def test_non_contiguous_arguments_are_copied() -> None:
    program, executor = make_program()
    big = np.arange(12, dtype=np.float32).reshape(2, 6)
    x = big[:, ::2]
    y = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(program.run(x, y)[0], reference(x, y)[0])
    assert executor.log[0][1][0] != x.ctypes.data


def test_misaligned_arguments_are_copied_to_aligned_memory() -> None:
    program, executor = make_program()
    raw = np.zeros(2 * 3 * 4 + 1, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=6, offset=1).reshape(2, 3)  # 1 byte off
    assert x.ctypes.data % 4 and not x.flags.aligned
    y = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(program.run(x, y)[0], reference(x, y)[0])
    assert executor.log[0][1][0] % 4 == 0


def test_wrong_argument_count() -> None:
    program, _ = make_program()
    with pytest.raises(
        ValueError, match=r"@main takes 2 argument\(s\) \(%\w+: memref<2x3xf32>, %\w+: memref<2x3xf32>\), got 1"
    ):
        program.run(np.zeros((2, 3), np.float32))


def test_wrong_shape_names_the_argument() -> None:
    program, executor = make_program()
    with pytest.raises(
        ValueError,
        match=r"argument #1 \(%y\) of @main: expected shape \(2, 3\) \(memref<2x3xf32>\), got \(3, 2\)",
    ):
        program.run(np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32))
    assert executor.log == []  # nothing was launched


def test_wrong_dtype_names_the_argument() -> None:
    program, _ = make_program()
    with pytest.raises(
        ValueError,
        match=r"argument #0 \(%x\) of @main: expected dtype float32 \(memref<2x3xf32>\), got float64",
    ):
        program.run(np.zeros((2, 3)), np.zeros((2, 3), np.float32))


def test_non_arrays_are_refused() -> None:
    program, _ = make_program()
    with pytest.raises(TypeError, match=r"argument #0 \(%x\) of @main: expected a numpy array, got list"):
        program.run([[0.0] * 3] * 2, np.zeros((2, 3), np.float32))

    class DeviceArray:
        __cuda_array_interface__ = {"shape": (2, 3), "typestr": "<f4", "data": (0, False), "version": 3}

    with pytest.raises(TypeError, match="a device array cannot be passed to a program that runs on the CPU"):
        program.run(DeviceArray(), np.zeros((2, 3), np.float32))


def test_dlpack_host_arrays_are_accepted() -> None:
    program, _ = make_program()

    class HostTensor:  # what a CPU torch tensor offers
        def __init__(self, array: np.ndarray):
            self.array = array

        def __dlpack__(self, stream: object = None) -> object:
            return self.array.__dlpack__()

        def __dlpack_device__(self) -> tuple[int, int]:
            return self.array.__dlpack_device__()

    x, y = random_inputs()
    np.testing.assert_array_equal(program.run(HostTensor(x), y)[0], reference(x, y)[0])


def test_outputs_are_written_in_place() -> None:
    program, executor = make_program()
    x, y = random_inputs()
    o, r = np.empty((2, 3), np.float32), np.empty(6, np.float32)
    results = program.run_on_device(x, y, outputs=(o, r))
    assert results[0] is o and results[1] is r
    expected_o, expected_r = reference(x, y)
    np.testing.assert_array_equal(o, expected_o)
    np.testing.assert_array_equal(r, expected_r)
    assert executor.log[1][1][2] == o.ctypes.data


@pytest.mark.parametrize(
    ("outputs", "error", "message"),
    [
        (lambda: (np.empty((2, 3), np.float32),), ValueError, r"has 2 result\(s\), got 1 output buffer"),
        (
            lambda: (np.empty((2, 3), np.float32), np.empty(5, np.float32)),
            ValueError,
            r"output #1 of @main: expected shape \(6,\)",
        ),
        (
            lambda: (np.empty((2, 3), np.float64), np.empty(6, np.float32)),
            ValueError,
            r"output #0 of @main: expected dtype float32",
        ),
        (
            lambda: (np.empty((3, 2), np.float32).T, np.empty(6, np.float32)),
            ValueError,
            "C-contiguous and writable",
        ),
        (lambda: ([0.0] * 6, np.empty(6, np.float32)), TypeError, "expected a numpy array to write into"),
    ],
)
def test_bad_outputs_are_named(outputs: Callable[[], tuple[object, ...]], error: type, message: str) -> None:
    program, _ = make_program()
    with pytest.raises(error, match=message):
        program.run_on_device(*random_inputs(), outputs=outputs())


ALIGNED_MODULE = """
builtin.module {
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr) attributes {mlc.arg_alignment = array<i64: 64, 4, 128>}
  func.func @main(%x: memref<8xf32>, %y: memref<8xf32>) -> memref<8xf32> {
    %o = memref.alloc() : memref<8xf32>
    loop.launch @add(%x, %y, %o) : memref<8xf32>, memref<8xf32>, memref<8xf32>
    func.return %o : memref<8xf32>
  }
}
"""


def misaligned_array(count: int, alignment: int, offset: int) -> np.ndarray:
    """A float32 array whose address is `offset` bytes past an `alignment` boundary."""
    base = aligned_empty((count * 4 + alignment,), np.uint8, alignment)
    return base[offset : offset + count * 4].view(np.float32)


def test_kernel_alignment_needs_are_honoured_for_arguments() -> None:
    program, executor = make_program(ALIGNED_MODULE)
    x, y = misaligned_array(8, 64, 16), misaligned_array(8, 64, 16)
    x[:], y[:] = np.arange(8), 1
    np.testing.assert_array_equal(program.run(x, y)[0], np.arange(8) + 1)
    pointers = executor.log[0][1]
    assert pointers[0] % 64 == 0 and pointers[0] != x.ctypes.data  # copied to meet the 64-byte need
    assert pointers[1] == y.ctypes.data  # 4 bytes suffice for y: used in place
    assert pointers[2] % 128 == 0


def test_misaligned_outputs_are_reported_with_the_kernel() -> None:
    program, _ = make_program(ALIGNED_MODULE)
    output = misaligned_array(8, 128, 64)
    with pytest.raises(
        ValueError,
        match=r"output #0 of @main: its address 0x[0-9a-f]+ is not aligned to 128 bytes "
        r"\(offset 64\), which parameter #2 of kernel 'add' \(mlc.arg_alignment\) needs",
    ):
        program.run_on_device(np.zeros(8, np.float32), np.zeros(8, np.float32), outputs=(output,))


RETURNS_MODULE = """
builtin.module {
  "memref.global"() <{sym_name = "c", sym_visibility = "private", type = memref<3xi64>, initial_value = dense<[1, 2, 3]> : tensor<3xi64>, constant}> : () -> ()
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  func.func @main(%x: memref<3xi64>) -> (memref<3xi64>, memref<3xi64>, memref<3xi64>, memref<3xi64>) {
    %c = memref.get_global @c : memref<3xi64>
    %o = memref.alloc() : memref<3xi64>
    loop.launch @add(%x, %c, %o) : memref<3xi64>, memref<3xi64>, memref<3xi64>
    func.return %x, %c, %o, %o : memref<3xi64>, memref<3xi64>, memref<3xi64>, memref<3xi64>
  }
}
"""


def test_results_never_alias_arguments_constants_or_each_other() -> None:
    program, _ = make_program(RETURNS_MODULE)
    x = np.array([10, 20, 30], np.int64)
    returned_x, constant, o, o_again = program.run(x)
    np.testing.assert_array_equal(returned_x, x)
    np.testing.assert_array_equal(constant, [1, 2, 3])
    np.testing.assert_array_equal(o, [11, 22, 33])
    np.testing.assert_array_equal(o_again, [11, 22, 33])
    returned_x[0], constant[0], o[0] = -1, -1, -1
    assert x[0] == 10 and o_again[0] == 11
    np.testing.assert_array_equal(program.run(x)[1], [1, 2, 3])  # the program's constant is intact


def test_copied_results_go_into_outputs() -> None:
    program, _ = make_program(RETURNS_MODULE)
    outputs = tuple(np.zeros(3, np.int64) for _ in range(4))
    program.run_on_device(np.array([1, 1, 1], np.int64), outputs=outputs)
    assert [list(o) for o in outputs] == [[1, 1, 1], [1, 2, 3], [2, 3, 4], [2, 3, 4]]


def test_outputs_are_all_checked_before_anything_runs() -> None:
    program, executor = make_program(RETURNS_MODULE)
    outputs = (np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(3, np.int64), np.zeros(4, np.int64))
    with pytest.raises(ValueError, match=r"output #3 of @main: expected shape \(3,\)"):
        program.run_on_device(np.ones(3, np.int64), outputs=outputs)
    assert executor.log == []


def test_other_element_types_and_scalars() -> None:
    def select(flags: np.ndarray, values: np.ndarray, scale: np.ndarray, out: np.ndarray) -> None:
        out[...] = np.where(flags, values * scale, 0)

    program, _ = make_program(
        """
builtin.module {
  llvm.func @select(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)
  func.func @main(%f: memref<4xi1>, %v: memref<4xf16>, %s: memref<f16>) -> memref<4xf16> {
    %o = memref.alloc() : memref<4xf16>
    loop.launch @select(%f, %v, %s, %o) : memref<4xi1>, memref<4xf16>, memref<f16>, memref<4xf16>
    func.return %o : memref<4xf16>
  }
}""",
        {"select": select},
    )
    flags = np.array([True, False, True, False])
    values = np.array([1, 2, 3, 4], np.float16)
    (result,) = program.run(flags, values, np.float16(0.5))
    np.testing.assert_array_equal(result, np.array([0.5, 0, 1.5, 0], np.float16))
    with pytest.raises(ValueError, match=r"argument #0 \(%f\) of @main: expected dtype bool"):
        program.run(flags.astype(np.uint8), values, np.float16(0.5))


def test_zero_sized_buffers() -> None:
    program, _ = make_program("""
builtin.module {
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  func.func @main(%x: memref<0x3xf32>) -> memref<0x3xf32> {
    %o = memref.alloc() : memref<0x3xf32>
    loop.launch @add(%x, %x, %o) : memref<0x3xf32>, memref<0x3xf32>, memref<0x3xf32>
    func.return %o : memref<0x3xf32>
  }
}""")
    (result,) = program.run(np.zeros((0, 3), np.float32))
    assert result.shape == (0, 3)


GPU_MODULE = """
builtin.module {
  llvm.func @add(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr<1>) attributes {nvvm.kernel}
  func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) -> memref<64xf32> {
    %o = memref.alloc() : memref<64xf32>
    mlc_gpu.launch @add(%x, %y, %o) grid [2, 1, 1] block [32, 1, 1] : memref<64xf32>, memref<64xf32>, memref<64xf32>
    func.return %o : memref<64xf32>
  }
}
"""


def test_launch_kinds_must_match_the_executor() -> None:
    with pytest.raises(
        HostProgramError, match=r"launches kernels with mlc_gpu.launch, but PythonKernels runs 'loop.launch'"
    ):
        make_program(GPU_MODULE)
    program, executor = make_program(GPU_MODULE, launch_op_name=GPU_LAUNCH)
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(program.run(x, x)[0], 2 * x)
    launch = program.plan.launches[0]
    assert (launch.grid, launch.block) == ((2, 1, 1), (32, 1, 1))


def test_an_unknown_entry_is_reported() -> None:
    with pytest.raises(HostProgramError, match="no function '@mian'; did you mean 'main'"):
        HostProgram.from_module(parse(MODULE), PythonKernels(KERNELS), entry="mian")


def test_repr_names_the_function() -> None:
    program, _ = make_program()
    assert repr(program) == "<HostProgram @main on PythonKernels: 3 launches>"


class LimitedMemory(PythonKernels):
    """PythonKernels whose memory holds `capacity` bytes (None: unknown, so nothing is checked)."""

    def __init__(self, capacity: int | None):
        super().__init__(KERNELS)
        self.capacity = capacity

    def memory_capacity(self) -> tuple[int, str] | None:
        return None if self.capacity is None else (self.capacity, "the test's memory")


def test_a_program_that_cannot_fit_is_refused_before_allocating() -> None:
    # In order: x, y (arguments), @bias (constant), %t, %o and %r, 24 bytes each; %o is the 5th.
    executor = LimitedMemory(capacity=5 * 24 - 1)
    with pytest.raises(
        OutOfMemoryError,
        match=r"@main: result #0 of @main \(memref<2x3xf32>, 24 bytes\) does not fit in memory: with the "
        r"buffers allocated before it the program needs 120 bytes, and the test's memory has 119 bytes",
    ):
        HostProgram.from_module(parse(MODULE), executor)
    assert (executor.allocations, executor.uploads) == (0, 0)
    program = HostProgram.from_module(parse(MODULE), LimitedMemory(capacity=6 * 24))
    np.testing.assert_array_equal(program.run(*random_inputs())[0], reference(*random_inputs())[0])


def test_a_buffer_the_allocator_refuses_is_named() -> None:
    # 2**45 + 1 f32 elements (128 TiB): within what targets address, beyond any process's address space.
    count = 2**45 + 1
    text = f"""
builtin.module {{
  llvm.func @double(!llvm.ptr, !llvm.ptr)
  func.func @main(%x: memref<{count}xf32>) -> memref<{count}xf32> {{
    %t = memref.alloc() : memref<{count}xf32>
    loop.launch @double(%x, %t) : memref<{count}xf32>, memref<{count}xf32>
    %o = memref.alloc() : memref<{count}xf32>
    loop.launch @double(%t, %o) : memref<{count}xf32>, memref<{count}xf32>
    func.return %o : memref<{count}xf32>
  }}
}}
"""
    with pytest.raises(
        OutOfMemoryError,
        match=rf"@main: the intermediate buffer of kernel 'double' \(memref<{count}xf32>, 128 TiB\) cannot be "
        r"allocated: the host refused 128 TiB",
    ):
        HostProgram.from_module(parse(text), LimitedMemory(capacity=None))


ARENA_MODULE = """
builtin.module {
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr)
  llvm.func @double(!llvm.ptr, !llvm.ptr)
  func.func @main(%x: memref<2x3xf32>, %y: memref<2x3xf32>) -> (memref<2x3xf32>, memref<2x3xf32>) {
    %arena = memref.alloc() {alignment = 256 : i64} : memref<512xi8>
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %t = memref.view %arena[%c0][] : memref<512xi8> to memref<2x3xf32>
    loop.launch @add(%x, %y, %t) : memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>
    %u = memref.view %arena[%c256][] : memref<512xi8> to memref<2x3xf32>
    loop.launch @add(%t, %x, %u) : memref<2x3xf32>, memref<2x3xf32>, memref<2x3xf32>
    %v = memref.view %arena[%c0][] : memref<512xi8> to memref<6xf32>
    loop.launch @double(%u, %v) : memref<2x3xf32>, memref<6xf32>
    %o = memref.alloc() : memref<2x3xf32>
    loop.launch @add(%v, %u, %o) : memref<6xf32>, memref<2x3xf32>, memref<2x3xf32>
    func.return %o, %u : memref<2x3xf32>, memref<2x3xf32>
  }
}
"""
"""%t and %v take turns at byte 0 of one arena, %u sits at byte 256; %u is also returned."""


def flat_add(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    out[...] = a.reshape(out.shape) + b.reshape(out.shape)


def test_views_of_one_arena_allocated_once() -> None:
    program, executor = make_program(ARENA_MODULE, {"add": flat_add, "double": double})
    assert executor.allocations == 1  # the arena; views take no memory of their own
    for seed in range(3):
        x, y = random_inputs(seed)
        o, u = program.run(x, y)
        np.testing.assert_allclose(o, 6 * x + 3 * y, rtol=1e-6)
        np.testing.assert_allclose(u, 2 * x + y, rtol=1e-6)
    assert executor.allocations == 1 + 3 * 2  # two fresh results per call, the arena kept
    arena = {pointers[2] for kernel, pointers in executor.log[0::4]}
    assert len(arena) == 1  # %t: the same bytes in every call
    (base,) = arena
    t, u, v = executor.log[0][1][2], executor.log[1][1][2], executor.log[2][1][1]
    assert (t, u, v) == (base, base + 256, base)
    assert base % 256 == 0


def test_a_returned_view_is_the_callers_copy() -> None:
    program, _ = make_program(ARENA_MODULE, {"add": flat_add, "double": double})
    x, y = random_inputs(4)
    _, u = program.run(x, y)
    kept = u.copy()
    program.run(*random_inputs(5))
    np.testing.assert_array_equal(u, kept)  # a later call reuses the arena, not the caller's array


def test_memory_is_counted_for_the_arena_not_its_views() -> None:
    # x, y (24 bytes each), the arena (512), result %o (24): 584 bytes; the views would add 72.
    HostProgram.from_module(parse(ARENA_MODULE), LimitedMemory(capacity=584))
    with pytest.raises(
        OutOfMemoryError,
        match=r"@main: the arena of @main, which holds the intermediate buffers of kernels 'add' and 'double' "
        r"\(memref<512xi8>, 512 bytes\) does not fit in memory",
    ):
        HostProgram.from_module(parse(ARENA_MODULE), LimitedMemory(capacity=48 + 511))
