/* memsnap-rt.h: memsnap-cc includes this file in every C and C++ translation unit that it
 * compiles (-include). It declares the load and store callbacks of SanitizerCoverage with
 * x86's `no_caller_saved_registers`, and refers to them (a `used` array, since clang
 * drops unused declarations), so that the calls that the coverage pass inserts use this
 * declaration: the caller keeps its registers live across the call instead of spilling
 * them. libmemsnap-rt's callbacks (assembly) preserve every register but the flags.
 * Only for clang on x86-64; elsewhere this file declares nothing. */
#if defined(__x86_64__) && defined(__clang__) && !defined(__ASSEMBLER__) && !defined(MEMSNAP_RT_H_)
#define MEMSNAP_RT_H_
#ifdef __cplusplus
extern "C" {
#endif
#define MEMSNAP_RT_CALLBACKS_(n, type)                                                             \
  __extension__ __attribute__((no_caller_saved_registers)) void __sanitizer_cov_load##n(type *);   \
  __extension__ __attribute__((no_caller_saved_registers)) void __sanitizer_cov_store##n(type *);
/* the pointer types of the pass's own declarations (i8* ... i128*) */
MEMSNAP_RT_CALLBACKS_(1, unsigned char)
MEMSNAP_RT_CALLBACKS_(2, unsigned short)
MEMSNAP_RT_CALLBACKS_(4, unsigned int)
MEMSNAP_RT_CALLBACKS_(8, unsigned long long)
MEMSNAP_RT_CALLBACKS_(16, __int128)
#undef MEMSNAP_RT_CALLBACKS_
static void (*const __memsnap_rt_callbacks[])(void) __attribute__((used, unused)) = {
    (void (*)(void))__sanitizer_cov_load1,  (void (*)(void))__sanitizer_cov_load2,
    (void (*)(void))__sanitizer_cov_load4,  (void (*)(void))__sanitizer_cov_load8,
    (void (*)(void))__sanitizer_cov_load16, (void (*)(void))__sanitizer_cov_store1,
    (void (*)(void))__sanitizer_cov_store2, (void (*)(void))__sanitizer_cov_store4,
    (void (*)(void))__sanitizer_cov_store8, (void (*)(void))__sanitizer_cov_store16};
#ifdef __cplusplus
}
#endif
#endif
