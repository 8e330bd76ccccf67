/* Private to the signature module: the counters the model keeps per bin. */
#ifndef MEMSNAP_SIGNATURE_INTERNAL_H
#define MEMSNAP_SIGNATURE_INTERNAL_H

#include <stdint.h>

#include "memsnap/signature.h"

typedef struct sig_counts {
  uint64_t executions; /* accesses seen (per-site binning) */
  uint64_t modeled;    /* accesses sent to the model */
  uint64_t references; /* line references */
  uint64_t cold;       /* first references to a line */
  /* references by stack position: [k] for reuse bin k (R <= 2^16), [DEPTHS] for R > 2^16 */
  uint64_t positions[MS_SIGNATURE_DEPTHS + 1];
  uint64_t yes[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
  uint64_t trials[MS_SIGNATURE_MAX_LEVELS][MS_SIGNATURE_DEPTHS];
} sig_counts;

/* The whole-program counts of a model (not per site). Only executions, modeled, references,
 * cold and positions are current: the whole program's yes/trials wait in the model's walk
 * histograms until ms_signature_model_result folds them in. */
const sig_counts *sig_model_counts(const ms_signature_model *model);

/* For tests: with portable set, the whole-program loop never takes its PEXT variant (taken
 * where sig_model_fast_cpu() says the CPU has it), so both variants can be compared. */
void sig_model_set_portable(ms_signature_model *model, int portable);
int sig_model_fast_cpu(void);

#endif
