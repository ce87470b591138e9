"""A CPU program's call in one native function: the arrays' checks, their pointers and the launches.

Why. A host program's call through the Python fast path (`HostProgram._run_fast`) costs ~8-10 us
more than PyTorch's on a small -x (BENCHMARKS.md, "Session 14, merged main"): numpy's pointer
property (`ndarray.ctypes.data`, ~1 us an array), the result's aligned allocation (~2.5 us), the
checks and the pointer cells, then one ctypes call per kernel. Here one ctypes call does it all
from the array objects themselves, and the Python side only picks the result arrays.

Algorithm. `mlc_host_call_<n>(spec, array_0, ..., array_n-1)` receives the call's arrays (the
arguments, then the results) as `PyObject *` (ctypes `py_object`) and reads each one's type, data
pointer, rank, dimensions, descriptor and flags from numpy's array struct (`PyArrayObject_fields`:
`data`, `nd`, `dimensions`, `strides`, `base`, `descr`, `flags` right after the object header, the
same in numpy 1.x and 2.x). The offsets are measured once per process on probe arrays
(`array_layout`) and the path is off where they do not match. An array passes when its type is
exactly `np.ndarray`, its descriptor is the very one of the slot's dtype (numpy shares one per
built-in dtype; an equal dtype in another object, a byte-swapped one or a subclass fails), its
shape is the slot's, it is C-contiguous (and writable, for results) and its data pointer is
aligned as the kernels need: `NumpyFastCheck`'s conditions. Only when every array passes are
the pointers written into the program's slot table (constants and intermediates are there from
the start) and the kernels called in order, each directly or through the native pool
(`mlc_pool_run`, whose address and pool handle the spec holds); otherwise it returns the
1-based index of the first array that failed and launches nothing, and the caller takes the
general path, which converts, stages or refuses that array and says why.

The spec is one int64 array: a header (counts, the pool, the layout, `np.ndarray`'s address),
the slot table, then per array its slot, descriptor address, required flags, alignment, rank and
shape, then per launch its function, program count (-1: a direct call) and parameter slots.

Limits: CPython with the GIL only (the function runs without the GIL, as every ctypes call does,
and reads the arrays' fields then: the caller's references keep them alive, and a caller that
resizes an array while another thread passes it to a kernel races with the kernel in either
path); Linux only, like the pool (a C compiler driver builds it into the cache; none: no native
path); at most MAX_ARRAYS arrays a call, MAX_SLOTS slots and the pool's MAX_POINTERS pointers a
kernel. A forked child's pool does not exist: the caller checks the pool is this process's.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import sysconfig
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from mlc.runtime.native_pool import MAX_POINTERS, compiled_library, typed_calls

MAX_ARRAYS = 16
"""The most arrays (arguments and results together) a native call takes."""

MAX_SLOTS = 256
"""The most buffer slots a program with a native call may have (its slot table lives on the stack)."""

C_CONTIGUOUS = 0x0001
WRITEABLE = 0x0400
"""numpy's NPY_ARRAY_C_CONTIGUOUS and NPY_ARRAY_WRITEABLE flag bits (stable across 1.x and 2.x)."""

POOL_WORD = 4
"""The spec word holding the pool's handle (`H_POOL`): rewritten in a forked child."""

DIRECT = -1
"""The program count of a launch called directly (a kernel without `mlc.cpu_programs`)."""

_HEAD = r"""
#include <stdint.h>

typedef int (*mlc_pool_run_fn)(void *pool, void *function, int count, void *const *pointers, int64_t programs);

enum { H_ARRAYS, H_LAUNCHES, H_SLOTS, H_POOL_RUN, H_POOL, H_TYPE,
       H_OFF_TYPE, H_OFF_DATA, H_OFF_ND, H_OFF_DIMS, H_OFF_DESCR, H_OFF_FLAGS, H_WORDS };

#define MLC_FIELD(object, offset, type) (*(type const *)((const char *)(object) + (offset)))
"""

_BODY = r"""
/* Checks every array, then runs the launches; 0, or the 1-based index of the first array that
   is not exactly what its slot takes (nothing launched then). */
static int mlc_host_call(const int64_t *spec, void *const *arrays) {
  const int64_t slot_count = spec[H_SLOTS];
  void *slots[MLC_MAX_SLOTS];
  const int64_t *word = spec + H_WORDS;
  for (int64_t slot = 0; slot < slot_count; ++slot) slots[slot] = (void *)(intptr_t)word[slot];
  word += slot_count;
  for (int64_t index = 0; index < spec[H_ARRAYS]; ++index) {
    const void *array = arrays[index];
    const int64_t slot = word[0], descr = word[1], flags = word[2], alignment = word[3], rank = word[4];
    if ((int64_t)(intptr_t)MLC_FIELD(array, spec[H_OFF_TYPE], void *) != spec[H_TYPE]) return (int)index + 1;
    if ((int64_t)(intptr_t)MLC_FIELD(array, spec[H_OFF_DESCR], void *) != descr) return (int)index + 1;
    if (MLC_FIELD(array, spec[H_OFF_ND], int) != rank) return (int)index + 1;
    if ((MLC_FIELD(array, spec[H_OFF_FLAGS], int) & flags) != flags) return (int)index + 1;
    const int64_t *dimensions = MLC_FIELD(array, spec[H_OFF_DIMS], const int64_t *);
    for (int64_t axis = 0; axis < rank; ++axis)
      if (dimensions[axis] != word[5 + axis]) return (int)index + 1;
    char *data = MLC_FIELD(array, spec[H_OFF_DATA], char *);
    if ((uintptr_t)data % (uintptr_t)alignment) return (int)index + 1;
    slots[slot] = data;
    word += 5 + rank;
  }
  for (int64_t launch = 0; launch < spec[H_LAUNCHES]; ++launch) {
    void *function = (void *)(intptr_t)word[0];
    const int64_t programs = word[1], count = word[2];
    void *pointers[MLC_MAX_POINTERS];
    for (int64_t parameter = 0; parameter < count; ++parameter) pointers[parameter] = slots[word[3 + parameter]];
    if (programs < 0) {
      mlc_direct(function, (int)count, pointers);
    } else {
      mlc_pool_run_fn run = (mlc_pool_run_fn)(intptr_t)spec[H_POOL_RUN];
      run((void *)(intptr_t)spec[H_POOL], function, (int)count, pointers, programs);
    }
    word += 3 + count;
  }
  return 0;
}
"""


def call_source() -> str:
    """The C source: one typed direct call per pointer count, one entry point per array count."""
    direct = typed_calls("mlc_direct", MAX_POINTERS)
    entries = []
    for count in range(1, MAX_ARRAYS + 1):
        parameters = ", ".join(f"void *a{index}" for index in range(count))
        arrays = ", ".join(f"a{index}" for index in range(count))
        entries.append(
            f"int mlc_host_call_{count}(const int64_t *spec, {parameters}) {{\n"
            f"  void *const arrays[{count}] = {{{arrays}}};\n  return mlc_host_call(spec, arrays);\n}}"
        )
    limits = f"#define MLC_MAX_POINTERS {MAX_POINTERS}\n#define MLC_MAX_SLOTS {MAX_SLOTS}\n"
    return limits + _HEAD + direct + _BODY + "\n".join(entries) + "\n"


class ArrayLayout(NamedTuple):
    """Byte offsets of an array object's fields (numpy's `PyArrayObject_fields`)."""

    type: int
    data: int
    nd: int
    dimensions: int
    descr: int
    flags: int


def _read(address: int, kind: type) -> int:
    return kind.from_address(address).value or 0  # type: ignore[attr-defined]


def array_layout() -> ArrayLayout | None:
    """numpy's array struct as this process has it, checked on probe arrays (a C-contiguous one
    and a strided, read-only view, so that every field read differs between them), or None
    where the fields are not where numpy 1.x and 2.x put them, or the interpreter has no GIL."""
    if sys.maxsize < 2**63 - 1 or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    head = object.__basicsize__
    layout = ArrayLayout(type=head - 8, data=head, nd=head + 8, dimensions=head + 16, descr=head + 40, flags=head + 48)
    whole = np.zeros((3, 5), np.float32)
    view = np.zeros((4, 6, 2), np.int16)[:, 1:, :]
    view.setflags(write=False)
    for probe in (whole, view):
        base = id(probe)
        dimensions = _read(base + layout.dimensions, ctypes.c_void_p)
        found = (
            _read(base + layout.type, ctypes.c_void_p),
            _read(base + layout.data, ctypes.c_void_p),
            _read(base + layout.nd, ctypes.c_int),
            tuple(_read(dimensions + 8 * axis, ctypes.c_int64) for axis in range(probe.ndim)),
            _read(base + layout.descr, ctypes.c_void_p),
            _read(base + layout.flags, ctypes.c_int),
        )
        expected = (id(np.ndarray), probe.ctypes.data, probe.ndim, probe.shape, id(probe.dtype), probe.flags.num)
        if found != expected:
            return None
    return layout


@functools.lru_cache(maxsize=1)
def _library() -> tuple[ctypes.CDLL, ArrayLayout] | None:
    layout = array_layout()
    if layout is None:
        return None
    library = compiled_library("mlc-call", call_source())
    return None if library is None else (library, layout)


class ArrayRule(NamedTuple):
    """What one array of a call must be: its slot, dtype, shape, whether kernels write it, and
    the alignment they need."""

    slot: int
    dtype: np.dtype
    shape: tuple[int, ...]
    written: bool
    alignment: int


class LaunchRule(NamedTuple):
    """One kernel: its address, its program count (DIRECT: called once) and its parameters' slots."""

    function: int
    programs: int
    slots: tuple[int, ...]


def host_call(
    slots: Sequence[int], arrays: Sequence[ArrayRule], launches: Sequence[LaunchRule], pool_run: int, pool: int
) -> tuple[ctypes._CFuncPtr, ctypes.Array] | None:  # type: ignore[name-defined,type-arg]
    """The native call of a program: its ctypes function, to be called as `function(spec,
    *arrays)`, and its spec (keep it alive as long as the function is called). `slots`: the
    slot table's initial pointers (0 for the slots the arrays fill). None where the native path
    is off (no library, another array layout) or the program exceeds its limits."""
    loaded = _library()
    if loaded is None or not 1 <= len(arrays) <= MAX_ARRAYS or len(slots) > MAX_SLOTS:
        return None
    if any(len(launch.slots) > MAX_POINTERS for launch in launches):
        return None
    library, layout = loaded
    words = [len(arrays), len(launches), len(slots), pool_run, pool, id(np.ndarray)]
    words += [layout.type, layout.data, layout.nd, layout.dimensions, layout.descr, layout.flags]
    words += list(slots)
    for rule in arrays:
        descr = np.empty(0, rule.dtype).dtype  # the descriptor numpy gives arrays of this dtype
        flags = C_CONTIGUOUS | (WRITEABLE if rule.written else 0)
        words += [rule.slot, id(descr), flags, max(rule.alignment, 1), len(rule.shape), *rule.shape]
    for launch in launches:
        words += [launch.function, launch.programs, len(launch.slots), *launch.slots]
    spec = (ctypes.c_int64 * len(words))(*words)
    function = getattr(library, f"mlc_host_call_{len(arrays)}")
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_void_p] + [ctypes.py_object] * len(arrays)
    return function, spec
