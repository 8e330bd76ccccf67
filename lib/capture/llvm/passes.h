// memsnap-pass.so's transformations (memsnap-pass.cpp registers them).
#ifndef MEMSNAP_PASSES_H
#define MEMSNAP_PASSES_H

#include "llvm/IR/Module.h"

// Appends a record of every load and store inline, instead of SanitizerCoverage's
// callbacks (inline-records.cpp). Whether the module changed.
bool memsnapInlineRecords(llvm::Module &module);

#endif
