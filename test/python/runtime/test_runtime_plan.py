"""Reading host functions into plans (mlc/runtime/plan.py): slots, constants, alignment, errors."""

from __future__ import annotations

import numpy as np
import pytest
from ptx_kernels import parse

from mlc.runtime.plan import (
    CPU_LAUNCH,
    DEFAULT_ALIGNMENT,
    GPU_LAUNCH,
    HostProgramError,
    find_host_function,
    plan_host_function,
)


def global_op(name: str, memref_type: str, value: str, constant: bool = True) -> str:
    initial = f"initial_value = {value}" if value else "initial_value"
    return (
        f'"memref.global"() <{{sym_name = "{name}", sym_visibility = "private", type = {memref_type}, '
        f"{initial}{', constant' if constant else ''}}}> : () -> ()"
    )


def module_with_globals(*globals_and_types: tuple[str, str, str]) -> str:
    """A host function returning a get_global of each (name, memref type, initial value)."""
    declarations = "\n  ".join(
        global_op(name, memref_type, value) for name, memref_type, value in globals_and_types
    )
    gets = "\n    ".join(f"%{name} = memref.get_global @{name} : {t}" for name, t, _ in globals_and_types)
    names = ", ".join(f"%{name}" for name, _, _ in globals_and_types)
    types = ", ".join(t for _, t, _ in globals_and_types)
    return f"""
builtin.module {{
  {declarations}
  func.func @main() -> ({types}) {{
    {gets}
    func.return {names} : {types}
  }}
}}"""


def test_constants_are_read_from_dense_attributes() -> None:
    plan = plan_host_function(
        parse(
            module_with_globals(
                ("values", "memref<2x3xf32>", "dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>"),
                ("splat", "memref<4xf32>", "dense<1.5> : tensor<4xf32>"),
                ("flags", "memref<3xi1>", "dense<[true, false, true]> : tensor<3xi1>"),
                ("halves", "memref<2xf16>", "dense<[0.5, -2.0]> : tensor<2xf16>"),
                ("counts", "memref<2xi64>", "dense<[7, -9000000000]> : tensor<2xi64>"),
                ("ints", "memref<2x2xi32>", "dense<3> : tensor<2x2xi32>"),
                ("empty", "memref<3xf32>", ""),
            )
        )
    )
    values = {constant.name: constant.values for constant in plan.constants}
    np.testing.assert_array_equal(values["values"], np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    np.testing.assert_array_equal(values["splat"], np.full(4, 1.5, np.float32))
    np.testing.assert_array_equal(values["flags"], np.array([True, False, True]))
    np.testing.assert_array_equal(values["halves"], np.array([0.5, -2.0], np.float16))
    np.testing.assert_array_equal(values["counts"], np.array([7, -9000000000], np.int64))
    np.testing.assert_array_equal(values["ints"], np.full((2, 2), 3, np.int32))
    np.testing.assert_array_equal(values["empty"], np.zeros(3, np.float32))  # uninitialized: zeros
    assert {v.dtype for v in values.values()} >= {np.dtype(np.bool_), np.dtype(np.float16)}
    assert all(not v.flags.writeable for v in values.values())
    assert [r.source for r in plan.results] == ["constant"] * 7
    assert all(c.alignment == DEFAULT_ALIGNMENT for c in plan.constants)


def test_bf16_constants_need_ml_dtypes() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes")
    plan = plan_host_function(
        parse(
            module_with_globals(
                ("b", "memref<3xbf16>", "dense<[1.0, 2.5, -3.0]> : tensor<3xbf16>"),
            )
        )
    )
    values = plan.constants[0].values
    assert values.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(values.astype(np.float32), [1.0, 2.5, -3.0])


ADD_MODULE = """
builtin.module {
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr) attributes {mlc.arg_alignment = array<i64: 32, 8, 64>}
  func.func @main(%x: memref<8xf32>, %y: memref<8xf32>) -> memref<2x4xf32> {
    %t = memref.alloc() : memref<8xf32>
    loop.launch @add(%x, %y, %t) : memref<8xf32>, memref<8xf32>, memref<8xf32>
    %o = memref.alloc() {alignment = 512 : i64} : memref<2x4xf32>
    loop.launch @add(%t, %t, %o) : memref<8xf32>, memref<8xf32>, memref<2x4xf32>
    memref.dealloc %t : memref<8xf32>
    func.return %o : memref<2x4xf32>
  }
}
"""


def test_plan_numbers_buffers_and_launches() -> None:
    plan = plan_host_function(parse(ADD_MODULE))
    assert plan.function_name == "main"
    assert [a.description for a in plan.arguments] == [
        "argument #0 (%x) of @main",
        "argument #1 (%y) of @main",
    ]
    assert [a.slot for a in plan.arguments] == [0, 1]
    assert [(a.slot, a.is_result) for a in plan.allocations] == [(2, False), (3, True)]
    assert [launch.slots for launch in plan.launches] == [(0, 1, 2), (2, 2, 3)]
    assert {launch.op_name for launch in plan.launches} == {CPU_LAUNCH}
    assert plan.launches[1].buffer_specs[2].shape == (2, 4)  # the buffer's own shape, not the parameter's
    assert plan.launches[0].grid is None
    assert [(r.slot, r.source) for r in plan.results] == [(3, "allocation")]


def test_alignment_is_the_strongest_need_of_any_launch() -> None:
    plan = plan_host_function(parse(ADD_MODULE))
    x, y = plan.arguments
    assert (x.alignment, y.alignment) == (32, 8)
    assert "parameter #0 of kernel 'add'" in x.alignment_reason and "mlc.arg_alignment" in x.alignment_reason
    # %t is parameter #2 (64) of the first launch and #0 and #1 (32, 8) of the second.
    assert plan.slot_alignments[2][0] == 64
    intermediate, result = plan.allocations
    assert intermediate.alignment == DEFAULT_ALIGNMENT
    assert result.alignment == 512  # the alloc's own request wins over the default
    assert plan.slot_alignments[3] == (64, plan.slot_alignments[3][1])


def test_gpu_launches_keep_their_grid_and_block() -> None:
    plan = plan_host_function(
        parse("""
builtin.module {
  llvm.func @k(!llvm.ptr<1>) attributes {nvvm.kernel}
  func.func @main(%x: memref<64xf32>) {
    mlc_gpu.launch @k(%x) grid [2, 3, 1] block [32, 2, 1] : memref<64xf32>
    func.return
  }
}""")
    )
    (launch,) = plan.launches
    assert (launch.op_name, launch.grid, launch.block) == (GPU_LAUNCH, (2, 3, 1), (32, 2, 1))
    assert launch.describe() == "'k' (grid [2, 3, 1], block [32, 2, 1])"
    assert plan.results == ()


def test_two_get_globals_of_one_global_share_a_slot() -> None:
    plan = plan_host_function(
        parse(f"""
builtin.module {{
  {global_op("c", "memref<4xf32>", "dense<1.0> : tensor<4xf32>")}
  llvm.func @k(!llvm.ptr, !llvm.ptr)
  func.func @main() -> memref<4xf32> {{
    %a = memref.get_global @c : memref<4xf32>
    %b = memref.get_global @c : memref<4xf32>
    %o = memref.alloc() : memref<4xf32>
    loop.launch @k(%a, %o) : memref<4xf32>, memref<4xf32>
    loop.launch @k(%b, %o) : memref<4xf32>, memref<4xf32>
    func.return %o : memref<4xf32>
  }}
}}""")
    )
    assert len(plan.constants) == 1
    assert plan.launches[0].slots[0] == plan.launches[1].slots[0] == plan.constants[0].slot


def test_entry_selection() -> None:
    module = parse("""
builtin.module {
  func.func private @helper() {
    func.return
  }
  func.func @first() {
    func.return
  }
  func.func @second() {
    func.return
  }
}""")
    assert find_host_function(module).sym_name.data == "first"  # the first public one
    assert find_host_function(module, "second").sym_name.data == "second"
    with pytest.raises(HostProgramError, match="no function '@secnd'; did you mean 'second'"):
        find_host_function(module, "secnd")
    single = parse("builtin.module {\n  func.func private @only() {\n    func.return\n  }\n}")
    assert find_host_function(single).sym_name.data == "only"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "%c = arith.constant 1.0 : f32\n    func.return",
            "'arith.constant' cannot run on the host",
        ),
        (
            "%g = memref.get_global @nowhere : memref<4xf32>\n    func.return",
            "no memref.global @nowhere",
        ),
    ],
)
def test_unsupported_host_ops_are_named(body: str, message: str) -> None:
    module = parse(f"builtin.module {{\n  func.func @main() {{\n    {body}\n  }}\n}}")
    with pytest.raises(HostProgramError, match=message):
        plan_host_function(module)


def test_launching_a_kernel_that_is_not_lowered_is_reported() -> None:
    module = parse("""
builtin.module {
  loop.kernel @k(%a: memref<4xf32>) {
    loop.return
  }
  func.func @main(%x: memref<4xf32>) {
    loop.launch @k(%x) : memref<4xf32>
    func.return
  }
}""")
    with pytest.raises(HostProgramError, match="'k' is a 'loop.kernel'.*lowered to llvm.func"):
        plan_host_function(module)


def test_gpu_kernels_must_be_marked() -> None:
    module = parse("""
builtin.module {
  llvm.func @k(!llvm.ptr<1>)
  func.func @main(%x: memref<4xf32>) {
    mlc_gpu.launch @k(%x) grid [1, 1, 1] block [4, 1, 1] : memref<4xf32>
    func.return
  }
}""")
    with pytest.raises(HostProgramError, match="lacks the 'nvvm.kernel' attribute"):
        plan_host_function(module)


@pytest.mark.parametrize(
    ("alignment", "message"),
    [
        ("array<i64: 16>", "has 1 entries for 2 parameters"),
        ("array<i64: 16, 12>", "power of two, got 12"),
        ("16 : i64", "must be an array<i64: ...>"),
    ],
)
def test_bad_alignment_attributes_are_reported(alignment: str, message: str) -> None:
    module = parse(f"""
builtin.module {{
  llvm.func @k(!llvm.ptr, !llvm.ptr) attributes {{mlc.arg_alignment = {alignment}}}
  func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {{
    loop.launch @k(%x, %y) : memref<4xf32>, memref<4xf32>
    func.return
  }}
}}""")
    with pytest.raises(HostProgramError, match=message):
        plan_host_function(module)


@pytest.mark.parametrize(
    ("argument_type", "message"),
    [
        ("memref<?xf32>", "dynamic shape"),
        ("memref<4xf32, 3>", "memory space"),
        ("memref<4xf32, strided<[2]>>", "non-identity layout"),
        ("memref<4xf64>", None),  # f64 buffers are fine on the host
    ],
)
def test_argument_types(argument_type: str, message: str | None) -> None:
    module = parse(f"builtin.module {{\n  func.func @main(%x: {argument_type}) {{\n    func.return\n  }}\n}}")
    if message is None:
        assert plan_host_function(module).arguments[0].spec.dtype == np.float64
        return
    with pytest.raises(HostProgramError, match=message):
        plan_host_function(module)


def test_zero_sized_and_rank_zero_buffers() -> None:
    plan = plan_host_function(
        parse(
            "builtin.module {\n  func.func @main(%e: memref<0x4xf32>, %s: memref<f32>) {\n    func.return\n  }\n}"
        )
    )
    assert [(a.spec.shape, a.spec.nbytes) for a in plan.arguments] == [((0, 4), 0), ((), 4)]


ARENA_MODULE = """
builtin.module {
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr) attributes {mlc.arg_alignment = array<i64: 16, 16, 32>}
  func.func @main(%x: memref<2x4xf32>, %y: memref<2x4xf32>) -> memref<2x4xf32> {
    %arena = memref.alloc() {alignment = 256 : i64} : memref<512xi8>
    %c0 = arith.constant 0 : index
    %c256 = arith.constant 256 : index
    %t = memref.view %arena[%c0][] : memref<512xi8> to memref<2x4xf32>
    loop.launch @add(%x, %y, %t) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
    %u = memref.view %arena[%c256][] : memref<512xi8> to memref<8xf32>
    loop.launch @add(%t, %x, %u) : memref<2x4xf32>, memref<2x4xf32>, memref<8xf32>
    %bytes = memref.view %arena[%c256][] : memref<512xi8> to memref<256xi8>
    %w = memref.view %bytes[%c0][] : memref<256xi8> to memref<2x4xf32>
    %o = memref.alloc() : memref<2x4xf32>
    loop.launch @add(%w, %t, %o) : memref<2x4xf32>, memref<2x4xf32>, memref<2x4xf32>
    func.return %o : memref<2x4xf32>
  }
}
"""


def test_views_alias_their_root_allocation() -> None:
    plan = plan_host_function(parse(ARENA_MODULE))
    arena, result = plan.allocations
    assert (arena.slot, arena.spec.nbytes, arena.is_result, result.is_result) == (2, 512, False, True)
    assert arena.description == "the arena of @main, which holds the intermediate buffers of kernel 'add'"
    # %t, %u, %bytes and %w (a view of a view: of the arena, at 256 + 0).
    assert [(v.slot, v.root, v.byte_offset, v.spec.shape) for v in plan.views] == [
        (3, 2, 0, (2, 4)),
        (4, 2, 256, (8,)),
        (5, 2, 256, (256,)),
        (6, 2, 256, (2, 4)),
    ]
    assert plan.views[0].description == "the intermediate buffer of kernel 'add' (bytes [0, 32) of the arena of @main)"
    assert [launch.slots for launch in plan.launches] == [(0, 1, 3), (3, 0, 4), (6, 3, 7)]
    # The views' needs (32 bytes as parameter #2) reach the arena; it stays at the runtime's 256.
    assert plan.slot_alignments[3][0] == 32 and plan.slot_alignments[2][0] == 32
    assert "through a view" in plan.slot_alignments[2][1]
    assert arena.alignment == DEFAULT_ALIGNMENT


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "%v = memref.view %a[%c8][] : memref<64xi8> to memref<4xf32>",
            r"the view starts at byte 8 of its buffer, which is not aligned to the 32 bytes that parameter #2 "
            r"of kernel 'add' \(mlc.arg_alignment\) needs",
        ),
        (
            "%v = memref.view %a[%c64][] : memref<64xi8> to memref<4xf32>",
            r"the view's bytes \[64, 80\) are not all within its buffer's 64 bytes",
        ),
        (
            "%d = memref.view %a[%c0][%c8] : memref<64xi8> to memref<?xf32>\n    %v = memref.view %a[%c0][] : memref<64xi8> to memref<4xf32>",
            r"a view needs a constant byte shift \(arith.constant\) and a static shape",
        ),
        (
            "%v = memref.view %x[%c0][] : memref<64xi8> to memref<4xf32>",
            "a view of argument memory; views are of the host function's intermediate allocations",
        ),
    ],
)
def test_bad_views_are_refused(body: str, message: str) -> None:
    module = parse(f"""
builtin.module {{
  llvm.func @add(!llvm.ptr, !llvm.ptr, !llvm.ptr) attributes {{mlc.arg_alignment = array<i64: 4, 4, 32>}}
  func.func @main(%x: memref<64xi8>, %i: memref<4xf32>) -> memref<4xf32> {{
    %a = memref.alloc() : memref<64xi8>
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    {body}
    loop.launch @add(%i, %i, %v) : memref<4xf32>, memref<4xf32>, memref<4xf32>
    %o = memref.alloc() : memref<4xf32>
    func.return %o : memref<4xf32>
  }}
}}""")
    with pytest.raises(HostProgramError, match=message):
        plan_host_function(module)


def test_views_of_returned_buffers_are_refused() -> None:
    module = parse("""
builtin.module {
  llvm.func @fill(!llvm.ptr)
  func.func @main() -> memref<16xi8> {
    %a = memref.alloc() : memref<16xi8>
    %c0 = arith.constant 0 : index
    %v = memref.view %a[%c0][] : memref<16xi8> to memref<4xf32>
    loop.launch @fill(%v) : memref<4xf32>
    func.return %a : memref<16xi8>
  }
}""")
    with pytest.raises(HostProgramError, match="a view of a returned buffer"):
        plan_host_function(module)
