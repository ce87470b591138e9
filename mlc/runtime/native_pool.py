"""A native worker pool for CPU kernels: one ctypes call runs a kernel's whole grid on N threads.

Why. The Python `ProgramPool` (mlc/runtime/cpu.py) hands each share of a grid to a Python
thread through a queue, and every share costs GIL hand-overs and a queue wake-up one after
another: about 11 us per thread per parallel call, a fifth of a millisecond at 16 threads. Here
the whole dispatch happens in C, without the GIL: `mlc_pool_run(pool, function, pointer_count,
pointers, programs)` publishes the job, runs the first share on the calling thread and returns
when the workers have run theirs.

Algorithm. A pool is `threads - 1` persistent pthreads (named `mlc-pool`) and a job: the kernel's
`<kernel>__programs(pointers..., first, last)` address, its pointers and the grid size. The
caller writes the job, then bumps a generation counter (a futex word); each worker waits for the
generation to change, spinning (with the CPU's pause hint) for `spin_ns` nanoseconds before it
sleeps in `futex_wait`, so back-to-back kernel calls find the workers awake while an idle
program costs no CPU (every 64 pauses the spinner also calls `sched_yield`, so that on a loaded
machine a thread with work is not kept off the core for the whole spin); the caller calls `futex_wake` only when some worker sleeps. Worker `i`
owns share `i` of the same contiguous shares as `program_shares` (sizes differ by at most one;
none when the programs are fewer than the threads) and runs it front to back in `SHARE_CHUNKS`
chunks, each claimed with an atomic add on the share's cursor (a cache line of its own); once its
own share is claimed, a thread claims the unclaimed chunks of the next shares (tail stealing).
So a balanced grid runs as static shares do (each thread the same rows call after call: its
L2 keeps them between calls of the same shapes), while a worker that wakes late, a slower core
or a share of costlier programs no longer holds up the whole call: the others take its last
chunks. Then the worker counts down the job's `remaining` counter; the last one publishes the
generation as finished, which the caller waits for the same way (spin, then futex). The words
that different threads write (the generation, the count-down, the finished word, each cursor)
sit on cache lines of their own, so that the spinning workers' reads and the count-down do not
bounce one line between sixteen cores. Every worker acknowledges every job, those without a share too, so the
caller never rewrites the job while a worker may still read it. Kernels take any number of
pointers up to MAX_POINTERS: the C source has one call per count (the C calling convention puts
the pointers and the two int64 in registers and then on the stack, which only a prototype of the
right arity gets right), so the CPU lowering needs no new entry point.

Semantics kept: the programs of a grid are independent, every program runs exactly once (a chunk
is claimed by one atomic add) and every share runs the same code, so the bits do not depend on
the thread count, on which thread runs a chunk or on which pool runs it. A kernel cannot fail
(native code returns nothing); what can fail is making the pool (thread creation: `NULL`, then
the Python pool is used) and a kernel with too many pointers (the caller checks first).

Building. The source below is compiled once with the system's C compiler driver (`$CC`, else
cc, gcc or clang; `-O2 -shared -fPIC -pthread`) into the mlc cache directory
(`<cache>/native/mlc-pool-<hash>.so`, the hash covering the source and the command, written
through a temporary file and `os.replace`), so later processes only `dlopen` it; with
`MLC_CACHE=0` or an unwritable directory it is built in a temporary directory for this process.
No driver, a failed build or `MLC_CPU_POOL=python`: `native_pool_library()` is None and the
runtime uses the Python pool.

On more threads than cores
(an oversubscribed pool) nothing spins: waiting threads sleep at once (`spin_nanoseconds`).

Fork safety. The workers of a pool do not exist in a forked child, and a child that waited for
them would hang: `NativeProgramPool` remembers the process id that made it and makes a new pool
at the first call in another process (the parent's pool is left alone there, never destroyed:
destroying joins threads the child does not have). The C code holds no lock across a fork.

Limits: Linux only (futex); x86-64 and AArch64 get a pause hint while spinning, others a plain
loop. At most one caller per pool at a time (a HostProgram serializes its calls). Closing joins
the workers; the pool is closed when it is garbage-collected or at interpreter exit
(`weakref.finalize`), so no thread outlives the program.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path

from mlc.runtime.digests import sha256

MAX_POINTERS = 64
"""The most buffers a kernel run by the native pool may take (more: the Python pool runs it)."""

SHARE_CHUNKS = 8
"""The chunks a thread's share is claimed in: enough that the others can take over the last
eighth of a late thread's share, few enough that claiming (one uncontended atomic add, ~20 ns)
costs nothing beside a chunk of programs (at least one: 1-8 us of a softmax row of 1024 to 65536
columns)."""

SPIN_NANOSECONDS = 200_000
"""How long an idle worker (and the waiting caller) spins before it sleeps: longer than the
Python between two kernel launches of a program, far shorter than a scheduler's time slice."""

POOL_VARIABLE = "MLC_CPU_POOL"
"""`python` makes the runtime use the Python pool even where the native one can be built."""

BUILD_TIMEOUT_SECONDS = 60
COMPILE_FLAGS = ("-O2", "-shared", "-fPIC", "-pthread")

_SOURCE_HEAD = r"""
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef struct mlc_pool mlc_pool;
typedef struct { mlc_pool *pool; int index; } mlc_worker;

#define MLC_LINE 64 /* bytes of a cache line: words written by different threads live on their own */

/* The programs of share i not yet claimed: [next, last); its owner and, once they run out of
   their own, the other threads claim MLC_CHUNKS-th parts of it with an atomic add on `next`. */
typedef struct { _Alignas(MLC_LINE) _Atomic int64_t next; int64_t last; int64_t chunk; } mlc_share_cursor;

struct mlc_pool {
  int threads;
  int64_t spin_ns;
  pthread_t *workers;
  mlc_worker *arguments;
  mlc_share_cursor *cursors;        /* one per thread */
  int started;
  /* the job, written by the caller before it bumps `generation` */
  void *function;
  int pointer_count;
  void *const *pointers;
  int64_t programs;
  int shares;
  _Alignas(MLC_LINE) _Atomic uint32_t generation; /* futex word of the workers: one more per job */
  _Atomic uint32_t sleepers;        /* workers in futex_wait */
  _Alignas(MLC_LINE) _Atomic int32_t remaining;   /* workers yet to acknowledge the job */
  _Alignas(MLC_LINE) _Atomic uint32_t finished;   /* futex word of the caller: the last job done */
  _Atomic uint32_t caller_sleeping;
  _Atomic int stop;
};

static void mlc_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t mlc_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void mlc_futex_wait(_Atomic uint32_t *word, uint32_t value) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void mlc_futex_wake(_Atomic uint32_t *word) {
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Waits until *word differs from `value`: spins for spin_ns, then sleeps, counting itself in
   *sleeping so that the writer wakes it (the writer stores, then reads *sleeping; this thread
   counts itself, then reads *word: with sequentially consistent atomics one sees the other). */
static uint32_t mlc_wait_change(_Atomic uint32_t *word, uint32_t value, int64_t spin_ns, _Atomic uint32_t *sleeping) {
  uint32_t now = atomic_load(word);
  if (now != value) return now;
  int64_t deadline = mlc_now_ns() + spin_ns;
  for (unsigned round = 1;; ++round) {
    mlc_pause();
    now = atomic_load(word);
    if (now != value) return now;
    if ((round & 63) == 0) {
      if (mlc_now_ns() > deadline) break;
      sched_yield(); /* a thread with work may be waiting for this core (a loaded machine) */
    }
  }
  for (;;) {
    atomic_fetch_add(sleeping, 1);
    now = atomic_load(word);
    if (now == value) mlc_futex_wait(word, value);
    atomic_fetch_sub(sleeping, 1);
    now = atomic_load(word);
    if (now != value) return now;
  }
}

static void mlc_share(int64_t programs, int shares, int index, int64_t *first, int64_t *last) {
  int64_t base = programs / shares, extra = programs % shares;
  *first = index * base + (index < extra ? index : extra);
  *last = *first + base + (index < extra ? 1 : 0);
}

static void mlc_call(void *function, int count, void *const *p, int64_t first, int64_t last);
void mlc_pool_destroy(mlc_pool *pool);

/* Runs the unclaimed chunks of share `index`, front to back. */
static void mlc_drain_share(mlc_pool *pool, int index) {
  mlc_share_cursor *cursor = &pool->cursors[index];
  for (;;) {
    if (atomic_load_explicit(&cursor->next, memory_order_relaxed) >= cursor->last) return;
    int64_t first = atomic_fetch_add(&cursor->next, cursor->chunk);
    if (first >= cursor->last) return;
    int64_t last = first + cursor->chunk < cursor->last ? first + cursor->chunk : cursor->last;
    mlc_call(pool->function, pool->pointer_count, pool->pointers, first, last);
  }
}

/* Thread `index` runs its own share, then helps with the others' (the next ones first); a
   thread without a share (fewer programs than threads) starts with share index % shares. */
static void mlc_run_share(mlc_pool *pool, int index) {
  for (int step = 0; step < pool->shares; ++step) mlc_drain_share(pool, (index + step) % pool->shares);
}

/* Sets every share's cursor to the start of its contiguous range (`program_shares`'). */
static void mlc_reset_cursors(mlc_pool *pool) {
  for (int index = 0; index < pool->shares; ++index) {
    int64_t first, last;
    mlc_share(pool->programs, pool->shares, index, &first, &last);
    int64_t chunk = (last - first + MLC_CHUNKS - 1) / MLC_CHUNKS;
    pool->cursors[index].last = last;
    pool->cursors[index].chunk = chunk > 0 ? chunk : 1;
    atomic_store_explicit(&pool->cursors[index].next, first, memory_order_relaxed);
  }
}

static void *mlc_worker_main(void *argument) {
  mlc_worker *self = (mlc_worker *)argument;
  mlc_pool *pool = self->pool;
  uint32_t seen = 0;
  for (;;) {
    seen = mlc_wait_change(&pool->generation, seen, pool->spin_ns, &pool->sleepers);
    if (atomic_load(&pool->stop)) return NULL;
    mlc_run_share(pool, self->index);
    if (atomic_fetch_sub(&pool->remaining, 1) == 1) {
      atomic_store(&pool->finished, seen);
      if (atomic_load(&pool->caller_sleeping)) mlc_futex_wake(&pool->finished);
    }
  }
}

/* A pool of `threads` (the caller and threads - 1 workers), or NULL when a thread cannot start. */
mlc_pool *mlc_pool_create(int threads, int64_t spin_ns) {
  if (threads < 1) return NULL;
  mlc_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return NULL;
  pool->threads = threads;
  pool->spin_ns = spin_ns;
  pool->workers = calloc(threads, sizeof *pool->workers);
  pool->arguments = calloc(threads, sizeof *pool->arguments);
  pool->cursors = aligned_alloc(MLC_LINE, threads * sizeof *pool->cursors);
  if (!pool->workers || !pool->arguments || !pool->cursors) {
    free(pool->workers); free(pool->arguments); free(pool->cursors); free(pool); return NULL;
  }
  for (int index = 1; index < threads; ++index) {
    pool->arguments[index].pool = pool;
    pool->arguments[index].index = index;
    if (pthread_create(&pool->workers[index], NULL, mlc_worker_main, &pool->arguments[index]) != 0) {
      pool->threads = index; /* the workers started so far are joined by destroy */
      mlc_pool_destroy(pool);
      return NULL;
    }
    pthread_setname_np(pool->workers[index], "mlc-pool"); /* for ps, top and the tests */
  }
  return pool;
}

/* Runs function(pointers..., first, last) over contiguous shares of [0, programs), one per
   thread; returns 0 when done, -1 when the kernel takes more pointers than this pool can pass. */
int mlc_pool_run(mlc_pool *pool, void *function, int pointer_count, void *const *pointers, int64_t programs) {
  if (pointer_count < 0 || pointer_count > MLC_MAX_POINTERS) return -1;
  if (programs <= 0) return 0;
  int shares = programs < pool->threads ? (int)programs : pool->threads;
  if (shares == 1 || pool->threads == 1) {
    mlc_call(function, pointer_count, pointers, 0, programs);
    return 0;
  }
  pool->function = function;
  pool->pointer_count = pointer_count;
  pool->pointers = pointers;
  pool->programs = programs;
  pool->shares = shares;
  mlc_reset_cursors(pool); /* published to the workers by the sequentially consistent bump below */
  atomic_store(&pool->remaining, pool->threads - 1);
  uint32_t generation = atomic_load(&pool->generation) + 1;
  if (generation == 0) generation = 1; /* 0 is the workers' initial `seen` */
  atomic_store(&pool->generation, generation);
  if (atomic_load(&pool->sleepers)) mlc_futex_wake(&pool->generation);
  mlc_run_share(pool, 0);
  uint32_t previous = atomic_load(&pool->finished);
  if (previous != generation) mlc_wait_change(&pool->finished, previous, pool->spin_ns, &pool->caller_sleeping);
  return 0;
}

/* Stops and joins the workers and frees the pool. */
void mlc_pool_destroy(mlc_pool *pool) {
  if (!pool) return;
  atomic_store(&pool->stop, 1);
  atomic_fetch_add(&pool->generation, 1);
  mlc_futex_wake(&pool->generation);
  for (int index = 1; index < pool->threads; ++index) pthread_join(pool->workers[index], NULL);
  free(pool->workers);
  free(pool->arguments);
  free(pool->cursors);
  free(pool);
}

int mlc_pool_max_pointers(void) { return MLC_MAX_POINTERS; }
"""


def typed_calls(name: str, max_pointers: int, trailing: Sequence[tuple[str, str]] = ()) -> str:
    """C source of `static void name(void *function, int count, void *const *p, <trailing>)`,
    which calls `function` with `count` pointers from `p` and then the `trailing` (type, name)
    parameters: one call through a prototype of the right arity per count up to `max_pointers`
    (the calling convention puts pointers in registers, then on the stack, which only such a
    prototype gets right)."""
    cases = []
    for count in range(max_pointers + 1):
        parameters = ", ".join(["void *"] * count + [kind for kind, _ in trailing]) or "void"
        arguments = ", ".join([f"p[{index}]" for index in range(count)] + [argument for _, argument in trailing])
        cases.append(f"  case {count}: ((void (*)({parameters}))function)({arguments}); break;")
    declared = "".join(f", {kind} {argument}" for kind, argument in trailing)
    return (
        f"static void {name}(void *function, int count, void *const *p{declared}) {{\n"
        "  switch (count) {\n" + "\n".join(cases) + "\n  default: break;\n  }\n}\n"
    )


def pool_source(max_pointers: int = MAX_POINTERS) -> str:
    """The C source of the pool, with one typed call per pointer count up to `max_pointers`."""
    call = typed_calls("mlc_call", max_pointers, [("int64_t", "first"), ("int64_t", "last")])
    return f"#define MLC_MAX_POINTERS {max_pointers}\n#define MLC_CHUNKS {SHARE_CHUNKS}\n{_SOURCE_HEAD}\n{call}"


def _compiler_driver() -> str | None:
    """`$CC`, else the first of cc, gcc and clang on the PATH (as the backend links libraries)."""
    candidates = [os.environ["CC"]] if os.environ.get("CC") else ["cc", "gcc", "clang"]
    return next((path for path in map(shutil.which, candidates) if path is not None), None)


def _build(driver: str, source: str, library: Path) -> bool:
    """Compiles `source` into the shared library `library`; False when the driver fails."""
    source_path = library.with_suffix(".c")
    source_path.write_text(source)
    command = [driver, *COMPILE_FLAGS, "-o", str(library), str(source_path)]
    try:
        done = subprocess.run(command, capture_output=True, timeout=BUILD_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and library.exists()


def _cached_library_path(name: str) -> Path | None:
    """Where the cache keeps the pool's library, or None when there is no usable cache."""
    from mlc.runtime.artifact_cache import cache_enabled, default_directory

    if not cache_enabled():
        return None
    base = Path(os.environ["MLC_CACHE_DIR"]) if os.environ.get("MLC_CACHE_DIR") else default_directory()
    return base / "native" / name


def _load(path: Path) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(str(path), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError:
        return None


def compiled_library(prefix: str, source: str) -> ctypes.CDLL | None:
    """`source` compiled into a shared library and loaded: from the cache
    (`<cache>/native/<prefix>-<hash>.so`, the hash covering the source and the command) when it is
    there, else built with the C compiler driver (and put in the cache when there is one); None
    where there is no driver, the build fails or the library does not load. Shared by the pool
    and the CPU call path (`native_call.py`)."""
    if not sys.platform.startswith("linux"):
        return None
    driver = _compiler_driver()
    if driver is None:
        return None
    key = sha256("\0".join([source, driver, *COMPILE_FLAGS]).encode()).hexdigest()[:24]
    name = f"{prefix}-{key}.so"
    cached = _cached_library_path(name)
    if cached is not None and cached.exists():
        library = _load(cached)
        if library is not None:
            return library
    with tempfile.TemporaryDirectory(prefix=f"{prefix}-") as directory:
        built = Path(directory) / name
        if not _build(driver, source, built):
            return None
        if cached is not None:
            try:  # through a temporary file, so that a reader never sees part of a library
                cached.parent.mkdir(parents=True, exist_ok=True)
                partial = cached.with_name(f"{name}.{os.getpid()}.tmp")
                shutil.copyfile(built, partial)
                os.replace(partial, cached)
            except OSError:  # an unusable cache: this process uses the library it built
                pass
        return _load(built)  # the loader keeps the mapping once the file is removed


@functools.lru_cache(maxsize=1)
def _library_for_process() -> ctypes.CDLL | None:
    library = compiled_library("mlc-pool", pool_source())
    if library is None:
        return None
    library.mlc_pool_create.restype = ctypes.c_void_p
    library.mlc_pool_create.argtypes = [ctypes.c_int, ctypes.c_int64]
    library.mlc_pool_run.restype = ctypes.c_int
    library.mlc_pool_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64]
    library.mlc_pool_destroy.restype = None
    library.mlc_pool_destroy.argtypes = [ctypes.c_void_p]
    return library


def native_pool_library() -> ctypes.CDLL | None:
    """The pool's loaded library (built on first use in this process, or taken from the cache),
    or None: not Linux, no C compiler driver, a failed build, or `MLC_CPU_POOL=python`."""
    if os.environ.get(POOL_VARIABLE, "").strip().lower() == "python":
        return None
    return _library_for_process()


def spin_nanoseconds(threads: int) -> int:
    """SPIN_NANOSECONDS, or 0 when the threads outnumber the cores this process may use: a
    spinning worker would then hold a core that the caller or a worker with work needs."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return SPIN_NANOSECONDS if threads <= cores else 0


class NativeProgramPool:
    """A native pool of `threads` threads (the caller's among them), made on first use and made
    again in a forked child (see the module docstring). `run(address, pointers, programs)` runs
    `<kernel>__programs` at `address` over [0, programs) with `pointers` (a ctypes array of
    `void*`), in one call without the GIL."""

    def __init__(self, library: ctypes.CDLL, threads: int):
        self.threads = threads
        self._library = library
        self._run = library.mlc_pool_run
        self._handle: int | None = None
        self._pid = -1
        self._finalizer: weakref.finalize | None = None

    def _make(self) -> int:
        handle = self._library.mlc_pool_create(self.threads, spin_nanoseconds(self.threads))
        if not handle:
            from mlc.runtime.cpu import CpuLoadError

            raise CpuLoadError(f"the native CPU pool of {self.threads} threads could not start its workers")
        self._handle, self._pid = handle, os.getpid()
        self._finalizer = weakref.finalize(self, _destroy, self._library, handle, self._pid)
        return handle

    def handle(self) -> int:
        """This process's pool (made here on first use, or again in a forked child)."""
        handle = self._handle if self._pid == os.getpid() else None
        return self._make() if handle is None else handle

    @property
    def owner(self) -> int:
        """The process id whose pool `handle` last returned (-1: none yet)."""
        return self._pid

    @property
    def run_address(self) -> int:
        """The address of `mlc_pool_run`, for native callers (`native_call.py`)."""
        address = ctypes.cast(self._run, ctypes.c_void_p).value
        assert address is not None
        return address

    def run(self, address: int, pointers: ctypes.Array, programs: int) -> None:  # type: ignore[type-arg]
        handle = self.handle()
        if self._run(handle, address, len(pointers), pointers, programs) != 0:
            raise ValueError(f"a kernel with {len(pointers)} pointers: the native pool passes at most {MAX_POINTERS}")

    def close(self) -> None:
        """Stops and joins the workers; a later `run` starts new ones."""
        if self._finalizer is not None:
            self._finalizer()
        self._handle, self._pid, self._finalizer = None, -1, None


def _destroy(library: ctypes.CDLL, handle: int, pid: int) -> None:
    if os.getpid() == pid:  # in a forked child the workers do not exist: nothing to join
        library.mlc_pool_destroy(handle)
