"""Which stream a GPU program's call runs on (`mlc/runtime/call_streams.py`), on any machine.

Against the fake driver (fake_cuda_driver.py, which records each launch's stream and each wait
between streams): the program's own stream by default; `stream=` in every accepted spelling;
PyTorch's current stream when a PyTorch CUDA tensor is passed (PyTorch's stream query stubbed, as
the CPU build has no CUDA); a call on a new stream first waits for the previous call's; CUDA graphs
captured on the program's stream and replayed on the call's. Bad `stream=` values are MlcErrors
that name the problem, raised before anything is enqueued, on GPU and CPU programs alike. The
same ordering runs for real, with PyTorch streams, in test_cuda_gpu.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("cuda.bindings.driver")

import fake_cuda_driver  # noqa: E402
from ptx_kernels import GPU_HOST_MODULE, POINTER_KERNELS_PTX, gpu_host_reference, parse  # noqa: E402

import mlc  # noqa: E402
from mlc.runtime.call_streams import stream_handle  # noqa: E402
from mlc.runtime.cuda import CudaModule, DeviceBuffer, Stream  # noqa: E402
from mlc.runtime.cuda_executor import CudaExecutor  # noqa: E402
from mlc.runtime.host import HostProgram  # noqa: E402
from mlc.runtime.plan import plan_host_function  # noqa: E402

X, Y = np.arange(1024, dtype=np.float32), np.ones(1024, np.float32)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[fake_cuda_driver.FakeState]:
    state = fake_cuda_driver.install(monkeypatch)
    yield state
    assert state.context_stack() == [], "a context push was not popped"


@pytest.fixture
def program(fake: fake_cuda_driver.FakeState) -> HostProgram:
    return HostProgram.for_cuda(parse(GPU_HOST_MODULE), POINTER_KERNELS_PTX)


def assert_results(results: tuple[object, ...]) -> None:
    for result, reference in zip(results, gpu_host_reference(X, Y)):
        got = result.to_numpy() if isinstance(result, DeviceBuffer) else result
        np.testing.assert_array_equal(got, reference)


class TorchLikeStream:
    """What mlc reads of a `torch.cuda.Stream`: its handle and device."""

    def __init__(self, handle: int, device_index: int = 0):
        self.cuda_stream = handle
        self.device_index = device_index


class StreamProtocol:
    def __init__(self, handle: object):
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, object]:
        return 0, self.handle


def test_stream_values_are_read_without_the_driver() -> None:
    from cuda.bindings import driver

    assert stream_handle(0) == (0, None)
    assert stream_handle(2**64 - 1) == (2**64 - 1, None)
    assert stream_handle(TorchLikeStream(0x5000, 1)) == (0x5000, 1)
    assert stream_handle(StreamProtocol(0x6000)) == (0x6000, None)
    assert stream_handle(driver.CUstream(0x7000)) == (0x7000, None)


@pytest.mark.parametrize(
    "value, error, message",
    [
        (True, mlc.ArgumentTypeError, "expected an mlc Stream, a torch.cuda.Stream.*got bool"),
        (1.5, mlc.ArgumentTypeError, "got float"),
        ("0", mlc.ArgumentTypeError, "got str"),
        (object(), mlc.ArgumentTypeError, "got object"),
        (-1, mlc.ArgumentError, r"stream=-1: a stream handle is an address, from 0 to 2\*\*64 - 1"),
        (2**64, mlc.ArgumentError, "a stream handle is an address"),
        (TorchLikeStream("0x10"), mlc.ArgumentTypeError, "TorchLikeStream's handle is a str, not an integer"),
        (StreamProtocol(None), mlc.ArgumentTypeError, "StreamProtocol's handle is a NoneType"),
    ],
)
def test_bad_stream_values_are_clear_errors(value: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        stream_handle(value)
    assert isinstance(raised.value, mlc.MlcError) and raised.value.__cause__ is None


def test_calls_run_on_the_programs_stream_by_default(fake: fake_cuda_driver.FakeState, program: HostProgram) -> None:
    assert_results(program.run(X, Y))
    assert fake.launch_streams == [0, 0, 0] and fake.stream_waits == []


@pytest.mark.parametrize("spelling", ["mlc", "torch", "protocol", "CUstream", "int"])
def test_a_call_runs_on_the_stream_it_is_given(
    fake: fake_cuda_driver.FakeState, program: HostProgram, spelling: str
) -> None:
    from cuda.bindings import driver

    stream = Stream.create()
    handle = int(stream.handle)
    value = {
        "mlc": stream,
        "torch": TorchLikeStream(handle),
        "protocol": StreamProtocol(handle),
        "CUstream": driver.CUstream(handle),
        "int": handle,
    }[spelling]
    results = program.run_on_device(X, Y, stream=value)
    assert fake.launch_streams == [handle] * 3
    # The call waited for the program's previous stream (its buffers are shared between calls).
    assert fake.stream_waits == [(handle, 1)]
    assert all(r.__cuda_array_interface__["stream"] == handle for r in results)  # consumers order after it
    assert_results(results)
    program.run_on_device(X, Y, stream=value)  # the same stream again: no new wait
    assert fake.stream_waits == [(handle, 1)]
    assert_results(program.run(X, Y))  # back to the program's stream, after the work on `stream`
    assert fake.launch_streams[-3:] == [0, 0, 0] and fake.stream_waits[-1] == (0, handle)


def test_the_special_handles(fake: fake_cuda_driver.FakeState, program: HostProgram) -> None:
    program.run(X, Y, stream=1)  # CU_STREAM_LEGACY is the legacy default stream, the program's own
    program.run(X, Y, stream=2)  # CU_STREAM_PER_THREAD: the calling thread's default stream
    assert fake.launch_streams == [0, 0, 0, 2, 2, 2] and fake.stream_waits == [(2, 1)]


def test_torch_tensors_run_on_torchs_current_stream(
    fake: fake_cuda_driver.FakeState, program: HostProgram, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlc.runtime import call_streams

    torch = pytest.importorskip("torch")
    side = Stream.create()
    asked = []
    monkeypatch.setattr(
        torch._C, "_cuda_getCurrentRawStream", lambda ordinal: asked.append(ordinal) or int(side.handle), raising=False
    )
    monkeypatch.setattr(call_streams, "holds_torch_cuda_tensor", lambda values: True)
    program.run_on_device(X, Y)
    assert asked == [0] and fake.launch_streams == [int(side.handle)] * 3
    program.run_on_device(X, Y, stream=0)  # an explicit stream wins
    assert fake.launch_streams[-3:] == [0, 0, 0]


def test_streams_the_driver_does_not_accept_are_refused_before_any_launch(
    fake: fake_cuda_driver.FakeState, program: HostProgram
) -> None:
    fake.other_context_streams.add(0x9000)
    cases = [
        (0x8000, "stream=0x8000 \\(int\\): the driver does not know it as a stream \\(CUDA_ERROR_INVALID_HANDLE"),
        (0x9000, "belongs to another CUDA context than the primary context of device 0"),
        (TorchLikeStream(0x8000, device_index=1), "a stream of CUDA device 1, but the program runs on device 0"),
    ]
    for value, message in cases:
        with pytest.raises(mlc.ArgumentError, match=message):
            program.run_on_device(X, Y, stream=value)
    with pytest.raises(mlc.ArgumentTypeError, match="got str"):
        program.run(X, Y, stream="default")
    assert fake.launches == []


def test_graphs_are_captured_on_the_programs_stream_and_replayed_on_the_calls(
    fake: fake_cuda_driver.FakeState,
) -> None:
    plan = plan_host_function(parse(GPU_HOST_MODULE), None)
    own = Stream.create()
    program = HostProgram(plan, CudaExecutor(CudaModule(POINTER_KERNELS_PTX), own), cuda_graph=True)
    caller = Stream.create()
    assert_results(program.run(X, Y, stream=caller))
    assert_results(program.run(X, Y, stream=caller))
    assert fake.launch_streams == [int(own.handle)] * 6  # the kernels as captured
    assert fake.graph_launch_streams == [int(caller.handle)] * 2  # one capture, replayed on the call's stream
    assert_results(program.run(X, Y))
    assert fake.graph_launch_streams[-1] == int(own.handle)


def test_cpu_programs_take_no_stream() -> None:
    source = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = graph.relu %x : tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }"""
    function = mlc.compile(source, device="cpu")
    x = np.arange(4, dtype=np.float32) - 2
    for call in (lambda: function(x, stream=0), lambda: function.run_on_device(x, stream=SimpleNamespace())):
        with pytest.raises(mlc.ArgumentError, match="without CUDA streams; stream= is for programs compiled for the GPU"):
            call()
    np.testing.assert_array_equal(function(x), np.maximum(x, 0))
