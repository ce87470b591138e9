"""The bodies of `llvm.func`s translated to LLVM IR, op by op (`llvm_translate.py` says why each
handler exists and what the translation does around them).

What: `FunctionTranslator(op, function, target).translate()` fills the declared llvmlite
`function` with the body of `op`; `reverse_post_order` orders a region's blocks.

Algorithm: one llvmlite block per xDSL block reachable from the entry and a phi per argument of
each non-entry block; blocks in reverse post-order, so every dominating definition is translated
before its uses; the phis' incoming values last, from the edges the branches recorded. An op
goes to its handler in `_HANDLERS`, else to a cast, a math intrinsic (mangled with its overload
type) or xDSL's `convert_op` for the ops xDSL 0.74 translates correctly (`_DELEGATED`). On x86
targets non-temporal stores get `!nontemporal` and each `ret` of their function an `sfence`.

Preconditions: the function was declared (`llvm_translate.translate_module`); its body holds only
`llvm` dialect ops. Limits: those of `llvm_translate.py`, each a `TranslationError` naming the op.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from llvmlite import ir
from xdsl.backend.llvm.convert_op import convert_op as xdsl_convert_op
from xdsl.dialects import llvm
from xdsl.ir import Block, Operation, SSAValue

from mlc.backend.errors import TranslationError
from mlc.backend.llvm_types import (
    TargetDescription,
    address_space,
    constant,
    convert_type,
    intrinsic_type_suffix,
    reported_as,
)
from mlc.dialects import llvm_extra


def reverse_post_order(entry: Block) -> list[Block]:
    """The blocks reachable from `entry`, each after all of its dominators."""
    order: list[Block] = []
    visited = {entry}
    stack: list[tuple[Block, Iterator[Block]]] = [(entry, iter(_successors(entry)))]
    while stack:
        block, successors = stack[-1]
        successor = next(successors, None)
        if successor is None:
            order.append(block)
            stack.pop()
        elif successor not in visited:
            visited.add(successor)
            stack.append((successor, iter(_successors(successor))))
    order.reverse()
    return order


def _successors(block: Block) -> Sequence[Block]:
    terminator = block.last_op
    return terminator.successors if terminator is not None else ()


_UNARY_INTRINSICS: dict[type[Operation], str] = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FExpOp: "llvm.exp",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FLogOp: "llvm.log",
    llvm.FLog2Op: "llvm.log2",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FFloorOp: "llvm.floor",
}

_BINARY_INTRINSICS: dict[type[Operation], str] = {
    llvm.FPowOp: "llvm.pow",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
    llvm.FCopySignOp: "llvm.copysign",
}

_CASTS: dict[type[Operation], str] = {
    llvm.TruncOp: "trunc",
    llvm.ZExtOp: "zext",
    llvm.SExtOp: "sext",
    llvm.FPTruncOp: "fptrunc",
    llvm.FPExtOp: "fpext",
    llvm.SIToFPOp: "sitofp",
    llvm.PtrToIntOp: "ptrtoint",
    llvm.IntToPtrOp: "inttoptr",
    llvm.BitcastOp: "bitcast",
    llvm_extra.FPToSIOp: "fptosi",
    llvm_extra.FPToUIOp: "fptoui",
    llvm_extra.UIToFPOp: "uitofp",
    llvm_extra.AddrSpaceCastOp: "addrspacecast",
}

# Ops whose translation in xDSL 0.74 is correct: they only combine already translated values.
_DELEGATED: tuple[type[Operation], ...] = (
    llvm.AddOp,
    llvm.SubOp,
    llvm.MulOp,
    llvm.UDivOp,
    llvm.SDivOp,
    llvm.URemOp,
    llvm.SRemOp,
    llvm.ShlOp,
    llvm.LShrOp,
    llvm.AShrOp,
    llvm.AndOp,
    llvm.OrOp,
    llvm.XOrOp,
    llvm.FAddOp,
    llvm.FSubOp,
    llvm.FMulOp,
    llvm.FDivOp,
    llvm.FRemOp,
    llvm.FNegOp,
    llvm.ICmpOp,
    llvm.SelectOp,
    llvm.ExtractValueOp,
    llvm.InsertValueOp,
    llvm.InsertElementOp,
    llvm.ShuffleVectorOp,
    llvm.UnreachableOp,
    llvm.MaskedStoreOp,
    llvm.VectorReduceFAddOp,
    llvm.VectorReduceFMulOp,
)


def _fast_math(op: Operation) -> list[str]:
    flags = getattr(op, "fastmathFlags", None)
    if not isinstance(flags, llvm.FastMathAttr):
        return []
    return sorted(flag.value for flag in flags.data)


X86_ARCHITECTURES = ("x86_64", "i386", "i686")
"""Triples' architectures whose non-temporal stores are emitted and fenced."""
SFENCE_INTRINSIC = "llvm.x86.sse.sfence"


class FunctionTranslator:
    """Translates the body of one `llvm.func` into its declared llvmlite function."""

    def __init__(self, op: llvm.FuncOp, function: ir.Function, target: TargetDescription):
        self.op = op
        self.function = function
        self.target = target
        self.module: ir.Module = function.module
        self.values: dict[SSAValue, ir.Value] = {}
        self.blocks: dict[Block, ir.Block] = {}
        self.phi_edges: list[tuple[ir.PhiInstr, SSAValue, ir.Block, Operation]] = []
        self.streams = target.triple.startswith(X86_ARCHITECTURES) and any(
            isinstance(o, llvm.StoreOp) and o.nontemporal is not None for o in op.walk()
        )
        """Whether the function's non-temporal stores are emitted (x86), each `ret` fenced."""

    def translate(self) -> None:
        region_blocks = list(self.op.body.blocks)
        order = reverse_post_order(region_blocks[0])
        reachable = set(order)
        for index, block in enumerate(b for b in region_blocks if b in reachable):
            self.blocks[block] = self.function.append_basic_block("entry" if index == 0 else f"bb{index}")
        for argument, value in zip(region_blocks[0].args, self.function.args):
            self.bind(argument, value)
        for block in order[1:]:
            builder = ir.IRBuilder(self.blocks[block])
            for argument in block.args:
                with reported_as(self.op):
                    self.bind(argument, builder.phi(convert_type(argument.type)))
        for block in order:
            builder = ir.IRBuilder(self.blocks[block])
            for op in block.ops:
                with reported_as(op):
                    self.translate_op(op, builder)
        for phi, value, predecessor, branch in self.phi_edges:
            phi.add_incoming(self.value(value, branch), predecessor)

    def value(self, value: SSAValue, user: Operation) -> ir.Value:
        try:
            return self.values[value]
        except KeyError:
            raise TranslationError(user, "uses a value that is not defined before it in dominance order") from None

    def operands(self, op: Operation) -> list[ir.Value]:
        return [self.value(operand, op) for operand in op.operands]

    def translate_op(self, op: Operation, builder: ir.IRBuilder) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is not None:
            handler(self, op, builder)
        elif type(op) in _CASTS:
            self.cast(op, builder)
        elif type(op) in _UNARY_INTRINSICS or type(op) in _BINARY_INTRINSICS:
            self.math_intrinsic(op, builder)
        elif isinstance(op, _DELEGATED):
            for operand in op.operands:
                self.value(operand, op)  # report undefined operands as ours, not as a KeyError
            xdsl_convert_op(op, builder, self.values)
            for result in op.results:
                self.bind(result, self.values[result])
        elif op.dialect_name() != "llvm":
            raise TranslationError(op, "is not an llvm dialect op; lower it before translating to LLVM IR")
        else:
            raise TranslationError(op, "cannot be translated to LLVM IR (not supported by mlc's translator)")

    def bind(self, value: SSAValue, translated: ir.Value) -> None:
        """Records the translation of `value`, named after it when it is a new instruction."""
        self.values[value] = translated
        if value.name_hint and isinstance(translated, ir.Instruction | ir.Argument):
            translated.name = value.name_hint  # llvmlite makes names unique per function

    def define(self, op: Operation, translated: ir.Value) -> None:
        self.bind(op.results[0], translated)

    # Memory --------------------------------------------------------------------------------

    def load(self, op: llvm.LoadOp, builder: ir.IRBuilder) -> None:
        if op.ordering.value.data != 0:
            raise TranslationError(op, "atomic loads are not supported")
        instruction = builder.load(self.value(op.ptr, op), typ=convert_type(op.dereferenced_value.type))
        if op.alignment is not None:
            instruction.align = op.alignment.value.data
        self.define(op, instruction)

    def store(self, op: llvm.StoreOp, builder: ir.IRBuilder) -> None:
        if op.ordering is not None and op.ordering.value.data != 0:
            raise TranslationError(op, "atomic stores are not supported")
        if op.volatile_ is not None:
            raise TranslationError(op, "volatile stores are not supported")
        instruction = builder.store(self.value(op.value, op), self.value(op.ptr, op))
        if op.alignment is not None:
            instruction.align = op.alignment.value.data
        if self.streams and op.nontemporal is not None:
            instruction.set_metadata("nontemporal", self.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))

    def alloca(self, op: llvm.AllocaOp, builder: ir.IRBuilder) -> None:
        result_type = op.res.type
        if isinstance(result_type, llvm.LLVMPointerType) and address_space(result_type) != 0:
            raise TranslationError(op, "allocas outside address space 0 are not supported")
        instruction = builder.alloca(convert_type(op.elem_type), size=self.value(op.size, op))
        instruction.type = ir.PointerType()  # llvmlite makes a typed pointer
        if op.alignment is not None:
            instruction.align = op.alignment.value.data
        self.define(op, instruction)

    def getelementptr(self, op: llvm.GEPOp, builder: ir.IRBuilder) -> None:
        # Opaque pointers need no bitcast: the source element type travels with the GEP.
        dynamic = iter(op.ssa_indices)
        indices = [
            self.value(next(dynamic), op) if index == llvm.GEP_USE_SSA_VAL else ir.Constant(ir.IntType(32), index)
            for index in op.rawConstantIndices.iter_values()
        ]
        pointer = self.value(op.ptr, op)
        source_type = convert_type(op.elem_type)
        self.define(op, builder.gep(pointer, indices, inbounds=op.inbounds is not None, source_etype=source_type))

    def address_of(self, op: llvm.AddressOfOp, builder: ir.IRBuilder) -> None:
        name = op.global_name.root_reference.data
        symbol = self.module.globals.get(name)
        if symbol is None:
            raise TranslationError(op, f"@{name} is not an llvm.mlir.global or llvm.func of this module")
        if isinstance(symbol, ir.Function):
            # Functions keep their typed pointer type (calls need it): refer to them opaquely.
            symbol = ir.FormattedConstant(ir.PointerType(), symbol.get_reference())
        self.define(op, symbol)

    # Values --------------------------------------------------------------------------------

    def constant(self, op: llvm.ConstantOp, builder: ir.IRBuilder) -> None:
        self.define(op, constant(convert_type(op.result.type), op.value))

    def zero(self, op: llvm.ZeroOp, builder: ir.IRBuilder) -> None:
        self.define(op, ir.Constant(convert_type(op.res.type), None))

    def undef(self, op: llvm.UndefOp, builder: ir.IRBuilder) -> None:
        self.define(op, ir.Constant(convert_type(op.res.type), ir.Undefined))

    def cast(self, op: Operation, builder: ir.IRBuilder) -> None:
        (value,) = self.operands(op)
        self.define(op, getattr(builder, _CASTS[type(op)])(value, convert_type(op.results[0].type)))

    def select(self, op: llvm_extra.SelectOp, builder: ir.IRBuilder) -> None:
        condition, when_true, when_false = self.operands(op)
        self.define(op, builder.select(condition, when_true, when_false))

    def fcmp(self, op: llvm.FCmpOp | llvm_extra.FCmpOp, builder: ir.IRBuilder) -> None:
        predicate = llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value.lstrip("_")
        lhs, rhs = self.operands(op)
        # llvmlite passes a predicate it does not abbreviate ('oeq', 'true', 'uno', ...) through.
        self.define(op, builder.fcmp_ordered(predicate, lhs, rhs, flags=_fast_math(op)))

    def extract_element(self, op: llvm_extra.ExtractElementOp, builder: ir.IRBuilder) -> None:
        self.define(op, builder.extract_element(self.value(op.vector, op), self.value(op.position, op)))

    def inline_asm(self, op: llvm.InlineAsmOp, builder: ir.IRBuilder) -> None:
        arguments = self.operands(op)
        result_type = convert_type(op.res.type) if op.res is not None else ir.VoidType()
        function_type = ir.FunctionType(result_type, [a.type for a in arguments])
        assembly = ir.InlineAsm(
            function_type, op.asm_string.data, op.constraints.data, side_effect=op.has_side_effects is not None
        )
        result = builder.call(assembly, arguments)
        if op.res is not None:
            self.define(op, result)

    # Calls and intrinsics ------------------------------------------------------------------

    def check_intrinsic(self, op: Operation, name: str, result_type: ir.Type) -> None:
        check = self.target.unsupported_intrinsic
        problem = check(name, result_type, _fast_math(op)) if check is not None and name.startswith("llvm.") else None
        if problem is not None:
            raise TranslationError(op, f"calls @{name}, which {problem}")

    def declared(self, op: Operation, name: str, function_type: ir.FunctionType) -> ir.Function:
        """The function `name` of `function_type`, declared now unless it exists already."""
        self.check_intrinsic(op, name, function_type.return_type)
        existing = self.module.globals.get(name)
        if existing is None:
            return ir.Function(self.module, function_type, name)
        if not isinstance(existing, ir.Function):
            raise TranslationError(op, f"@{name} is a global variable, not a function")
        if existing.function_type != function_type:
            raise TranslationError(
                op, f"calls @{name} as '{function_type}', but it is declared as '{existing.function_type}'"
            )
        return existing

    def math_intrinsic(self, op: Operation, builder: ir.IRBuilder) -> None:
        arguments = self.operands(op)
        result_type = convert_type(op.results[0].type)
        base = _UNARY_INTRINSICS.get(type(op)) or _BINARY_INTRINSICS[type(op)]
        name = f"{base}.{intrinsic_type_suffix(result_type)}"
        function = self.declared(op, name, ir.FunctionType(result_type, [a.type for a in arguments]))
        self.define(op, builder.call(function, arguments, fastmath=_fast_math(op)))

    def fma(self, op: llvm.FMAOp, builder: ir.IRBuilder) -> None:
        arguments = self.operands(op)
        result_type = convert_type(op.res.type)
        name = f"llvm.fma.{intrinsic_type_suffix(result_type)}"
        function = self.declared(op, name, ir.FunctionType(result_type, [result_type] * 3))
        self.define(op, builder.call(function, arguments, fastmath=_fast_math(op)))

    def call_intrinsic(self, op: llvm.CallIntrinsicOp, builder: ir.IRBuilder) -> None:
        if op.op_bundle_operands:
            raise TranslationError(op, "operand bundles are not supported")
        arguments = [self.value(a, op) for a in op.args]
        result_type = convert_type(op.ress.type) if op.ress is not None else ir.VoidType()
        # The caller has mangled overloaded names (`llvm.maximum.f32`); LLVM checks the signature.
        function = self.declared(op, op.intrin.data, ir.FunctionType(result_type, [a.type for a in arguments]))
        result = builder.call(function, arguments, fastmath=_fast_math(op))
        if op.ress is not None:
            self.bind(op.ress, result)

    def call(self, op: llvm.CallOp, builder: ir.IRBuilder) -> None:
        if op.callee is None:
            raise TranslationError(op, "indirect calls are not supported")
        if op.op_bundle_operands:
            raise TranslationError(op, "operand bundles are not supported")
        name = op.callee.string_value()
        callee = self.module.globals.get(name)
        if not isinstance(callee, ir.Function):
            raise TranslationError(op, f"@{name} is not an llvm.func of this module")
        self.check_intrinsic(op, name, callee.function_type.return_type)
        arguments = [self.value(a, op) for a in op.args]
        fixed = len(callee.function_type.args)
        if len(arguments) < fixed or (len(arguments) > fixed and not callee.function_type.var_arg):
            raise TranslationError(op, f"passes {len(arguments)} arguments to @{name}, which takes {fixed}")
        convention = op.CConv.convention.data
        tail = op.TailCallKind.data.value
        result = builder.call(
            callee,
            arguments,
            cconv=None if convention == "ccc" else convention,  # None: the callee's own convention
            tail=False if tail == "none" else tail,
            fastmath=_fast_math(op) if op.returned is not None else [],
        )
        if op.returned is not None:
            self.bind(op.returned, result)

    # Control flow --------------------------------------------------------------------------

    def branch_to(self, op: Operation, successor: Block, arguments: Sequence[SSAValue]) -> ir.Block:
        parent = op.parent_block()
        assert parent is not None
        for argument, value in zip(successor.args, arguments):
            phi = self.values[argument]
            assert isinstance(phi, ir.PhiInstr)
            self.phi_edges.append((phi, value, self.blocks[parent], op))
        return self.blocks[successor]

    def br(self, op: llvm.BrOp, builder: ir.IRBuilder) -> None:
        builder.branch(self.branch_to(op, op.successor, op.arguments))

    def cond_br(self, op: llvm.CondBrOp, builder: ir.IRBuilder) -> None:
        if op.then_block is op.else_block and (op.then_arguments or op.else_arguments):
            raise TranslationError(op, "both successors are the same block with arguments; LLVM has one phi per edge")
        then_block = self.branch_to(op, op.then_block, op.then_arguments)
        else_block = self.branch_to(op, op.else_block, op.else_arguments)
        builder.cbranch(self.value(op.cond, op), then_block, else_block)

    def return_(self, op: llvm.ReturnOp, builder: ir.IRBuilder) -> None:
        if self.streams:  # see Non-temporal stores in the module docstring
            builder.call(self.declared(op, SFENCE_INTRINSIC, ir.FunctionType(ir.VoidType(), [])), [])
        if op.arg is not None:
            builder.ret(self.value(op.arg, op))
        else:
            builder.ret_void()


_HANDLERS = {
    llvm.LoadOp: FunctionTranslator.load,
    llvm.StoreOp: FunctionTranslator.store,
    llvm.AllocaOp: FunctionTranslator.alloca,
    llvm.GEPOp: FunctionTranslator.getelementptr,
    llvm.AddressOfOp: FunctionTranslator.address_of,
    llvm.ConstantOp: FunctionTranslator.constant,
    llvm.ZeroOp: FunctionTranslator.zero,
    llvm.UndefOp: FunctionTranslator.undef,
    llvm.FCmpOp: FunctionTranslator.fcmp,
    llvm_extra.FCmpOp: FunctionTranslator.fcmp,
    llvm_extra.SelectOp: FunctionTranslator.select,
    llvm_extra.ExtractElementOp: FunctionTranslator.extract_element,
    llvm.InlineAsmOp: FunctionTranslator.inline_asm,
    llvm.FMAOp: FunctionTranslator.fma,
    llvm.CallIntrinsicOp: FunctionTranslator.call_intrinsic,
    llvm.CallOp: FunctionTranslator.call,
    llvm.BrOp: FunctionTranslator.br,
    llvm.CondBrOp: FunctionTranslator.cond_br,
    llvm.ReturnOp: FunctionTranslator.return_,
}
