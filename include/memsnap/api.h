/* memsnap's version and the export macro of its public API.
 *
 * The version is written here and nowhere else: CMake reads MS_VERSION_MAJOR, _MINOR and
 * _PATCH from this file for project(VERSION), the shared library's soname and memsnap.pc.
 * MS_VERSION_* give the version of the header a program was compiled with;
 * ms_version_number() and ms_version_string() that of the library it runs with.
 *
 * libmemsnap.so is compiled with hidden visibility: it exports what carries MS_API, which
 * is every function and variable declared in include/memsnap/ and nothing else
 * (tests/install/test_exports.sh checks both directions).
 */
#ifndef MEMSNAP_API_H
#define MEMSNAP_API_H

#if defined(__GNUC__) || defined(__clang__)
#define MS_API __attribute__((visibility("default")))
#else
#define MS_API
#endif

#define MS_VERSION_MAJOR 0
#define MS_VERSION_MINOR 1
#define MS_VERSION_PATCH 0
/* 10000 * major + 100 * minor + patch: 0.1.0 is 100. */
#define MS_VERSION_NUMBER (MS_VERSION_MAJOR * 10000 + MS_VERSION_MINOR * 100 + MS_VERSION_PATCH)
/* "MAJOR.MINOR.PATCH", from the three numbers above. */
#define MS_VERSION_QUOTE_(text) #text
#define MS_VERSION_QUOTE(text) MS_VERSION_QUOTE_(text)
#define MS_VERSION_STRING MS_VERSION_QUOTE(MS_VERSION_MAJOR.MS_VERSION_MINOR.MS_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version: MS_VERSION_STRING and MS_VERSION_NUMBER as it was built. */
MS_API const char *ms_version_string(void);
MS_API unsigned ms_version_number(void);

#ifdef __cplusplus
}
#endif

#endif
