"""The rewriting half of loop-promote-shared: one promotion's shared allocation, its copy and its reads.

`PromotionRewriter.apply` performs steps 4-6 of `loop/loop_promote_shared.py`'s algorithm for one
`Promotion` that `analysis/shared_memory_promotion.py` planned: the shared buffer (padded or swizzled),
the cooperative copy at the start of the scope's body (through registers, as 16-byte async copies
in a staged pipeline, or as TMA bulk copies), and each read redirected to the buffer. The pass
decides what to promote and with how many stages; this module only rewrites.

Preconditions and limits: those of the pass (see its docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Block, Operation, SSAValue

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import AffineForm, constant_index
from mlc.transforms.analysis.shared_memory_promotion import (
    COPY_BYTES,
    SWIZZLE_BYTES,
    Promotion,
    ScopeAnalysis,
    element_type_of,
    is_inside,
    needs_swizzle,
    scope_body,
)
from mlc.transforms.lowering.async_pipeline import StagedLoop, erase_block
from mlc.transforms.lowering.tma_pipeline import TmaStagedLoop, bulk_copies, bulk_copies_possible
from mlc.transforms.lowering.chunk_access import ChunkAccesses, Emitter, emit_if, zero_of
from mlc.transforms.lowering.shared_copy import (
    Counter,
    chunk_coordinates,
    counter_value,
    last_iteration,
    move_ops,
    redirect_group,
    redirect_read,
    require_parameter_alignment,
    store_chunk,
    store_transposed,
)


class PromotionRewriter:
    """Emits the allocation, the copy and the rewritten reads of one promotion."""

    def __init__(self, kernel: loop.KernelOp, promotion: Promotion, analysis: ScopeAnalysis):
        self.kernel = kernel
        self.promotion = promotion
        self.analysis = analysis

    def apply(self, reason: str, stages: int = 1) -> None:
        """Rewrites; `stages` >= 2 asks for an async-copy pipeline (`async_pipeline.py`) when the
        scope and the copy allow one (`can_copy_async`), else each run copies through registers."""
        promotion = self.promotion
        extents = promotion.shared_extents
        shape = [*extents[:-1], extents[-1] + promotion.padding]
        scope = promotion.scope
        last = last_iteration(scope) if isinstance(scope, scf.ForOp) else None
        swizzled = needs_swizzle(promotion.sites)
        thread_loop = self.analysis.thread_loop
        bulk = stages >= 2 and last is not None and swizzled and bulk_copies_possible(self.kernel, promotion.source, extents, scope, thread_loop)
        staged = stages >= 2 and last is not None and (bulk or self.can_copy_async())
        if swizzled and not staged:
            raise PassFailure(promotion.sites[0].op, "loop.wgmma needs its operands staged by 16-byte async copies in a loop (2 or more stages that fit in shared memory)")
        space = IntegerAttr(loop.SHARED_MEMORY_SPACE, i64)
        allocation = memref.AllocaOp.get(element_type_of(promotion.source), COPY_BYTES, [stages, *shape] if staged else shape, memory_space=space)
        allocation.memref.name_hint = f"{promotion.source.name_hint or 'buffer'}_shared"
        attributes.PROMOTED.write(allocation, StringAttr(reason + (f"; {stages} stages of {'bulk tensor' if bulk else 'async'} copies" if staged else "")))
        if swizzled:
            attributes.SWIZZLE.write(allocation, IntegerAttr(SWIZZLE_BYTES, i64))
        thread_loop.parent_block().insert_op_before(allocation, thread_loop)  # type: ignore[union-attr]
        staging = Emitter(Block())
        origins = self._origins(staging, None)
        stage = None
        body = scope_body(scope)
        if staged:
            assert isinstance(scope, scf.ForOp) and last is not None
            bounds = (constant_index(scope.lb), constant_index(scope.step))
            if bulk:
                pipeline: StagedLoop | TmaStagedLoop = TmaStagedLoop(scope, stages, bounds, last, thread_loop)  # type: ignore[arg-type]
                pipeline.add_copies(bulk_copies(promotion.source, allocation.memref, self._origins))
            else:
                pipeline = StagedLoop(scope, stages, bounds, last)  # type: ignore[arg-type]
                pipeline.add_copies(lambda emitter, counter, slot: self._async_copies(emitter, allocation.memref, counter, slot))
            stage = pipeline.current_stage()
            move_ops(staging, body, pipeline.wait.next_op)
        else:
            if last is None:
                self._store_box(staging, allocation.memref, self._load_box(staging, origins))
            else:
                scope = self._prefetch(staging, allocation.memref, scope, last)
            body = scope_body(scope)
            move_ops(staging, body, body.first_op)
        if promotion.groups:
            for group in promotion.groups:
                redirect_group(group, allocation.memref, origins)
        else:
            for site in promotion.sites:
                redirect_read(site, allocation.memref, origins, stage, self._aligned)

    def can_copy_async(self) -> bool:
        """Whether every chunk of the copy can be one 16-byte async copy (a trial emission)."""
        if self.promotion.transposed:
            return False
        scratch = Emitter(Block())
        origins = self._origins(scratch, None)
        chunk, _ = self._rounds(scratch)[0]
        extents = tuple(self.promotion.box.extents)
        accesses = ChunkAccesses(extents, self.promotion.copy_width, self._coordinates(scratch, chunk), self.analysis.facts, lambda *_: None)
        placeholder = scratch.emit(memref.AllocaOp.get(element_type_of(self.promotion.source), 0, [1, *extents], memory_space=IntegerAttr(3, i64)))
        possible = accesses.async_copy(scratch, self.promotion.source, [(o, o) for o in origins], extents, placeholder, [chunk] * (len(extents) + 1))
        erase_block(scratch.builder.insertion_point.block)
        return possible

    def _async_copies(self, emitter: Emitter, shared: SSAValue, counter: SSAValue, stage: SSAValue) -> None:
        """This thread's chunks of the box at `counter`, as async copies into `stage` of `shared`."""
        origins, extents = self._origins(emitter, counter), tuple(self.promotion.box.extents)
        for chunk, guarded in self._rounds(emitter):

            def copy(inner: Emitter, chunk: SSAValue = chunk) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                accesses = ChunkAccesses(extents, self.promotion.copy_width, coordinates, self.analysis.facts, self._require_alignment)
                copied = accesses.async_copy(inner, self.promotion.source, [(o, o) for o in origins], extents, shared, [stage, *coordinates])
                assert copied, "can_copy_async said every chunk can"
                return []

            emit_if(emitter, self._guard(emitter, chunk), [], copy, None) if guarded else copy(emitter)

    def _prefetch(self, staging: Emitter, shared: SSAValue, scope: scf.ForOp, last: Counter) -> scf.ForOp:
        """Software pipelining of the copy: each run loads the next run's box into registers.

        The first box is loaded before the loop; a run stores the box it was handed, then loads
        the next one (at `min(counter + step, last counter)`, so that no check is needed past the
        end) while it computes. The loop carries the loaded elements.
        """
        before = Emitter(Block())
        first_box = self._load_box(before, self._origins(before, scope.lb))
        move_ops(before, scope.parent_block(), scope)  # type: ignore[arg-type]
        body = scope.body.block
        carried = [body.insert_arg(element.type, len(body.args)) for element in first_box]
        self._store_box(staging, shared, carried)
        following = staging.emit(arith.AddiOp(body.args[0], scope.step))
        next_counter = staging.emit(arith.MinUIOp(following, counter_value(staging, last)))
        next_box = self._load_box(staging, self._origins(staging, next_counter))
        terminator = body.last_op
        assert isinstance(terminator, scf.YieldOp)
        body.insert_op_before(scf.YieldOp(*terminator.arguments, *next_box), terminator)
        body.erase_op(terminator)
        pipelined = scf.ForOp(scope.lb, scope.ub, scope.step, [*scope.iter_args, *first_box], scope.detach_region(scope.body))
        pipelined.attributes |= scope.attributes
        scope.parent_block().insert_op_before(pipelined, scope)  # type: ignore[union-attr]
        for old, new in zip(scope.results, pipelined.results):
            old.replace_all_uses_with(new)
        scope.parent_block().erase_op(scope)  # type: ignore[union-attr]
        self.promotion.scope = pipelined
        return pipelined

    def _origins(self, emitter: Emitter, counter: SSAValue | None) -> list[SSAValue]:
        """The box's first element, per dimension, with the scope's counter at `counter`."""
        box = self.promotion.box
        return [self._origin(emitter, uniform, low, counter) for uniform, low in zip(box.uniform, box.low)]

    def _origin(self, emitter: Emitter, uniform: AffineForm, low: int, counter: SSAValue | None) -> SSAValue:
        total = emitter.index(low)
        for leaf, coefficient in uniform.terms:
            value = self._materialize(emitter, leaf, counter)
            if coefficient != 1:
                value = emitter.emit(arith.MuliOp(value, emitter.index(coefficient)))
            total = emitter.add(value, total)
        total.name_hint = "origin"
        return total

    def _materialize(self, emitter: Emitter, value: SSAValue, counter: SSAValue | None) -> SSAValue:
        """`value` at the start of a run of the scope (its counter at `counter` when given)."""
        scope = self.promotion.scope
        if isinstance(scope, scf.ForOp) and value is scope.body.block.args[0]:
            return value if counter is None else counter
        if not is_inside(value, scope) or value in self.analysis.uniform_counters:
            return value
        owner = value.owner
        assert isinstance(owner, Operation)
        clone = owner.clone(value_mapper={v: self._materialize(emitter, v, counter) for v in owner.operands})
        emitter.builder.insert(clone)
        return clone.results[owner.results.index(value)]

    def _rounds(self, emitter: Emitter) -> list[tuple[SSAValue, bool]]:
        """Each round of the copy: the chunk this thread moves, and whether it needs a guard."""
        promotion, threads = self.promotion, self.analysis.thread_loop.trip_count
        chunks = math.prod(promotion.box.extents) // promotion.copy_width
        thread = self.analysis.thread_loop.induction_variable
        return [
            (emitter.add(thread, emitter.index(start)) if start else thread, start + threads > chunks)
            for start in range(0, chunks, threads)
        ]

    def _coordinates(self, emitter: Emitter, chunk: SSAValue) -> list[SSAValue]:
        return chunk_coordinates(emitter, chunk, self.promotion.box.extents, self.promotion.copy_width)

    def _require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        require_parameter_alignment(self.kernel, memref_value, alignment)

    def _guard(self, emitter: Emitter, chunk: SSAValue) -> SSAValue:
        return emitter.below(chunk, math.prod(self.promotion.box.extents) // self.promotion.copy_width)

    def _load_box(self, emitter: Emitter, origins: list[SSAValue]) -> list[SSAValue]:
        """This thread's part of the box from global memory: `copy_width` elements per round."""
        width, element_type = self.promotion.copy_width, element_type_of(self.promotion.source)
        extents = tuple(self.promotion.box.extents)
        loaded: list[SSAValue] = []
        for chunk, guarded in self._rounds(emitter):

            def load(inner: Emitter, chunk: SSAValue = chunk) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                accesses = ChunkAccesses(extents, width, coordinates, self.analysis.facts, self._require_alignment)
                return accesses.load(inner, self.promotion.source, [(o, o) for o in origins], extents, None)

            if guarded:
                zeros = lambda inner: [inner.emit(arith.ConstantOp(zero_of(element_type)))] * width
                loaded += emit_if(emitter, self._guard(emitter, chunk), [element_type] * width, load, zeros)
            else:
                loaded += load(emitter)
        return loaded

    def _store_box(self, emitter: Emitter, shared: SSAValue, elements: Sequence[SSAValue]) -> None:
        """Writes what `_load_box` loaded into the shared buffer, round by round."""
        width = self.promotion.copy_width
        for position, (chunk, guarded) in enumerate(self._rounds(emitter)):
            piece = list(elements[position * width : (position + 1) * width])

            def store(inner: Emitter, chunk: SSAValue = chunk, piece: list[SSAValue] = piece) -> list[SSAValue]:
                coordinates = self._coordinates(inner, chunk)
                if self.promotion.transposed:
                    store_transposed(inner, shared, coordinates, piece)
                else:
                    store_chunk(inner, shared, coordinates, piece)
                return []

            if guarded:
                emit_if(emitter, self._guard(emitter, chunk), [], store, None)
            else:
                store(emitter)

    def _aligned(self, origin: SSAValue, width: int, shared: SSAValue) -> bool:
        row = shared.type.get_shape()[-1]  # type: ignore[attr-defined]
        return self.analysis.facts(origin).divisor % width == 0 and row % width == 0


# -- the pass ----------------------------------------------------------------------------------------
