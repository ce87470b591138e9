"""Loading native CPU code, with llvmlite's MCJIT or the dynamic loader, and calling its kernels
through ctypes.

The backend turns a module's CPU kernels into one object file for the host
(`compile_to_cpu_object`); `CpuModule(object_code)` loads it into a fresh MCJIT execution engine
and `CpuModule.function(name, parameter_count)` returns a callable for a kernel: a plain C-ABI
function taking one `void*` per buffer and running the whole loop nest before it returns. ctypes
releases the GIL during the call. `SharedLibrary(data)` does the same for the backend's shared
library (`compile_to_cpu_code(..., shared_library=True)`): it hands the bytes to the dynamic
loader (through an in-memory file, `memfd_create`, where Linux has it; else a temporary file
removed once loaded), which takes a millisecond and needs neither llvmlite nor LLVM: that is how a
program comes back from the on-disk cache. `load_cpu_code` takes the library when there is one
and the loader accepts it, and the object otherwise.

Symbols. The object's undefined symbols (libm's `expf`, compiler-rt's half-precision helpers such
as `__extendhfsf2`) are resolved from the process, as MCJIT does. Before loading, the ELF symbol
table is read, so that a symbol the process cannot provide is reported by name rather than left
as a null address that crashes the process on the first call; libm and libgcc_s are loaded into
the process (`llvmlite.binding.load_library_permanently`, a process-wide and permanent effect)
only when a symbol is missing otherwise.

Threads. A kernel marked `mlc.cpu_programs = N` also has `<kernel>__programs(pointers..., first,
last)`; a `ProgramPool` of worker threads runs contiguous shares of [0, N) in parallel through it
where the native pool (`mlc/runtime/native_pool.py`, the faster one) cannot be built.
The thread count is `MLC_NUM_THREADS`, else the cores the process may use (`default_thread_count`).

Results. `ResultBlocks` hands out result arrays whose memory goes back to the program when the
caller drops them, so that large results do not land on fresh pages (see its docstring); blocks
of HUGE_PAGE_RESULT_BYTES or more are mappings of their own on transparent huge pages
(`huge_page_array`), whatever state glibc's heap is in.

Limits: the object must target this host (same triple and ABI); the symbol check reads ELF only
(other formats load unchecked); each CpuModule owns its engine, so loading many modules costs
memory until they are closed; a SharedLibrary stays mapped until it is closed (dlclose).
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TYPE_CHECKING

from mlc.errors import MlcError

if TYPE_CHECKING:
    import queue

_ELF_MAGIC = b"\x7fELF"
_SECTION_UNDEFINED = 0
_BINDING_WEAK = 2
_LINKER_PROVIDED = frozenset({"_GLOBAL_OFFSET_TABLE_"})
_HELPER_LIBRARIES = ("m", "gcc_s")
PROGRAMS_SUFFIX = "__programs"
"""The range entry point of a kernel marked `mlc.cpu_programs` (see convert-loop-to-cpu)."""


class CpuLoadError(MlcError):
    """An object file cannot be loaded or lacks a kernel; the message says which symbol."""


def _llvm():  # type: ignore[no-untyped-def]
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


def elf_symbols(object_file: object) -> tuple[list[str], list[str]]:
    """(defined functions and data, required symbols) of an ELF64 little-endian object.

    `object_file` is an `llvmlite.binding.ObjectFileRef`; other formats give two empty lists.
    Weak undefined symbols are not required (they may stay null).
    """
    sections = {section.name(): section.data() for section in object_file.sections()}  # type: ignore[attr-defined]
    symbol_table, string_table = sections.get(b".symtab"), sections.get(b".strtab")
    if symbol_table is None or string_table is None:
        return [], []
    defined, required = [], []
    for offset in range(0, len(symbol_table) - 23, 24):  # Elf64_Sym is 24 bytes
        name_offset, info, _, section_index, _, _ = struct.unpack_from("<IBBHQQ", symbol_table, offset)
        if name_offset == 0:
            continue
        name = string_table[name_offset : string_table.index(b"\0", name_offset)].decode(errors="replace")
        symbol_type, binding = info & 0xF, info >> 4
        if section_index == _SECTION_UNDEFINED:
            if binding != _BINDING_WEAK and name not in _LINKER_PROVIDED:
                required.append(name)
        elif symbol_type in (1, 2) and binding != 0:  # global or weak functions and data
            defined.append(name)
    return defined, required


def _missing_symbols(llvm: object, names: Iterable[str]) -> list[str]:
    return [name for name in names if not llvm.address_of_symbol(name)]  # type: ignore[attr-defined]


def _load_helper_libraries(llvm: object) -> None:
    import ctypes.util  # only here: it imports subprocess, which a cached CPU program never needs

    for library in _HELPER_LIBRARIES:
        path = ctypes.util.find_library(library)
        if path is not None:
            try:
                llvm.load_library_permanently(path)  # type: ignore[attr-defined]
            except RuntimeError:  # not loadable here: the missing-symbol report names what is left
                pass


class CpuFunction:
    """A kernel of a CpuModule: `function(pointer, pointer, ...)` runs it to completion."""

    def __init__(self, module: NativeCode, name: str, address: int, parameter_count: int):
        self.module = module  # keeps the engine or library, and so the code, alive
        self.name = name
        self.address = address
        self.parameter_count = parameter_count
        prototype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * parameter_count))
        self._call = prototype(address)

    def __call__(self, *pointers: int) -> None:
        if len(pointers) != self.parameter_count:
            raise TypeError(
                f"kernel '{self.name}' takes {self.parameter_count} pointers, got {len(pointers)}"
            )
        self._call(*pointers)

    @property
    def raw(self) -> ctypes._CFuncPtr:  # type: ignore[name-defined]
        """The ctypes function itself, without the count check (for the runtime's hot path)."""
        return self._call


class NativeCode(ABC):
    """Loaded kernels, by name: what CpuModule (MCJIT) and SharedLibrary (the dynamic loader) share."""

    name: str
    _functions: dict[str, CpuFunction]

    @abstractmethod
    def address_of(self, name: str) -> int:
        """The address of function `name`; CpuLoadError when there is none."""

    def function(self, name: str, parameter_count: int) -> CpuFunction:
        """The kernel `name`, called with `parameter_count` pointers."""
        function = self._functions.get(name)
        if function is None or function.parameter_count != parameter_count:
            function = CpuFunction(self, name, self.address_of(name), parameter_count)
            self._functions[name] = function
        return function

    @abstractmethod
    def close(self) -> None:
        """Releases the code; the functions must not be called afterwards."""


class CpuModule(NativeCode):
    """A native object file loaded into its own MCJIT engine."""

    def __init__(self, object_code: bytes, name: str = "<object>"):
        self.name = name
        llvm = _llvm()
        self._llvm = llvm
        if not object_code:
            raise CpuLoadError(f"object file {name} is empty")
        object_file = llvm.ObjectFileRef.from_data(bytes(object_code))
        target_machine = llvm.Target.from_default_triple().create_target_machine()
        # MCJIT wants a module; an empty one lets the object file bring all the code. Creating the
        # engine also makes the process's own symbols visible to `address_of_symbol`.
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine)
        self.defined_symbols: list[str] = []
        if bytes(object_code[:4]) == _ELF_MAGIC:
            self.defined_symbols, required = elf_symbols(object_file)
            self._check_symbols(required)
        self._engine.add_object_file(object_file)  # the engine takes the object's contents
        self._engine.finalize_object()
        self._functions: dict[str, CpuFunction] = {}

    def _check_symbols(self, required: list[str]) -> None:
        external = [name for name in required if name not in self.defined_symbols]
        missing = _missing_symbols(self._llvm, external)
        if missing:
            _load_helper_libraries(self._llvm)
            missing = _missing_symbols(self._llvm, missing)
        if missing:
            raise CpuLoadError(
                f"object file {self.name} needs symbols that this process does not provide: "
                f"{', '.join(sorted(missing))} (looked up in the process, libm and libgcc_s)"
            )

    def address_of(self, name: str) -> int:
        address = self._engine.get_function_address(name)
        if not address:
            known = ", ".join(self.defined_symbols) if self.defined_symbols else "unknown (not an ELF object)"
            raise CpuLoadError(f"object file {self.name} has no function '{name}'; it defines: {known}")
        return address

    def close(self) -> None:
        """Releases the engine and its code; the module's functions must not be called afterwards."""
        self._functions.clear()
        self._engine.close()


class SharedLibrary(NativeCode):
    """A shared library of kernels loaded by the dynamic loader (see the module docstring); the
    same interface as a CpuModule. OSError when the loader refuses it.

    The loader knows a library by its path and returns the one already loaded under a path it is
    given again, so the in-memory file stays open (its `/proc/self/fd/N` unique) for as long as
    the library is loaded: until `close()`, or until the SharedLibrary is garbage-collected (its
    functions keep it alive while they may be called)."""

    def __init__(self, data: bytes, name: str = "<library>"):
        self.name = name
        self._library, descriptor = _dlopen_bytes(data, name)
        self._functions: dict[str, CpuFunction] = {}
        self._finalizer = weakref.finalize(self, _unload, self._library._handle, descriptor)

    def address_of(self, name: str) -> int:
        try:
            symbol = self._library[name]
        except AttributeError:
            raise CpuLoadError(f"shared library {self.name} has no function '{name}'") from None
        address = ctypes.cast(symbol, ctypes.c_void_p).value
        assert address is not None
        return address

    def close(self) -> None:
        """Unloads the library; the module's functions must not be called afterwards."""
        self._functions.clear()
        self._finalizer()


def _unload(handle: int, descriptor: int | None) -> None:
    import _ctypes

    _ctypes.dlclose(handle)
    if descriptor is not None:
        os.close(descriptor)


def _dlopen_bytes(data: bytes, name: str) -> tuple[ctypes.CDLL, int | None]:
    """`data` (a shared library) loaded with RTLD_LOCAL, and the descriptor of the in-memory file
    it was loaded from (None: from a temporary file, already removed)."""
    mode = os.RTLD_NOW | os.RTLD_LOCAL
    if hasattr(os, "memfd_create"):
        descriptor = os.memfd_create(f"mlc-{name}", os.MFD_CLOEXEC)
        try:
            os.write(descriptor, data)
            return ctypes.CDLL(f"/proc/self/fd/{descriptor}", mode=mode), descriptor
        except BaseException:
            os.close(descriptor)
            raise
    import tempfile

    descriptor, path = tempfile.mkstemp(prefix="mlc-", suffix=".so")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        return ctypes.CDLL(path, mode=mode), None
    finally:
        os.unlink(path)


def load_cpu_code(object_code: bytes, shared_library: bytes | None, name: str) -> NativeCode:
    """The shared library when there is one and the dynamic loader takes it, else the object in
    MCJIT (a library built elsewhere may need what this system lacks: the object still loads)."""
    if shared_library:
        try:
            return SharedLibrary(shared_library, name)
        except OSError:
            pass
    return CpuModule(object_code, name)


NUM_THREADS_VARIABLE = "MLC_NUM_THREADS"


def default_thread_count() -> int:
    """`MLC_NUM_THREADS` when set (a positive integer), else the cores this process may run on."""
    text = os.environ.get(NUM_THREADS_VARIABLE, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise CpuLoadError(f"{NUM_THREADS_VARIABLE} must be a positive integer, got '{text}'")
        return int(text)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def program_shares(programs: int, threads: int) -> list[tuple[int, int]]:
    """[first, last) ranges of contiguous programs, one per thread (fewer when programs are few),
    their sizes differing by at most one."""
    count = max(1, min(programs, threads))
    base, extra = divmod(programs, count)
    shares, first = [], 0
    for index in range(count):
        last = first + base + (1 if index < extra else 0)
        shares.append((first, last))
        first = last
    return shares


def _worker(tasks: queue.SimpleQueue, done: queue.SimpleQueue) -> None:  # type: ignore[type-arg]
    while True:
        task = tasks.get()
        if task is None:
            return
        call, arguments = task
        try:
            call(*arguments)
            done.put(None)
        except BaseException as error:  # noqa: BLE001 - handed to the caller, which raises it
            done.put(error)


class ProgramPool:
    """Worker threads that run shares of a kernel's grid beside the calling thread.

    `run(call, pointers, programs)` splits [0, programs) into one contiguous share per thread
    (`program_shares`), hands all but the first to the workers, runs the first itself and returns
    when every share is done. Kernels are ctypes functions, which release the GIL while they run,
    so the shares run in parallel. The workers start with the first `run` (loading a program,
    from the cache for instance, starts no thread), wait on their own queues, and end when the
    pool is garbage-collected (or `close`d). One caller at a time (a HostProgram serializes its
    calls). A forked child has none of the parent's threads: the first `run` there starts its own
    (the parent's queues are left alone). The runtime uses this pool where the native one
    (`mlc/runtime/native_pool.py`) cannot be built.
    """

    def __init__(self, threads: int):
        import queue  # here: a program without parallel kernels never needs it

        self.threads = threads
        self._tasks: list[queue.SimpleQueue] = [queue.SimpleQueue() for _ in range(threads - 1)]  # type: ignore[type-arg]
        self._done: queue.SimpleQueue = queue.SimpleQueue()  # type: ignore[type-arg]
        self._started_in: int | None = None  # the process whose workers these are
        self._finalizer = weakref.finalize(self, _stop_workers, self._tasks)

    def _start_workers(self) -> None:
        import queue

        if self._started_in is not None:  # a forked child: new queues for its own workers
            self._tasks = [queue.SimpleQueue() for _ in self._tasks]
            self._done = queue.SimpleQueue()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _stop_workers, self._tasks)
        for tasks in self._tasks:
            threading.Thread(target=_worker, args=(tasks, self._done), name="mlc-cpu-worker", daemon=True).start()
        self._started_in = os.getpid()

    def run(self, call: Callable[..., None], pointers: Sequence[int], programs: int) -> None:
        if self._started_in != os.getpid():
            self._start_workers()
        shares = program_shares(programs, self.threads)
        for tasks, (first, last) in zip(self._tasks, shares[1:]):
            tasks.put((call, (*pointers, first, last)))
        first, last = shares[0]
        call(*pointers, first, last)
        errors = [self._done.get() for _ in shares[1:]]
        for error in errors:
            if error is not None:
                raise error

    def close(self) -> None:
        self._finalizer()


def _stop_workers(task_queues: list[queue.SimpleQueue]) -> None:  # type: ignore[type-arg]
    for tasks in task_queues:
        tasks.put(None)


RECYCLED_RESULT_BYTES = 128 * 1024
"""Results of at least this many bytes come from `ResultBlocks`; smaller ones from numpy (glibc's
malloc serves requests below its default mmap threshold, 128 KiB, from a heap it keeps, so they
do not page-fault anyway)."""

KEPT_BLOCKS = 2
"""Blocks a shelf keeps per result: two, so that `y = f(x)` in a loop (the last result still alive
while the next call runs) alternates between two blocks."""


HUGE_PAGE_RESULT_BYTES = 4 << 20
"""Recycled result blocks of at least this many bytes are `huge_page_array`s (numpy advises huge
pages from the same size, 4 MiB, but only its fresh mappings get them); smaller ones are numpy's
(a 2 MiB page for a 128 KiB result would be mostly waste)."""

HUGE_PAGE_BYTES = 2 << 20


def huge_page_array(nbytes: int, alignment: int) -> object:
    """A writable uint8 numpy array of `nbytes` starting on a HUGE_PAGE_BYTES boundary (so on an
    `alignment` one, for any alignment up to it) in a private anonymous mapping of its own,
    advised MADV_HUGEPAGE before its first touch; the mapping lives as long as the array (its
    `base`). Where the system has no MADV_HUGEPAGE it is an ordinary mapping; OSError where there
    is no mapping (none of this kind, or no address space left).

    Why. On the 16-CPU host (BENCHMARKS.md, branch cpu13) the tanh chain writing an output on 4 KiB
    pages ran 1.4x slower at one thread than writing one on huge pages (3.95 against 2.77 ms, the
    inputs on huge pages either way; 4 KiB pages cost a TLB walk each and stop the hardware
    prefetchers at every page's end), and results taken from glibc's heap were 0-83% huge pages
    depending on the heap's history: a block that was ever handed out as 4 KiB pages stays so.
    A mapping of its own also keeps a result away from its inputs: glibc's heap puts consecutive
    16 MiB arrays 16 MiB + 16 bytes apart, so a result allocated right after its inputs lay a few
    cache lines after them modulo 16 MiB, which made the same kernels 4-5x slower on that host
    (BENCHMARKS.md, cpu14: the tanh chain 10-13 ms at one thread against 2.3-2.4)."""
    import mmap

    import numpy as np

    if alignment > HUGE_PAGE_BYTES:
        raise ValueError(f"an alignment of {alignment} bytes exceeds a huge page")
    if not hasattr(mmap, "MAP_PRIVATE"):  # Windows: the caller falls back to numpy's memory
        raise OSError("no private anonymous mappings on this system")
    mapping = mmap.mmap(-1, nbytes + HUGE_PAGE_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(mapping, dtype=np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE_BYTES
    if hasattr(mmap, "MADV_HUGEPAGE"):  # Linux; before anything touches the pages
        mapping.madvise(mmap.MADV_HUGEPAGE, start, nbytes)
    return raw[start : start + nbytes]


class _Lease:
    """The owner, as numpy sees it (the `base` of a result array), of one block while the caller
    holds views of it; when the last view goes, the block goes back on its shelf."""

    __slots__ = ("__array_interface__", "_block", "_shelf")

    def __init__(self, block: tuple[object, dict[str, object]], shelf: list[tuple[object, dict[str, object]]]):
        self._block, self._shelf = block, shelf
        self.__array_interface__ = block[1]

    def __del__(self) -> None:
        if len(self._shelf) < KEPT_BLOCKS:  # list.append is atomic: a result may die on any thread
            self._shelf.append(self._block)


class ResultBlocks:
    """Fresh-looking result arrays whose memory is recycled once the caller drops them.

    Why. A program returns new arrays on every call, and numpy takes their memory from glibc's
    malloc, which for large blocks either reuses its heap or maps fresh pages, depending on its
    history in the process (its mmap threshold moves with the sizes freed so far, and a heap top
    beyond the trim threshold is given back). Fresh pages are zero-filled by the kernel at their
    first write, inside the kernel that writes the result: a 16 MiB result is 4096 page faults
    (or 8 huge-page clears), 1-4 ms beside a 0.4-4 ms kernel, taken in parallel by the worker
    threads that first touch each page, which contend in the kernel's memory management. Which
    processes paid that, and on which calls, made the same kernel's figures move by 2-9x.

    Algorithm. One shelf of blocks per key (the runtime's: a result's spec and alignment): `take` pops a block (else
    allocates one with `allocate`) and returns a new array over its memory whose `base` is a
    `_Lease`; when the last array or view of that memory is garbage-collected, the lease puts the
    block back on its shelf (at most KEPT_BLOCKS are kept; more are freed). The caller owns what
    it gets exactly as it owns a numpy array: the memory is reused only once nothing refers to it.

    Limits: memory kept per result is at most KEPT_BLOCKS of its size, for as long as the program
    lives; a result whose memory is exported without a Python reference (a raw pointer kept in C)
    is as unsafe to use after its arrays die as any numpy array's."""

    def __init__(self) -> None:
        self._shelves: dict[Hashable, list[tuple[object, dict[str, object]]]] = {}

    def take(self, key: Hashable, allocate: Callable[[], object]) -> object:
        """An array like the one `allocate()` returns (an aligned, C-contiguous, writable numpy
        array; the same shape, dtype and alignment for every call with this `key`), over a kept
        block's memory, or over a new block's."""
        import numpy as np

        shelf = self._shelves.get(key)
        if shelf is None:
            shelf = self._shelves[key] = []
        try:
            block = shelf.pop()
        except IndexError:
            array = allocate()
            block = (array, dict(array.__array_interface__))  # type: ignore[attr-defined]
        # The array interface spells extension dtypes (ml_dtypes' bfloat16) as raw bytes ("V2"):
        # view the memory as the allocated array's dtype again.
        array = np.asarray(_Lease(block, shelf))
        dtype = block[0].dtype  # type: ignore[attr-defined]
        return array if array.dtype == dtype else array.view(dtype)

    def kept(self) -> int:
        """The blocks on the shelves now (for the tests)."""
        return sum(len(shelf) for shelf in self._shelves.values())


def program_range_function(module: NativeCode, kernel: str, pointer_count: int) -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    """The ctypes function of `<kernel>__programs(pointers..., first, last)`."""
    prototype = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * pointer_count), ctypes.c_int64, ctypes.c_int64)
    return prototype(module.address_of(kernel + PROGRAMS_SUFFIX))
