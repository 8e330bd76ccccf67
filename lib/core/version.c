/* The library's version at run time (memsnap/api.h): the MS_VERSION_* macros as this
 * library was compiled, for a program to compare with the header it was compiled with. */
#include "memsnap/api.h"

const char *ms_version_string(void) { return MS_VERSION_STRING; }

unsigned ms_version_number(void) { return MS_VERSION_NUMBER; }
