"""ctypes mirror of the parts of libmemsnap's public API that the module calls.

Every structure below copies a declaration of include/memsnap/ field for field (the header
is named beside it); ctypes lays the fields out as the C compiler does, so the offsets and
sizes follow from the declarations. Parsing, decoding and simulation stay in the library:
this file only declares how to call it.

The library is found as memsnap/__init__.py says (MEMSNAP_LIBRARY, then the path written
into _config.py when the package was built or installed, then the dynamic loader).
"""
import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_int, c_size_t, c_uint8,
                    c_uint16, c_uint32, c_uint64, c_void_p)

try:
    from . import _config
except ImportError:  # the package straight from the source tree: nothing configured
    _config = None

# memsnap/access.h
MS_ACCESS_KIND_COUNT = 3
MS_SITE_NONE = 0xFFFFFFFF
MS_BATCH_CAPACITY = 4096


class Access(Structure):
    _fields_ = [("address", c_uint64), ("site", c_uint32), ("thread", c_uint16),
                ("size", c_uint8), ("kind", c_uint8)]


class Batch(Structure):
    _fields_ = [("accesses", POINTER(Access)), ("count", c_size_t), ("capacity", c_size_t)]


# memsnap/sites.h
class Site(Structure):
    _fields_ = [("pc", c_uint64), ("object", c_char_p), ("function", c_char_p),
                ("file", c_char_p), ("line", c_uint32)]


# memsnap/stream.h
MS_STREAM_FLAGS = {"truncated": 1 << 0, "sampled": 1 << 1, "exec": 1 << 2, "children": 1 << 3,
                   "exec_followed": 1 << 4, "recovered": 1 << 5}


class StreamInfo(Structure):
    _fields_ = [("program", c_char_p), ("argc", c_int), ("argv", POINTER(c_char_p)),
                ("arch", c_char_p), ("capture", c_char_p), ("thread_count", c_uint32),
                ("access_count", c_uint64), ("flags", c_uint32), ("sample_on", c_uint64),
                ("sample_off", c_uint64), ("exit_status", c_int), ("children", c_uint32),
                ("execs", c_uint32), ("capture_failure", c_char_p), ("sites", c_void_p),
                ("objects", c_void_p)]


class SourceStruct(Structure):
    pass


# ms_source_next and ms_source_info are static inline in stream.h: the module calls the
# source's ops->next itself and reads its info in place, as they do.
SourceNext = CFUNCTYPE(c_int, POINTER(SourceStruct), POINTER(Batch))


class SourceOps(Structure):
    _fields_ = [("next", SourceNext), ("seek", c_void_p), ("destroy", c_void_p)]


SourceStruct._fields_ = [("ops", POINTER(SourceOps)), ("info", StreamInfo)]


# memsnap/capture.h and memsnap/open.h
class CaptureOptions(Structure):
    _fields_ = [("tool_dir", c_char_p), ("quiet", c_int), ("via", c_int),
                ("sample_on", c_uint64), ("sample_off", c_uint64), ("no_follow_exec", c_int),
                ("objects", c_int), ("tool_messages", c_void_p), ("tool_messages_context", c_void_p)]


class OpenOptions(Structure):
    _fields_ = [("capture", CaptureOptions), ("expand_seeds", c_int),
                ("seed_footprint", c_uint64), ("seed_length", c_uint64),
                ("pick_rank", c_int), ("pick_thread", c_int), ("rank", c_uint32),
                ("thread", c_uint32)]


# memsnap/cache.h
MS_HIERARCHY_MAX_LEVELS = 8
MS_CACHE_NAME_MAX = 64
MS_HIERARCHY_CATALOG_EVALUATION = 46


class CacheLevelConfig(Structure):
    _fields_ = [("size", c_uint64), ("line_size", c_uint32), ("associativity", c_uint32),
                ("policy", c_int)]


class HierarchyConfig(Structure):
    _fields_ = [("name", c_char * MS_CACHE_NAME_MAX), ("level_count", c_int),
                ("levels", CacheLevelConfig * MS_HIERARCHY_MAX_LEVELS),
                ("write_policy", c_int), ("model", c_int), ("seed", c_uint64)]


class HierarchyEntry(Structure):
    _fields_ = [("name", c_char_p), ("spec", c_char_p), ("source", c_char_p)]


class CacheCounts(Structure):
    _fields_ = [("accesses", c_uint64), ("misses", c_uint64)]


class CacheStats(Structure):
    _fields_ = [("total", CacheCounts), ("kinds", CacheCounts * MS_ACCESS_KIND_COUNT),
                ("writebacks", c_uint64), ("thread_count", c_uint32),
                ("thread_kinds", POINTER(CacheCounts)), ("site_count", c_uint32),
                ("site_misses", POINTER(c_uint64)), ("unsited_misses", c_uint64)]


# (name, result type, argument types) of every function the module calls.
_PROTOTYPES = [
    ("ms_version_string", c_char_p, []),
    ("ms_status_name", c_char_p, [c_int]),
    ("ms_error_message", c_char_p, []),
    ("ms_error_clear", None, []),
    ("ms_batch_init", c_int, [POINTER(Batch), c_size_t]),
    ("ms_batch_free", None, [POINTER(Batch)]),
    ("ms_access_kind_name", c_char_p, [c_int]),
    ("ms_site_table_count", c_uint32, [c_void_p]),
    ("ms_site_table_get", POINTER(Site), [c_void_p, c_uint32]),
    ("ms_site_describe", c_char_p, [POINTER(Site), c_char_p, c_size_t]),
    ("ms_input_kind_of", c_int, [c_char_p, POINTER(c_int)]),
    ("ms_input_kind_name", c_char_p, [c_int]),
    ("ms_open", c_int, [c_char_p, c_int, POINTER(c_char_p), POINTER(OpenOptions),
                        POINTER(POINTER(SourceStruct))]),
    ("ms_source_destroy", None, [POINTER(SourceStruct)]),
    ("ms_cache_policy_parse", c_int, [c_char_p]),
    ("ms_cache_policy_name", c_char_p, [c_int]),
    ("ms_cache_model_parse", c_int, [c_char_p]),
    ("ms_cache_model_name", c_char_p, [c_int]),
    ("ms_hierarchy_parse", c_int, [c_char_p, POINTER(HierarchyConfig)]),
    ("ms_hierarchy_config_check", c_int, [POINTER(HierarchyConfig)]),
    ("ms_hierarchy_config_describe", c_char_p, [POINTER(HierarchyConfig), c_char_p, c_size_t]),
    ("ms_hierarchy_catalog_count", c_int, []),
    ("ms_hierarchy_catalog_get", POINTER(HierarchyEntry), [c_int]),
    ("ms_hierarchy_set_new", c_int, [POINTER(HierarchyConfig), c_int, POINTER(c_void_p)]),
    ("ms_hierarchy_set_free", None, [c_void_p]),
    ("ms_hierarchy_set_access_batch", c_int, [c_void_p, POINTER(Batch)]),
    ("ms_hierarchy_set_flush", c_int, [c_void_p]),
    ("ms_hierarchy_set_count", c_int, [c_void_p]),
    ("ms_hierarchy_set_get", c_void_p, [c_void_p, c_int]),
    ("ms_hierarchy_config_of", POINTER(HierarchyConfig), [c_void_p]),
    ("ms_hierarchy_level_stats", None, [c_void_p, c_int, POINTER(CacheStats)]),
]


def _candidates():
    """Where the library may be, in the order tried."""
    given = os.environ.get("MEMSNAP_LIBRARY")
    if given:
        return [given], "MEMSNAP_LIBRARY=" + given
    paths = []
    if _config is not None and _config.LIBRARY:
        paths.append(_config.LIBRARY)
    paths.append("libmemsnap.so.0")  # the dynamic loader's search (ldconfig, LD_LIBRARY_PATH)
    return paths, " or ".join(paths)


def _load():
    paths, described = _candidates()
    errors = []
    for path in paths:
        try:
            library = ctypes.CDLL(path)
            break
        except OSError as error:
            errors.append(str(error))
    else:
        raise ImportError("memsnap: cannot load libmemsnap (%s): %s; set MEMSNAP_LIBRARY to "
                          "the path of libmemsnap.so" % (described, "; ".join(errors)))
    for name, result, arguments in _PROTOTYPES:
        function = getattr(library, name)
        function.restype = result
        function.argtypes = arguments
    return library


lib = _load()


def valgrind_tool_dir():
    """The installed Valgrind tool folder written into _config.py at install time, or None
    (the build tree's, or $MEMSNAP_VALGRIND_LIB, which the library finds itself)."""
    if os.environ.get("MEMSNAP_VALGRIND_LIB") or _config is None:
        return None
    return _config.VALGRIND_LIB
