"""The standard-dialect-to-LLVM conversions: type conversion, scope, casts, order independence."""

from __future__ import annotations

import itertools
from io import StringIO

import pytest
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    StridedLayoutAttr,
    TensorType,
    UnrealizedConversionCastOp,
    VectorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPass

from mlc.diagnostics import PassFailure, parse_module
from mlc.dialects import make_context
from mlc.passes import PipelineError, build_pipeline
from mlc.transforms import all_passes, get_pass
from mlc.transforms.llvm.convert_arith_to_llvm import ConvertArithToLLVM
from mlc.transforms.llvm.convert_cf_to_llvm import ConvertCfToLLVM
from mlc.transforms.llvm.convert_math_to_llvm import ConvertMathToLLVM, library_function_name
from mlc.transforms.llvm.convert_memref_to_llvm import ConvertMemRefToLLVM
from mlc.transforms.llvm.convert_vector_to_llvm import ConvertVectorToLLVM
from mlc.transforms.lowering.llvm_conversion import (
    convert_type,
    intrinsic_suffix,
    is_in_kernel,
    is_llvm_type,
    natural_alignment,
    row_major_strides,
)

CONVERSIONS: list[ModulePass] = [
    ConvertVectorToLLVM(),
    ConvertMemRefToLLVM(),
    ConvertMathToLLVM(),
    ConvertArithToLLVM(),
    ConvertCfToLLVM(),
]

# A kernel as the kernel lowerings leave it, beside a host function that uses every dialect the
# conversions handle.
SOURCE = """
llvm.func @kernel(%x: !llvm.ptr<1>, %out: !llvm.ptr<1>, %n: i32) {
  %xm = builtin.unrealized_conversion_cast %x : !llvm.ptr<1> to memref<8x4xf32>
  %om = builtin.unrealized_conversion_cast %out : !llvm.ptr<1> to memref<8x4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = arith.index_cast %n : i32 to index
  %zero = arith.constant 0.0 : f32
  %scratch = memref.alloca() : memref<4xf32, 5>
  %sum = scf.for %row = %c0 to %rows step %c1 iter_args(%total = %zero) -> (f32) {
    %v = vector.load %xm[%row, %c0] {alignment = 16 : i64} : memref<8x4xf32>, vector<4xf32>
    %e = math.exp %v : vector<4xf32>
    %m = arith.maximumf %e, %v : vector<4xf32>
    vector.store %m, %om[%row, %c0] {alignment = 16 : i64} : memref<8x4xf32>, vector<4xf32>
    %first = vector.extract %m[0] : f32 from vector<4xf32>
    memref.store %first, %scratch[%c0] : memref<4xf32, 5>
    %back = memref.load %scratch[%c0] : memref<4xf32, 5>
    %r = arith.index_cast %row : index to i32
    %rf = arith.sitofp %r : i32 to f32
    %w = arith.mulf %back, %rf : f32
    %t = arith.addf %total, %w : f32
    scf.yield %t : f32
  }
  %s = math.sqrt %sum : f32
  memref.store %s, %om[%c0, %c0] : memref<8x4xf32>
  llvm.return
}

func.func @host(%flag: i1) -> memref<8x4xf32> {
  %buffer = memref.alloc() : memref<8x4xf32>
  %origin = arith.constant 0 : index
  cf.cond_br %flag, ^bb1(%origin : index), ^bb1(%origin : index)
^bb1(%i: index):
  %loaded = vector.load %buffer[%i, %i] : memref<8x4xf32>, vector<4xf32>
  %raised = math.exp %loaded : vector<4xf32>
  vector.store %raised, %buffer[%i, %i] : memref<8x4xf32>, vector<4xf32>
  %element = memref.load %buffer[%i, %i] : memref<8x4xf32>
  %twice = arith.addf %element, %element : f32
  memref.store %twice, %buffer[%i, %i] : memref<8x4xf32>
  func.return %buffer : memref<8x4xf32>
}
"""

STANDARD_DIALECTS = ("arith", "math", "memref", "vector", "cf", "scf")


def _parse(text: str = SOURCE) -> ModuleOp:
    module, _ = parse_module(text, make_context())
    return module


def _printed(op: Operation) -> str:
    text = StringIO()
    Printer(stream=text).print_op(op)
    return text.getvalue()


def _function(module: ModuleOp, name: str) -> Operation:
    return next(op for op in module.body.block.ops if getattr(op, "sym_name", None) and op.sym_name.data == name)


def _non_llvm_ops(kernel: Operation) -> list[str]:
    return sorted({op.name for op in kernel.walk() if op is not kernel and not op.name.startswith("llvm.")})


# ---------------------------------------------------------------------------------------------
# Type conversion


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (IndexType(), i64),
        (i1, i1),
        (i32, i32),
        (f16, f16),
        (f64, f64),
        (IntegerType(32, Signedness.SIGNED), None),
        (MemRefType(f32, [4, 8]), llvm.LLVMPointerType()),
        (MemRefType(f32, [4], memory_space=IntegerAttr(3, i64)), llvm.LLVMPointerType(IntAttr(3))),
        (MemRefType(f32, [4], memory_space=IntegerAttr(1, i64)), llvm.LLVMPointerType(IntAttr(1))),
        (MemRefType(f32, [4], memory_space=IntegerAttr(5, i64)), llvm.LLVMPointerType()),
        (MemRefType(IndexType(), [4]), llvm.LLVMPointerType()),
        (MemRefType(f32, [DYNAMIC_INDEX]), None),
        (MemRefType(f32, [4], StridedLayoutAttr([2], 0)), None),
        (MemRefType(llvm.LLVMStructType.from_type_list([i32, f32]), [4]), None),
        (VectorType(f32, [4]), VectorType(f32, [4])),
        (VectorType(IndexType(), [2]), VectorType(i64, [2])),
        (VectorType(f32, [2, 2]), None),
        (TensorType(f32, [4]), None),
        (llvm.LLVMPointerType(IntAttr(3)), llvm.LLVMPointerType(IntAttr(3))),
    ],
)
def test_convert_type(source: Attribute, expected: Attribute | None) -> None:
    assert convert_type(source) == expected
    assert is_llvm_type(source) == (expected == source)


def test_private_memory_is_the_generic_address_space() -> None:
    # `!llvm.ptr` and `!llvm.ptr<0>` are different attributes in xDSL: allocas give the former.
    converted = convert_type(MemRefType(f32, [4], memory_space=IntegerAttr(5, i64)))
    assert converted == llvm.AllocaOp(llvm.ConstantOp(IntegerAttr(4, i64), i64), f32).res.type
    assert isinstance(converted, llvm.LLVMPointerType) and isinstance(converted.addr_space, NoneAttr)


@pytest.mark.parametrize(
    ("type_", "alignment", "suffix"),
    [
        (i1, 1, "i1"),
        (i8, 1, "i8"),
        (i32, 4, "i32"),
        (IndexType(), 8, "i64"),
        (f16, 2, "f16"),
        (f32, 4, "f32"),
        (f64, 8, "f64"),
        (VectorType(f32, [4]), 16, "v4f32"),
        (VectorType(f16, [2]), 4, "v2f16"),
        (VectorType(f32, [3]), 16, "v3f32"),
    ],
)
def test_alignment_and_mangling(type_: Attribute, alignment: int, suffix: str) -> None:
    assert natural_alignment(type_) == alignment
    assert intrinsic_suffix(type_) == suffix


def test_row_major_strides() -> None:
    assert row_major_strides([2, 3, 4]) == [12, 4, 1]
    assert row_major_strides([7]) == [1]
    assert row_major_strides([]) == []


@pytest.mark.parametrize(
    ("function", "float_type", "library", "name"),
    [
        ("exp", f32, "libm", "expf"),
        ("exp", f64, "libm", "exp"),
        ("exp", f32, "libdevice", "__nv_expf"),
        ("pow", f64, "libdevice", "__nv_pow"),
    ],
)
def test_library_function_names(function: str, float_type: AnyFloat, library: str, name: str) -> None:
    assert library_function_name(function, float_type, library) == name


# ---------------------------------------------------------------------------------------------
# Scope


def test_scope_is_kernels_only() -> None:
    module = _parse()
    kernel, host = _function(module, "kernel"), _function(module, "host")
    assert all(is_in_kernel(op) for op in kernel.walk() if op is not kernel)
    assert not any(is_in_kernel(op) for op in host.walk())
    assert not is_in_kernel(kernel)  # module-level ops are declarations, not kernel code


@pytest.mark.parametrize("conversion", CONVERSIONS, ids=lambda p: p.name)
def test_each_pass_leaves_host_functions_alone(conversion: ModulePass) -> None:
    module = _parse()
    ConvertScfToCf().apply(make_context(), module)  # the kernel's loop becomes cf branches
    host_before = _printed(_function(module, "host"))
    kernel_before = _printed(_function(module, "kernel"))
    conversion.apply(make_context(), module)
    module.verify()
    assert _printed(_function(module, "host")) == host_before
    assert _printed(_function(module, "kernel")) != kernel_before


@pytest.mark.parametrize("conversion", CONVERSIONS, ids=lambda p: p.name)
def test_each_pass_converts_only_its_dialect(conversion: ModulePass) -> None:
    dialect = conversion.name.removeprefix("convert-").removesuffix("-to-llvm")
    module = _parse()
    ConvertScfToCf().apply(make_context(), module)
    conversion.apply(make_context(), module)
    module.verify()
    remaining = _non_llvm_ops(_function(module, "kernel"))
    assert not any(name.startswith(dialect + ".") for name in remaining)
    # The others are still there, reached through casts.
    assert any(not name.startswith(("builtin.", dialect + ".")) for name in remaining)


# ---------------------------------------------------------------------------------------------
# Partial conversion: any order gives the same all-llvm kernel


def _converted(order: tuple[ModulePass, ...]) -> ModuleOp:
    module = _parse()
    context = make_context()
    ConvertScfToCf().apply(context, module)
    for conversion in order:
        conversion.apply(context, module)
        module.verify()
    ReconcileUnrealizedCastsPass().apply(context, module)
    module.verify()
    return module


def test_every_order_gives_the_same_llvm_kernel() -> None:
    reference = _converted(tuple(CONVERSIONS))
    kernel = _function(reference, "kernel")
    assert _non_llvm_ops(kernel) == []
    expected = _printed(kernel)
    for order in itertools.permutations(CONVERSIONS):
        module = _converted(order)
        assert _printed(_function(module, "kernel")) == expected, [p.name for p in order]


def test_casts_are_looked_through_not_stacked() -> None:
    # The kernel's parameters are !llvm.ptr<1>: accesses use them directly, address space kept.
    module = _converted(tuple(CONVERSIONS))
    kernel = _function(module, "kernel")
    assert not any(isinstance(op, UnrealizedConversionCastOp) for op in kernel.walk())
    geps = [op for op in kernel.walk() if isinstance(op, llvm.GEPOp)]
    assert {gep.ptr.type for gep in geps} == {llvm.LLVMPointerType(IntAttr(1)), llvm.LLVMPointerType()}


# ---------------------------------------------------------------------------------------------
# Failures, options, registry


def test_unsupported_op_fails_with_the_op() -> None:
    module = _parse(
        """llvm.func @k() {
             %a = memref.alloc() : memref<4xf32>
             llvm.return
           }"""
    )
    with pytest.raises(PassFailure) as failure:
        ConvertMemRefToLLVM().apply(make_context(), module)
    assert failure.value.op.name == "memref.alloc"
    assert "heap" in failure.value.message


def test_failure_leaves_earlier_ops_valid() -> None:
    module = _parse(
        """llvm.func @k(%a: i32) {
             %s = arith.addi %a, %a : i32
             %p = math.ipowi %s, %s : i32
             llvm.return
           }"""
    )
    with pytest.raises(PassFailure) as failure:
        ConvertMathToLLVM().apply(make_context(), module)
    assert failure.value.op.name == "math.ipowi"
    module.verify()


def test_math_library_option() -> None:
    assert ConvertMathToLLVM(library="libdevice").library == "libdevice"
    with pytest.raises(ValueError, match="library must be one of libm, libdevice"):
        ConvertMathToLLVM(library="cuda")
    with pytest.raises(PipelineError, match="library must be one of"):
        build_pipeline("convert-math-to-llvm{library=cuda}", all_passes(), mlir_syntax=False)
    (built,) = build_pipeline("convert-math-to-llvm{library=libdevice}", all_passes(), mlir_syntax=False)
    assert built == ConvertMathToLLVM(library="libdevice")


@pytest.mark.parametrize("conversion", CONVERSIONS, ids=lambda p: p.name)
def test_registered(conversion: ModulePass) -> None:
    assert get_pass(conversion.name) is type(conversion)


def test_library_functions_are_declared_once() -> None:
    module = _converted(tuple(CONVERSIONS))
    declarations = [
        op.sym_name.data for op in module.body.block.ops if isinstance(op, llvm.FuncOp) and not op.body.blocks
    ]
    assert declarations == ["expf"]
    assert isinstance(next(iter(module.body.block.ops)), llvm.FuncOp)
    assert not any(isinstance(op, func.FuncOp) and op.sym_name.data == "expf" for op in module.walk())
