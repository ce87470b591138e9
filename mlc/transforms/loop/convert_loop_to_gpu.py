"""convert-loop-to-gpu: map loop kernels onto a grid of blocks of threads.

Each `loop.kernel` becomes an `mlc_gpu.func`, each `loop.launch` an `mlc_gpu.launch` with the same
grid and block. The grid is the trip counts of the `block.*` loops, the block size along each
dimension the largest trip count of the `thread.*` loops. Then:

* a mapped loop's induction variable becomes `mlc_gpu.block_id` / `mlc_gpu.thread_id` and its body
  is inlined; a thread loop shorter than the block runs under `scf.if thread_id < trip count`;
* an unmapped `loop.parallel` becomes a sequential `scf.for` inside the thread;
* `loop.all_reduce` becomes its butterfly: `mlc_gpu.shuffle xor` within a warp, a shared-memory
  exchange between barriers across warps (see `lower_all_reduces`); it may sit in `scf.for`s whose
  bounds every thread shares (a chain kernel's key loop), which all threads run alike;
* code outside thread loops runs in every thread: pure ops and reads redundantly, writes only in
  thread 0 (`scf.if` on all thread ids being zero); buffers allocated there belong to the block
  and must be in shared memory;
* the loop level orders statements: everything in a thread loop happens before the next statement
  starts. Every thread loop that is followed by more work in its block gets an `mlc_gpu.barrier`
  after it (and so does the end of a sequential loop body holding thread loops), which is correct
  for any communication through shared or global memory within a block. Removing the barriers
  that no shared-memory hazard needs is the job of `gpu-insert-barriers`' analysis.

Preconditions: block loops enclose all thread loops (the loop verifier checks the nesting), at most
one loop per mapping on any path. Limits: at most three grid and three block dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator, MemoryEffectKind, get_effects, is_side_effect_free

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.gpu import ops as gpu
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.thread_analysis import is_loop_uniform, is_shared_memory_space
from mlc.transforms.lowering.loop_fission import has_commutative_combiner, sequentialize

_AXES = {"x": 0, "y": 1, "z": 2}


def launch_shape(kernel: loop.KernelOp) -> tuple[list[int], list[int]]:
    """(grid, block) sizes, three dimensions each."""
    grid, block = [1, 1, 1], [1, 1, 1]
    for op in kernel.walk():
        if isinstance(op, loop.ParallelOp) and op.mapping is not None:
            level, axis = op.mapping.data.split(".")
            sizes = grid if level == "block" else block
            sizes[_AXES[axis]] = max(sizes[_AXES[axis]], op.trip_count)
    return grid, block


def _uniformly_reached(op: Operation, thread_loop: loop.ParallelOp) -> bool:
    """Whether every thread of `thread_loop` reaches `op` equally often: `op` sits in its body or
    in `scf.for`s there whose bounds are the same in every thread (a chain kernel's key loop)."""
    parent = op.parent_op()
    while parent is not thread_loop:
        if not isinstance(parent, scf.ForOp) or not all(is_loop_uniform(v, thread_loop) for v in (parent.lb, parent.ub, parent.step)):
            return False
        parent = parent.parent_op()
    return True


def _bits(mask: int) -> list[int]:
    """The set bits of `mask` as values, lowest first."""
    return [1 << position for position in range(mask.bit_length()) if mask >> position & 1]


def _subsets(mask: int) -> list[int]:
    """Every value made of some of `mask`'s bits, in increasing order."""
    values = [0]
    for bit in _bits(mask):
        values += [value | bit for value in values]
    return sorted(values)


def _is_thread_loop(op: Operation) -> bool:
    return isinstance(op, loop.ParallelOp) and op.mapping_name() in loop.THREAD_MAPPINGS


def _contains_thread_loop(op: Operation) -> bool:
    return any(_is_thread_loop(inner) for inner in op.walk())


def _inside_thread_loop(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and not _is_thread_loop(parent):
        parent = parent.parent_op()
    return parent is not None


@dataclass
class KernelMapping:
    kernel: loop.KernelOp
    grid: list[int]
    block: list[int]

    def index_query(self, op_type: type[gpu.IndexQueryOp], axis: str, before: Operation) -> SSAValue:
        query = op_type(axis)
        Rewriter.insert_op(query, InsertPoint.before(before))
        return query.result

    def map_loop(self, parallel: loop.ParallelOp) -> None:
        """Replaces a mapped loop by its body, its induction variable by the hardware index."""
        level, axis = parallel.mapping.data.split(".")  # type: ignore[union-attr]
        query_type = gpu.BlockIdOp if level == "block" else gpu.ThreadIdOp
        index = self.index_query(query_type, axis, parallel)
        index.name_hint = parallel.induction_variable.name_hint
        parallel.induction_variable.replace_all_uses_with(index)
        body_ops = [op for op in parallel.body.block.ops if not isinstance(op, loop.YieldOp)]
        sizes = self.grid if level == "block" else self.block
        if parallel.trip_count < sizes[_AXES[axis]]:
            guard_body = Block()
            for op in body_ops:
                op.detach()
                guard_body.add_op(op)
            guard_body.add_op(scf.YieldOp())
            bound = arith.ConstantOp(IntegerAttr(parallel.trip_count, IndexType()))
            inside = arith.CmpiOp(index, bound, "ult")
            Rewriter.insert_op([bound, inside, scf.IfOp(inside, [], Region(guard_body))], InsertPoint.before(parallel))
        else:
            for op in body_ops:
                op.detach()
                Rewriter.insert_op(op, InsertPoint.before(parallel))
        parallel.detach()
        parallel.erase()

    def insert_barriers(self, block: Block) -> None:
        """A barrier after every thread loop followed by more work, and at the end of loop bodies."""
        for op in list(block.ops):
            for region in op.regions:
                for inner in region.blocks:
                    self.insert_barriers(inner)
            if not _is_thread_loop(op):
                continue
            later_work = False
            following = op.next_op
            while following is not None:
                if not is_side_effect_free(following) and not following.has_trait(IsTerminator):
                    later_work = True
                following = following.next_op
            in_loop_body = isinstance(block.parent_op(), scf.ForOp | scf.WhileOp)
            if later_work or in_loop_body:
                Rewriter.insert_op(gpu.BarrierOp(), InsertPoint.after(op))

    def guard_side_effects(self, block: Block) -> None:
        """Writes outside every thread loop happen once per block: in thread 0 only.

        Pure ops and reads run redundantly in every thread, so their results are everywhere.
        """
        for op in list(block.ops):
            if _is_thread_loop(op) or op.has_trait(IsTerminator) or isinstance(op, gpu.BarrierOp):
                continue
            if op.regions and _contains_thread_loop(op):
                for region in op.regions:
                    for inner in region.blocks:
                        self.guard_side_effects(inner)
                continue
            if isinstance(op, memref.AllocaOp | memref.AllocOp):
                self.check_block_level_allocation(op)
                continue
            effects = get_effects(op)
            if effects is not None and all(e.kind == MemoryEffectKind.READ for e in effects):
                continue
            if op.results:
                raise PassFailure(op, "an op with side effects and results outside thread loops cannot be mapped")
            self.run_in_first_thread(op)

    @staticmethod
    def check_block_level_allocation(op: Operation) -> None:
        """A buffer allocated outside thread loops belongs to the block: it must be shared."""
        space = op.results[0].type.memory_space  # type: ignore[attr-defined]
        if not (isinstance(space, IntegerAttr) and space.value.data == loop.SHARED_MEMORY_SPACE):
            raise PassFailure(op, "a buffer allocated outside thread loops must be in shared memory (memref space 3)")

    def run_in_first_thread(self, op: Operation) -> None:
        conditions: list[SSAValue] = []
        for axis, size in zip("xyz", self.block):
            if size > 1:
                thread = self.index_query(gpu.ThreadIdOp, axis, op)
                zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
                Rewriter.insert_op(zero, InsertPoint.before(op))
                is_zero = arith.CmpiOp(thread, zero, "eq")
                Rewriter.insert_op(is_zero, InsertPoint.before(op))
                conditions.append(is_zero.result)
        if not conditions:
            return
        condition = conditions[0]
        for other in conditions[1:]:
            both = arith.AndIOp(condition, other)
            Rewriter.insert_op(both, InsertPoint.before(op))
            condition = both.result
        body = Block()
        if_op = scf.IfOp(condition, [], Region(body))
        Rewriter.insert_op(if_op, InsertPoint.before(op))
        op.detach()
        body.add_ops([op, scf.YieldOp()])

    def lower_all_reduces(self) -> None:
        """Butterflies of `loop.all_reduce`: warp shuffles, then shared memory across warps.

        Mask bits below 5 select a lane of the same warp: one `mlc_gpu.shuffle xor` each, from the
        lowest bit. Higher bits select another warp, so values go through a shared buffer (one
        slot per thread) between barriers. With a commutative combiner (a single `addf`, `maxsi`,
        ... of its two arguments) every thread writes its value once, waits, reads the 2^k values
        of its group and combines them as a balanced tree, lowest index first: two barriers in
        all, and bit for bit the butterfly's result, since after each butterfly step every member
        of a group holds the same value when `combine(a, b) == combine(b, a)`. Other combiners
        exchange once per bit (two barriers each), exactly in the dialect's order.
        """
        scratch: dict[tuple[Block, Attribute], SSAValue] = {}
        for reduce in [op for op in self.kernel.walk() if isinstance(op, loop.AllReduceOp)]:
            thread_loop = reduce.enclosing_loop()
            assert thread_loop is not None
            if thread_loop.mapping_name() != "thread.x" or thread_loop.trip_count != self.block[0] or self.block[1:] != [1, 1]:
                raise PassFailure(reduce, "all_reduce is lowered for thread.x loops that span a one-dimensional block")
            if not _uniformly_reached(reduce, thread_loop):
                raise PassFailure(reduce, "all_reduce must be at the top level of its thread loop, or in scf.for loops with the same bounds for every thread (not under other control flow)")
            thread = thread_loop.induction_variable
            value = reduce.value
            mask = reduce.mask.value.data
            for bit in _bits(mask & (gpu.WARP_SIZE - 1)):
                value = self._combine(reduce, value, self._insert(gpu.ShuffleOp("xor", value, bit), reduce))
            warp_mask = mask & ~(gpu.WARP_SIZE - 1)
            if warp_mask:
                key = (thread_loop.parent_block(), value.type)
                if key not in scratch:
                    scratch[key] = self._shared_buffer(thread_loop, value.type)
                if has_commutative_combiner(reduce):
                    value = self._gather_and_combine(scratch[key], thread, value, warp_mask, reduce)
                else:
                    for bit in _bits(warp_mask):
                        value = self._combine(reduce, value, self._exchange(scratch[key], thread, value, bit, reduce))
            reduce.result.replace_all_uses_with(value)
            reduce.detach()
            reduce.erase()

    def _gather_and_combine(
        self, buffer: SSAValue, thread: SSAValue, value: SSAValue, mask: int, reduce: loop.AllReduceOp
    ) -> SSAValue:
        """Every value of the thread's group (threads differing only in `mask`), tree-combined."""
        Rewriter.insert_op(memref.StoreOp.get(value, buffer, [thread]), InsertPoint.before(reduce))
        Rewriter.insert_op(gpu.BarrierOp(), InsertPoint.before(reduce))
        clear = self._insert(arith.ConstantOp(IntegerAttr(~mask, IndexType())), reduce)
        base = self._insert(arith.AndIOp(thread, clear), reduce)
        members = []
        for offset in _subsets(mask):
            index = base if offset == 0 else self._insert(arith.OrIOp(base, self._index(offset, reduce)), reduce)
            members.append(self._insert(memref.LoadOp.get(buffer, [index]), reduce))
        Rewriter.insert_op(gpu.BarrierOp(), InsertPoint.before(reduce))
        while len(members) > 1:
            members = [self._combine(reduce, members[i], members[i + 1]) for i in range(0, len(members), 2)]
        return members[0]

    def _index(self, value: int, before: Operation) -> SSAValue:
        return self._insert(arith.ConstantOp(IntegerAttr(value, IndexType())), before)

    @staticmethod
    def _insert(op: Operation, before: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(before))
        return op.results[0]

    def _shared_buffer(self, thread_loop: loop.ParallelOp, element_type: Attribute) -> SSAValue:
        buffer_type = MemRefType(element_type, [thread_loop.trip_count], memory_space=IntegerAttr(loop.SHARED_MEMORY_SPACE, 64))
        allocation = memref.AllocaOp.get(element_type, shape=[thread_loop.trip_count], memory_space=buffer_type.memory_space)
        allocation.results[0].name_hint = "exchange"
        return self._insert(allocation, thread_loop)

    def _exchange(self, buffer: SSAValue, thread: SSAValue, value: SSAValue, bit: int, before: Operation) -> SSAValue:
        """The value of the thread whose index differs in `bit`, through shared memory."""
        Rewriter.insert_op(memref.StoreOp.get(value, buffer, [thread]), InsertPoint.before(before))
        Rewriter.insert_op(gpu.BarrierOp(), InsertPoint.before(before))
        offset = self._insert(arith.ConstantOp(IntegerAttr(bit, IndexType())), before)
        partner_index = self._insert(arith.XOrIOp(thread, offset), before)
        partner = self._insert(memref.LoadOp.get(buffer, [partner_index]), before)
        Rewriter.insert_op(gpu.BarrierOp(), InsertPoint.before(before))
        return partner

    def _combine(self, reduce: loop.AllReduceOp, value: SSAValue, partner: SSAValue) -> SSAValue:
        """The combiner region inlined on (own value, partner's value)."""
        mapping: dict[SSAValue, SSAValue] = dict(zip(reduce.body.block.args, (value, partner)))
        for op in reduce.body.block.ops:
            if isinstance(op, loop.YieldOp):
                return mapping.get(op.values[0], op.values[0])
            clone = op.clone(value_mapper=mapping)
            Rewriter.insert_op(clone, InsertPoint.before(reduce))
            mapping.update(zip(op.results, clone.results))
        raise PassFailure(reduce, "the combiner has no loop.yield")  # pragma: no cover - verified

    @property
    def shares_memory_within_thread_loops(self) -> bool:
        """Whether a thread loop touches a block's shared buffer (block-synchronous, see mlc_gpu)."""
        for allocation in self.kernel.walk():
            if isinstance(allocation, memref.AllocaOp) and is_shared_memory_space(allocation.memref):
                if any(_inside_thread_loop(use.operation) for use in allocation.memref.uses):
                    return True
        return False

    def lower(self) -> gpu.FuncOp:
        body = self.kernel.body.block
        block_synchronous = self.shares_memory_within_thread_loops
        self.lower_all_reduces()
        self.guard_side_effects(body)
        self.insert_barriers(body)
        for parallel in [p for p in self.kernel.walk() if isinstance(p, loop.ParallelOp)]:
            if parallel.mapping is None:
                sequentialize(parallel)
            else:
                self.map_loop(parallel)
        function = gpu.FuncOp(
            self.kernel.sym_name.data, list(self.kernel.function_type.inputs.data), self.grid, self.block
        )
        function.attributes |= self.kernel.attributes
        if block_synchronous:
            attributes.BLOCK_SYNCHRONOUS.write(function, UnitAttr())
        new_block = function.body.block
        for old_argument, new_argument in zip(body.args, new_block.args):
            new_argument.name_hint = old_argument.name_hint
            old_argument.replace_all_uses_with(new_argument)
        for op in list(body.ops):
            op.detach()
            new_block.add_op(gpu.ReturnOp() if isinstance(op, loop.ReturnOp) else op)
        return function


@dataclass(frozen=True)
class ConvertLoopToGpu(ModulePass):
    """Map loop kernels onto GPU blocks and threads (mlc_gpu.func) and their launches."""

    name = "convert-loop-to-gpu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        shapes: dict[str, tuple[list[int], list[int]]] = {}
        for kernel in [k for k in op.walk() if isinstance(k, loop.KernelOp)]:
            grid, block = launch_shape(kernel)
            shapes[kernel.sym_name.data] = (grid, block)
            function = KernelMapping(kernel, grid, block).lower()
            Rewriter.insert_op(function, InsertPoint.before(kernel))
            kernel.detach()
            kernel.erase()
        for launch in [l for l in op.walk() if isinstance(l, loop.LaunchOp)]:
            name = launch.kernel.root_reference.data
            if name not in shapes:
                continue  # a kernel already lowered for another target
            grid, block = shapes[name]
            Rewriter.insert_op(gpu.LaunchOp(launch.kernel, launch.arguments, grid, block), InsertPoint.before(launch))
            launch.detach()
            launch.erase()
