"""Warp roles: the two regions of an `scf.if {mlc.warp_roles}` run as independent coroutines.

A warp-specialized kernel splits its threads into a *producer* role (the lanes where the `scf.if`
condition holds: they issue the bulk copies) and a *consumer* role (the other lanes: they wait for
the data, compute, and release the stage). The two loops sit in divergent branches and meet only
through mbarriers, so the engine's lockstep execution of a branch to its end cannot run them: the
producer would wait forever for a stage the consumers have not released yet.

Algorithm. Each region runs in its own `Execution` (sharing the SSA values, with its own merge
state) on its own Python thread, but only one role runs at a time: a role holds the *baton* until
it ends or until `wait_until` finds its condition false (an mbarrier phase that has not
completed); it then passes the baton to the next role, round robin from itself, whose wait
condition now holds (or that has not waited yet). When every unfinished role waits on a condition
that does not hold, nothing can ever change: the waiting role that found it last reports the hang
(the mbarrier's `InterpreterError`, with the arrivals and bytes missing). The schedule is
deterministic (a thread runs only while it holds the baton), and it is a valid execution of the
kernel: the roles' only interactions are through mbarriers, whose semantics the schedule respects.
Within a role the lanes (its threads of every block) still run in lockstep: a wait returns when
the phase is complete for every lane's barrier, which is valid because blocks are independent.

Preconditions: the op is an `scf.if` with both regions; roles do not nest; a role does not reach
`mlc_gpu.barrier` (a block barrier that only some threads reach is reported as divergence), nor
commit or wait on cp.async groups shared with the other role. The results of the two regions are
merged after both ended, as a plain `scf.if` merges them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import scf
from xdsl.ir import Operation

from mlc.dialects import attributes
from mlc.interpreter.engine import Execution
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.operations import restrict
from mlc.interpreter.values import Mask, merge, zero_value

WARP_ROLES = attributes.WARP_ROLES.name


class _Abandoned(BaseException):
    """Unwinds a waiting role after another role failed (never escapes `RoleScheduler.run`)."""


@dataclass
class _Role:
    ready: Callable[[], bool] | None = None
    """The condition the role waits for, None while it runs or before it first waits."""
    describe: Callable[[], str] | None = None
    """What the role waits for, in words (for the report of a hang)."""
    finished: bool = False
    results: list[object] = field(default_factory=list)
    error: BaseException | None = None


class RoleScheduler:
    """Runs role bodies as coroutines that hand one baton to each other at their waits."""

    def __init__(self, count: int):
        self._roles = [_Role() for _ in range(count)]
        self._turn = 0
        self._hung: int | None = None
        """The waiting role that must report the hang (every unfinished role waits in vain)."""
        self._abandoned = False
        self._changed = threading.Condition()

    def run(self, bodies: list[Callable[[], list[object]]]) -> list[list[object]]:
        """Runs every body to its end (or the first error, raised here) and returns their results."""
        floating_point = np.geterr()  # numpy's error state is per thread: the roles take the caller's
        threads = [
            threading.Thread(target=self._body, args=(index, body, floating_point), daemon=True) for index, body in enumerate(bodies)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for role in self._roles:
            if role.error is not None:
                raise role.error
        return [role.results for role in self._roles]

    def wait_until(self, role_index: int, ready: Callable[[], bool], describe: Callable[[], str]) -> bool:
        """Called by the running role: returns True once `ready()` holds, or False when no role
        can run any more (every unfinished one waits on a condition that does not hold)."""
        if ready():
            return True
        with self._changed:
            role = self._roles[role_index]
            role.ready, role.describe = ready, describe
            following = self._next_runnable(role_index)
            if following is None:
                role.ready = None
                return False
            self._pass_to(following)
            self._await_turn(role_index)
            role.ready = None
            if self._hung == role_index:
                return False
            return True

    def other_waits(self, role_index: int) -> list[str]:
        """What the other unfinished roles wait for (when `wait_until` returned False)."""
        return [
            role.describe()
            for index, role in enumerate(self._roles)
            if index != role_index and not role.finished and role.describe is not None
        ]

    def _body(self, index: int, body: Callable[[], list[object]], floating_point: dict[str, str]) -> None:
        role = self._roles[index]
        try:
            with self._changed:
                self._await_turn(index)
            with np.errstate(**floating_point):
                role.results = body()
        except _Abandoned:
            pass
        except BaseException as error:  # noqa: BLE001 - re-raised by `run` in the caller's thread
            role.error = error
            with self._changed:
                self._abandoned = True
        finally:
            with self._changed:
                role.finished = True
                if not self._abandoned:
                    self._hand_on(index)
                self._changed.notify_all()

    def _hand_on(self, finished: int) -> None:
        """After role `finished` ended: the next runnable role runs, or a waiter reports its hang."""
        following = self._next_runnable(finished)
        if following is not None:
            self._pass_to(following)
            return
        waiting = [index for index, role in enumerate(self._roles) if not role.finished]
        if waiting:
            self._hung = waiting[0]
            self._pass_to(waiting[0])

    def _next_runnable(self, current: int) -> int | None:
        """The next role after `current` (round robin, not itself) that can run now."""
        count = len(self._roles)
        for step in range(1, count):
            index = (current + step) % count
            role = self._roles[index]
            if not role.finished and (role.ready is None or role.ready()):
                return index
        return None

    def _pass_to(self, index: int) -> None:
        self._turn = index
        self._changed.notify_all()

    def _await_turn(self, index: int) -> None:
        while self._turn != index:
            if self._abandoned:
                raise _Abandoned()
            self._changed.wait()
        if self._abandoned:
            raise _Abandoned()


def current_scheduler(execution: Execution) -> tuple[RoleScheduler, int] | None:
    """The scheduler and role index of the running role, None outside warp roles."""
    return getattr(execution, "warp_role", None)


def run_roles(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """`scf.if {mlc.warp_roles}`: the then-region (producer lanes) and the else-region (consumer
    lanes) as coroutines; their results merged as `scf.if` merges them."""
    assert isinstance(op, scf.IfOp)
    if current_scheduler(execution) is not None:
        raise InterpreterError("warp roles nest: a role runs another scf.if {mlc.warp_roles}", op)
    if not op.false_region.blocks:
        raise InterpreterError("an scf.if {mlc.warp_roles} needs both regions (producer, consumer)", op)
    condition = np.asarray(execution.get(op.cond), dtype=bool)
    regions = [(op.true_region, restrict(mask, condition)), (op.false_region, restrict(mask, ~condition))]
    present = [(region, role_mask) for region, (role_mask, any_lane) in regions if any_lane]
    scheduler = RoleScheduler(len(present))

    def body(index: int) -> Callable[[], list[object]]:
        region, role_mask = present[index]
        role_execution = Execution(execution.machine, execution.lanes, execution.level)
        role_execution.values = execution.values
        role_execution.warp_role = (scheduler, index)  # type: ignore[attr-defined]
        return lambda: role_execution.run_region(region, [], role_mask)

    results = scheduler.run([body(index) for index in range(len(present))])
    by_region = dict(zip((id(region) for region, _ in present), results))
    then_values = by_region.get(id(op.true_region))
    else_values = by_region.get(id(op.false_region))
    if then_values is None or else_values is None:
        values = then_values if then_values is not None else else_values
        return values if values is not None else [zero_value(r.type) for r in op.results]
    return [merge(condition, t, e, r.type) for t, e, r in zip(then_values, else_values, op.results)]
