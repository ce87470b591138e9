"""The parts of mlc/runtime/cuda.py that need no GPU: parameter blocks, array protocols, errors.

DLPack parsing is checked with numpy's own DLPack export, presented as if it were CUDA memory
(the parser reads the structure; it never touches the memory), so the struct layout, dtype
decoding and contiguity checks are tested on any machine.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mlc.runtime import cuda, foreign_arrays
from mlc.runtime.cuda import CudaError, KernelArguments, launch_dimensions, ptx_entry_names
from mlc.runtime.foreign_arrays import device_array_view, is_c_contiguous


def cell_bytes(arguments: KernelArguments, index: int) -> bytes:
    return arguments._cells.view(np.uint8)[8 * index : 8 * index + 8].tobytes()


def test_kernel_arguments_point_at_their_cells() -> None:
    arguments = KernelArguments(3)
    addresses = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_uint64 * 3).from_address(arguments.address))
    assert list(addresses) == [arguments._cells.ctypes.data + 8 * i for i in range(3)]
    arguments.set_pointer(1, 0xDEADBEEF00)
    assert arguments.pointer(1) == 0xDEADBEEF00
    arguments.set_scalar(0, np.int32(-5))
    arguments.set_scalar(2, np.float32(1.5))
    assert cell_bytes(arguments, 0) == np.int32(-5).tobytes() + bytes(4)
    assert cell_bytes(arguments, 2)[:4] == np.float32(1.5).tobytes()
    with pytest.raises(ValueError, match="more than 8 bytes"):
        arguments.set_scalar(0, np.complex128(1))
    assert KernelArguments(0).address == 0


def test_kernel_arguments_from_values_wants_explicit_scalar_types() -> None:
    arguments = KernelArguments.from_values([np.int64(7), np.float16(2)])
    assert cell_bytes(arguments, 0) == np.int64(7).tobytes()
    with pytest.raises(TypeError, match=r"parameter #1 is a Python int: pass a numpy scalar"):
        KernelArguments.from_values([np.int32(1), 3])
    with pytest.raises(TypeError, match="neither a device array nor a numpy scalar"):
        KernelArguments.from_values(["text"])


def test_kernel_arguments_take_device_memory_by_its_pointer() -> None:
    """A foreign array enters as the view `device_array_view` gives (cuda.py does not build views)."""
    view = foreign_arrays.DeviceArrayView(0xABC000, (4,), np.dtype(np.float32), 0, object(), "DLPack")
    arguments = KernelArguments.from_values([view, np.int32(4)])
    assert arguments.pointer(0) == 0xABC000
    assert view in arguments._owners  # kept alive while the arguments are
    array_like = type("CudaArray", (), {"__cuda_array_interface__": {"data": (0xABC000, False)}})()
    with pytest.raises(TypeError, match=r"parameter #0 of type CudaArray .*device_array_view\(array\)"):
        KernelArguments.from_values([array_like])


@pytest.mark.parametrize(
    ("shape", "strides", "expected"),
    [
        ((2, 3), None, True),
        ((2, 3), (12, 4), True),
        ((2, 3), (4, 8), False),
        ((2, 1, 3), (12, 999, 4), True),  # a dimension of size 1 may have any stride
        ((0, 3), (4, 4), True),
        ((), (), True),
    ],
)
def test_contiguity(shape: tuple[int, ...], strides: tuple[int, ...] | None, expected: bool) -> None:
    assert is_c_contiguous(shape, strides, 4) is expected


def test_launch_dimensions() -> None:
    assert launch_dimensions(128, "block") == (128, 1, 1)
    assert launch_dimensions((4, 2), "grid") == (4, 2, 1)
    with pytest.raises(ValueError, match="grid has one to three dimensions"):
        launch_dimensions((1, 2, 3, 4), "grid")


def test_ptx_entry_names() -> None:
    from ptx_kernels import POINTER_KERNELS_PTX, VECTOR_ADD_PTX

    assert ptx_entry_names(VECTOR_ADD_PTX) == ["vadd"]
    assert ptx_entry_names(POINTER_KERNELS_PTX) == ["add3", "add3_small", "block_reverse", "fault"]


class PretendCudaTensor:
    """numpy's DLPack export, announced as CUDA memory of device `device_id`."""

    def __init__(self, array: np.ndarray, device_type: int = foreign_arrays.DLPACK_CUDA, device_id: int = 0):
        self.array = array
        self.device_type = device_type
        self.device_id = device_id
        self.streams: list[object] = []

    def __dlpack__(self, stream: object = None) -> object:
        self.streams.append(stream)
        return self.array.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device_type, self.device_id


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.float64, np.int32, np.int64, np.bool_, np.uint8]
)
def test_dlpack_views_read_the_tensor_structure(dtype: type) -> None:
    array = np.zeros((3, 5), dtype)
    tensor = PretendCudaTensor(array, device_id=0)
    view = device_array_view(tensor, "argument #0")
    assert view is not None
    assert (view.pointer, view.shape, view.dtype, view.device_ordinal) == (
        array.ctypes.data,
        (3, 5),
        np.dtype(dtype),
        0,
    )
    assert view.protocol == "DLPack"
    assert tensor.streams == [1]  # the legacy default stream, as DLPack spells it


def test_dlpack_views_of_offset_and_strided_arrays() -> None:
    base = np.arange(40, dtype=np.float32).reshape(4, 10)
    view = device_array_view(PretendCudaTensor(base[1:3]), "x")
    assert view is not None and view.pointer == base[1:3].ctypes.data and view.shape == (2, 10)
    with pytest.raises(ValueError, match=r"x: the array is not C-contiguous \(strides \(10, 2\) elements"):
        device_array_view(PretendCudaTensor(base[:, ::2]), "x")


def test_dlpack_device_kinds() -> None:
    host = PretendCudaTensor(np.zeros(4, np.float32), device_type=foreign_arrays.DLPACK_CPU)
    assert device_array_view(host, "x") is None  # host memory: the caller copies it
    assert device_array_view(np.zeros(4, np.float32), "x") is None
    assert device_array_view(object(), "x") is None
    with pytest.raises(ValueError, match="x: DLPack arrays on OpenCL memory are not supported"):
        device_array_view(PretendCudaTensor(np.zeros(4), device_type=4), "x")


def test_a_failing_dlpack_export_names_the_argument() -> None:
    class RequiresGrad(PretendCudaTensor):
        def __dlpack__(self, stream: object = None) -> object:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")

    with pytest.raises(
        ValueError, match=r"argument #2: exporting it through DLPack failed: Can't export tensors"
    ):
        device_array_view(RequiresGrad(np.zeros(2)), "argument #2")


def test_array_interface_checks_that_need_no_driver() -> None:
    class Interface:
        def __init__(self, **overrides: object):
            self.__cuda_array_interface__ = {
                "shape": (2, 3),
                "typestr": "<f4",
                "data": (0, False),
                "strides": None,
                "version": 3,
            } | overrides

    with pytest.raises(ValueError, match=r"y: the array is not C-contiguous \(strides \(4, 8\) bytes"):
        device_array_view(Interface(strides=(4, 8)), "y")
    with pytest.raises(ValueError, match="masked arrays are not supported"):
        device_array_view(Interface(mask=(1, False)), "y")

    class Refusing:
        @property
        def __cuda_array_interface__(self) -> dict[str, object]:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

    with pytest.raises(ValueError, match="reading its __cuda_array_interface__ failed: Can't get"):
        device_array_view(Refusing(), "y")


def test_driver_errors_carry_the_error_name() -> None:
    driver = pytest.importorskip("cuda.bindings.driver")
    error = cuda.error_from_result(driver.CUresult.CUDA_ERROR_INVALID_VALUE, "launching kernel 'k'", "a hint")
    assert isinstance(error, CudaError) and isinstance(error, cuda.MlcError)
    assert error.error_name == "CUDA_ERROR_INVALID_VALUE"
    assert str(error).startswith("launching kernel 'k' failed: CUDA_ERROR_INVALID_VALUE: ")
    assert str(error).endswith("\na hint")
    with pytest.raises(CudaError, match="doing x failed: CUDA_ERROR_OUT_OF_MEMORY"):
        cuda.check((driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY,), "doing x")
    assert cuda.check((driver.CUresult.CUDA_SUCCESS, 7), "x") == 7
    assert cuda.check((driver.CUresult.CUDA_SUCCESS, 7, 8), "x") == (7, 8)


def test_without_a_device_get_device_raises_cuda_error() -> None:
    if cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(CudaError):
        cuda.get_device()


def test_importing_the_runtime_needs_no_cuda() -> None:
    code = "import sys, mlc.runtime, mlc.runtime.host; print('cuda.bindings' in sys.modules, 'llvmlite' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]
