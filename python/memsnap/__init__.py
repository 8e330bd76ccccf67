"""memsnap from Python: any input as a source of accesses in numpy batches, and the cache
simulator.

    import memsnap
    with memsnap.open("app.mtr") as trace:          # or memsnap.open(argv=["./app", "arg"])
        for batch in trace:                         # numpy structured arrays (ACCESS_DTYPE)
            ...
    memsnap.simulate("app.mtr", "nehalem")          # what `memsnap sim --json` reports

The module calls libmemsnap.so through ctypes (_capi.py): opening, decoding, observing a
live program and simulating are the library's. A batch is the library's ms_access records
copied into numpy as they are (16 bytes each, one memmove per library batch). Errors of the
library are raised as MemsnapError with its message, which names the file and the offset.

The library is found through $MEMSNAP_LIBRARY, else the path written into the package when
it was built (the build tree's build/python) or installed (`make install`), else the
dynamic loader's search. docs/python.md is the manual.
"""
import ctypes
import os

import numpy as np

from . import _capi
from ._capi import lib

__all__ = ["ACCESS_DTYPE", "BATCH_SIZE", "LOAD", "STORE", "MODIFY", "KIND_NAMES", "SITE_NONE",
           "MemsnapError", "Source", "open", "simulate", "hierarchies", "__version__"]

__version__ = lib.ms_version_string().decode()

LOAD, STORE, MODIFY = 0, 1, 2
KIND_NAMES = tuple(lib.ms_access_kind_name(k).decode() for k in range(_capi.MS_ACCESS_KIND_COUNT))
SITE_NONE = _capi.MS_SITE_NONE

# numpy's view of ms_access (memsnap/access.h): the offsets and the size are those of the
# ctypes mirror of the C declaration, so that a batch is copied as it is.
_ACCESS_FIELDS = [("address", np.uint64), ("site", np.uint32), ("thread", np.uint16),
                  ("size", np.uint8), ("kind", np.uint8)]
ACCESS_DTYPE = np.dtype({"names": [name for name, _ in _ACCESS_FIELDS],
                         "formats": [dtype for _, dtype in _ACCESS_FIELDS],
                         "offsets": [getattr(_capi.Access, name).offset
                                     for name, _ in _ACCESS_FIELDS],
                         "itemsize": ctypes.sizeof(_capi.Access)})
_RECORD = ACCESS_DTYPE.itemsize
assert _RECORD == 16, "ms_access is a 16-byte record"

# Accesses per batch by default, and the library batch the module reads into: 16 library
# batches (1 MiB) per call keep Python's share of the time small.
BATCH_SIZE = 16 * _capi.MS_BATCH_CAPACITY


class MemsnapError(Exception):
    """A failure of the library: str() is its message (which file, which offset, which
    option); status is its negative ms_status code and status_name its name."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.status_name = lib.ms_status_name(status).decode()


def _check(status):
    if status < 0:
        message = lib.ms_error_message()
        raise MemsnapError(status, message.decode(errors="replace") if message else "")
    return status


def _text(value):
    return value.decode(errors="surrogateescape") if value is not None else None


class Source:
    """A stream of accesses opened by memsnap.open(): read it by batches (next_batch, or
    iteration), ask what it is (info) and where its accesses come from (site). Not safe to
    share between threads. Close it (close(), or a with block) to free the library's
    source at once; a live program still running is then killed (SIGKILL)."""

    def __init__(self, pointer, input_path, keep_alive):
        self._source = pointer
        self._input = input_path
        self._keep_alive = keep_alive  # arguments the library may still point to
        self._batch = _capi.Batch()
        _check(lib.ms_batch_init(ctypes.byref(self._batch), BATCH_SIZE))
        self._pending = None  # accesses of a library batch not yet returned
        self._ended = False

    # ---- reading ----

    def _next_library_batch(self):
        """Fills self._batch from the library; returns its count, 0 at the end."""
        if self._ended:
            return 0
        source = self._open_source()
        count = _check(source.contents.ops.contents.next(source, ctypes.byref(self._batch)))
        if count == 0:
            self._ended = True
        return self._batch.count if count else 0

    def _batch_address(self, index=0):
        return ctypes.cast(self._batch.accesses, ctypes.c_void_p).value + index * _RECORD

    def next_batch(self, n=BATCH_SIZE):
        """The next accesses of the stream, n of them (fewer only at the end), as a numpy
        array of ACCESS_DTYPE; None once the stream has ended (never an empty array).
        Damaged input raises MemsnapError, and the accesses this call had read are lost."""
        if n < 1:
            raise ValueError("next_batch: n must be at least 1")
        self._open_source()
        out = np.empty(n, ACCESS_DTYPE)
        filled = 0
        if self._pending is not None:
            filled = min(n, len(self._pending))
            out[:filled] = self._pending[:filled]
            self._pending = self._pending[filled:] if filled < len(self._pending) else None
        while filled < n:
            count = self._next_library_batch()
            if count == 0:
                break
            take = min(count, n - filled)
            ctypes.memmove(out.ctypes.data + filled * _RECORD, self._batch_address(),
                           take * _RECORD)
            filled += take
            if take < count:
                self._pending = np.empty(count - take, ACCESS_DTYPE)
                ctypes.memmove(self._pending.ctypes.data, self._batch_address(take),
                               (count - take) * _RECORD)
        if filled == 0:
            return None
        return out if filled == n else out[:filled].copy()

    def __iter__(self):
        """Batches of BATCH_SIZE accesses until the end of the stream."""
        while True:
            batch = self.next_batch()
            if batch is None:
                return
            yield batch

    def _simulate_into(self, hierarchy_set):
        """Feeds the rest of the stream to a library hierarchy set."""
        if self._pending is not None:
            pending = self._pending
            self._pending = None
            view = _capi.Batch(ctypes.cast(pending.ctypes.data, ctypes.POINTER(_capi.Access)),
                               len(pending), len(pending))
            _check(lib.ms_hierarchy_set_access_batch(hierarchy_set, ctypes.byref(view)))
        while self._next_library_batch():
            _check(lib.ms_hierarchy_set_access_batch(hierarchy_set, ctypes.byref(self._batch)))

    # ---- what the stream is ----

    @property
    def info(self):
        """What the stream's description (ms_stream_info) says now: a live program's grows
        while it runs (threads, sites) and gets its exit status at the end. accesses is
        None when the input does not say it in advance (text traces, profiles, live)."""
        info = self._open_source().contents.info
        flags = [name for name, bit in _capi.MS_STREAM_FLAGS.items() if info.flags & bit]
        kind = None
        if self._input is not None:
            code = ctypes.c_int()
            if lib.ms_input_kind_of(self._input, ctypes.byref(code)) == 0:
                kind = lib.ms_input_kind_name(code.value).decode()
            lib.ms_error_clear()
        sampled = bool(info.flags & _capi.MS_STREAM_FLAGS["sampled"])
        return {
            "input": _text(self._input),
            "kind": kind,
            "program": _text(info.program),
            "argv": [_text(info.argv[i]) for i in range(info.argc)] if info.argv else [],
            "arch": _text(info.arch),
            "capture": _text(info.capture),
            "threads": info.thread_count,
            "accesses": info.access_count or None,
            "sites": lib.ms_site_table_count(info.sites),
            "flags": flags,
            "truncated": "truncated" in flags,
            "sample": (info.sample_on, info.sample_off) if sampled else None,
            "exit_status": info.exit_status if info.exit_status >= 0 else None,
            "children": info.children,
            "execs": info.execs,
            "capture_failure": _text(info.capture_failure),
        }

    def site(self, index):
        """Site `index` of the stream's site table as a dict: id, pc, object, function,
        file, line (None or 0 where unknown) and description (as memsnap dump names it:
        "function (file:line)"). None for SITE_NONE; IndexError past the table."""
        if index == SITE_NONE:
            return None
        table = self._open_source().contents.info.sites
        if not 0 <= index < lib.ms_site_table_count(table):
            raise IndexError("site %d: the site table has %d sites"
                             % (index, lib.ms_site_table_count(table)))
        site = lib.ms_site_table_get(table, index)
        described = ctypes.create_string_buffer(512)
        lib.ms_site_describe(site, described, len(described))
        return {"id": index, "pc": site.contents.pc, "object": _text(site.contents.object),
                "function": _text(site.contents.function), "file": _text(site.contents.file),
                "line": site.contents.line, "description": _text(described.value)}

    # ---- lifetime ----

    def _open_source(self):
        if not self._source:
            raise ValueError("the memsnap source is closed")
        return self._source

    def close(self):
        """Frees the library's source (and its batch), killing a live program still running;
        further use raises ValueError."""
        if self._source:
            lib.ms_batch_free(ctypes.byref(self._batch))
            lib.ms_source_destroy(self._source)
            self._source = None
            self._pending = None

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def __del__(self):
        if getattr(self, "_source", None):
            self.close()

    def __repr__(self):
        what = _text(self._input) if self._input is not None else "live program"
        return "<memsnap.Source %s%s>" % (what, "" if self._source else " (closed)")


def open(path=None, *, argv=None, rank=None, thread=None):
    """Opens an input as a Source: `path` (a .mtr trace, a Lackey or din text trace, a .psnap
    profile replayed in full, a trace seed; the kind comes from the contents), or, with
    argv=[program, args...], the program run under observation as `memsnap record -- ...`
    does (Valgrind, or the program's own runtime if memsnap-cc built it). Of a profile
    whose threads and ranks are merged (memsnap merge), `rank` and `thread` pick what to
    replay, as the command line's --rank and --thread (default: the lowest rank, all its
    threads). Raises MemsnapError with the library's message when the input cannot be
    opened."""
    if (path is None) == (argv is None):
        raise ValueError("memsnap.open: give a path or argv=[program, args...], not both")
    options = _capi.OpenOptions()
    if rank is not None:
        options.pick_rank, options.rank = 1, int(rank)
    if thread is not None:
        options.pick_thread, options.thread = 1, int(thread)
    options.capture.quiet = 1
    tool_dir = _capi.valgrind_tool_dir()
    if tool_dir:
        options.capture.tool_dir = os.fsencode(tool_dir)
    source = ctypes.POINTER(_capi.SourceStruct)()
    if argv is not None:
        if isinstance(argv, (str, bytes)) or len(argv) == 0:
            raise ValueError("memsnap.open: argv is a list: [program, args...]")
        arguments = (ctypes.c_char_p * (len(argv) + 1))(*[os.fsencode(a) for a in argv], None)
        _check(lib.ms_open(None, len(argv), arguments, ctypes.byref(options),
                           ctypes.byref(source)))
        return Source(source, None, (arguments, options))
    encoded = os.fsencode(path)
    _check(lib.ms_open(encoded, 0, None, ctypes.byref(options), ctypes.byref(source)))
    return Source(source, encoded, options)


# ---- the cache simulator ----

def hierarchies():
    """The library's hierarchy catalog: (name, spec, source) tuples, the 46 evaluation
    hierarchies (hpcmo-01..46) first, then the named systems."""
    entries = []
    for index in range(lib.ms_hierarchy_catalog_count()):
        entry = lib.ms_hierarchy_catalog_get(index).contents
        entries.append((entry.name.decode(), entry.spec.decode(), _text(entry.source)))
    return entries


def _hierarchy_names(hierarchy):
    names = [hierarchy] if isinstance(hierarchy, str) else list(hierarchy)
    if not names:
        raise ValueError("memsnap.simulate: no hierarchy")
    expanded = []
    for name in names:  # "evaluation": the 46 evaluation hierarchies, as memsnap sim says
        if name == "evaluation":
            expanded += [entry[0] for entry in
                         hierarchies()[:_capi.MS_HIERARCHY_CATALOG_EVALUATION]]
        else:
            expanded.append(name)
    return expanded


def _parse_choice(parse, kind, text):
    value = parse(text.encode())
    if value < 0:
        raise ValueError("memsnap.simulate: unknown %s '%s'" % (kind, text))
    return value


def _counts(counts):
    accesses, misses = counts.accesses, counts.misses
    return {"accesses": accesses, "hits": accesses - misses, "misses": misses,
            # ms_cache_hit_rate's arithmetic, in doubles
            "hit_rate": 1.0 - float(misses) / float(accesses) if accesses else 0.0}


def _level_result(hierarchy, level, config, site_count):
    stats = _capi.CacheStats()
    lib.ms_hierarchy_level_stats(hierarchy, level, ctypes.byref(stats))
    result = {"level": level + 1, "size": config.size, "line_size": config.line_size,
              "associativity": config.associativity,
              "policy": lib.ms_cache_policy_name(config.policy).decode()}
    result.update(_counts(stats.total))
    result["writebacks"] = stats.writebacks
    result["kinds"] = {KIND_NAMES[k]: _counts(stats.kinds[k])
                       for k in range(_capi.MS_ACCESS_KIND_COUNT)}
    threads = []
    for thread in range(stats.thread_count):
        total = _capi.CacheCounts()
        for k in range(_capi.MS_ACCESS_KIND_COUNT):
            counts = stats.thread_kinds[thread * _capi.MS_ACCESS_KIND_COUNT + k]
            total.accesses += counts.accesses
            total.misses += counts.misses
        threads.append(dict(thread=thread, **_counts(total)))
    result["threads"] = threads
    # the library's slots past the stream's site table (room to grow) hold no misses
    site_misses = np.zeros(site_count, np.uint64)
    slots = min(site_count, stats.site_count)
    if slots:
        site_misses[:slots] = np.ctypeslib.as_array(stats.site_misses, (slots,))
    result["site_misses"] = site_misses
    result["unsited_misses"] = stats.unsited_misses
    return result


def _hierarchy_result(hierarchy, site_count):
    config = lib.ms_hierarchy_config_of(hierarchy).contents
    spec = ctypes.create_string_buffer(512)
    lib.ms_hierarchy_config_describe(ctypes.byref(config), spec, len(spec))
    return {"name": config.name.decode(), "spec": spec.value.decode(),
            "write_policy": "write-through" if config.write_policy else "write-back",
            "model": lib.ms_cache_model_name(config.model).decode(), "seed": config.seed,
            "levels": [_level_result(hierarchy, level, config.levels[level], site_count)
                       for level in range(config.level_count)]}


def simulate(source, hierarchy="nehalem", *, policy="lru", model="memsnap"):
    """Simulates the accesses of `source` (a path, opened and closed here, or a Source,
    read from where it stands to its end) on one or several cache hierarchies in one pass,
    as `memsnap sim --json` does. hierarchy: a catalog name ("nehalem", "hpcmo-07"; see
    hierarchies()), "evaluation" (the 46 evaluation hierarchies), a spec
    "size/line/ways[,...]" level 1 first ("32k/64/8,256KiB/64/8"), or a list of them.
    policy: lru, fifo, random or plru; model: memsnap or cachegrind (memsnap/cache.h).

    Returns a list with one dict per hierarchy: name, spec, write_policy, model, seed and
    levels, each level with its geometry, accesses, hits, misses, hit_rate, writebacks,
    the same split by kind ("kinds") and by thread ("threads"), and its misses per site
    (site_misses, a numpy array indexed by site id, as long as the stream's site table).
    The source is read to its end; a path is closed again."""
    names = _hierarchy_names(hierarchy)
    policy_code = _parse_choice(lib.ms_cache_policy_parse, "policy", policy)
    model_code = _parse_choice(lib.ms_cache_model_parse, "model", model)
    configs = (_capi.HierarchyConfig * len(names))()
    for config, name in zip(configs, names):
        _check(lib.ms_hierarchy_parse(name.encode(), ctypes.byref(config)))
        for level in range(config.level_count):
            config.levels[level].policy = policy_code
        config.model = model_code
        _check(lib.ms_hierarchy_config_check(ctypes.byref(config)))
    hierarchy_set = ctypes.c_void_p()
    _check(lib.ms_hierarchy_set_new(configs, len(names), ctypes.byref(hierarchy_set)))
    try:
        if isinstance(source, Source):
            source._simulate_into(hierarchy_set)
            site_count = source.info["sites"]
        else:
            with open(source) as opened:
                opened._simulate_into(hierarchy_set)
                site_count = opened.info["sites"]
        _check(lib.ms_hierarchy_set_flush(hierarchy_set))
        return [_hierarchy_result(lib.ms_hierarchy_set_get(hierarchy_set, index), site_count)
                for index in range(lib.ms_hierarchy_set_count(hierarchy_set))]
    finally:
        lib.ms_hierarchy_set_free(hierarchy_set)
