/* The tests' own expansion of a signed-value expression text with steps (memsnap/expr.h's
 * syntax), independent of the library: a body is re-read for each iteration r of its group,
 * `{V,S}` is V + r S (wrapping) and `^{C,S}` is C + r S, with r the iteration of the group
 * that holds the item, or with `@L` of the L-th group around it. The values are appended
 * to *values (malloc'ed, grown as needed; *count of them, room for *capacity). */
#ifndef MEMSNAP_TESTS_EXPAND_STEPS_H
#define MEMSNAP_TESTS_EXPAND_STEPS_H

#include <stdint.h>
#include <stdlib.h>

static inline void expand_steps_add(int64_t **values, size_t *count, size_t *capacity,
                                    int64_t value) {
  if (*count == *capacity) {
    *capacity = *capacity ? *capacity * 2 : 256;
    *values = realloc(*values, *capacity * sizeof **values);
    if (!*values) abort();
  }
  (*values)[(*count)++] = value;
}

/* `,S` or `,S@L` and the closing brace: the step, and L in *level (1 without @). */
static inline const char *expand_steps_step(const char *p, int64_t *step, int *level) {
  char *end;
  *step = strtoll(p + 1, &end, 10);
  *level = 1;
  if (*end == '@') *level = (int)strtol(end + 1, &end, 10);
  return end + 1;
}

/* rs[0 .. depth): the iterations of the groups around p, innermost last. */
static inline const char *expand_steps_in(const char *p, int64_t **values, size_t *count,
                                          size_t *capacity, int64_t *rs, int depth) {
  for (;;) {
    while (*p == ' ')
      p++;
    if (!*p || *p == ')') return p;
    int64_t value = 0, value_step = 0;
    int value_level = 1, repeat_level = 1;
    const char *body = NULL;
    if (*p == '(') {
      body = p + 1;
      int open = 1;
      for (p++; open; p++)
        open += *p == '(' ? 1 : *p == ')' ? -1 : 0;
    } else if (*p == '{') {
      char *end;
      value = strtoll(p + 1, &end, 10);
      p = expand_steps_step(end, &value_step, &value_level);
    } else {
      char *end;
      value = strtoll(p, &end, 10);
      p = end;
    }
    int64_t repeat = 1, repeat_step = 0;
    if (*p == '^') {
      char *end;
      int braced = p[1] == '{';
      repeat = strtoll(p + 1 + braced, &end, 10);
      p = end;
      if (braced) p = expand_steps_step(p, &repeat_step, &repeat_level);
    }
    int64_t value_r = depth >= value_level ? rs[depth - value_level] : 0;
    int64_t repeat_r = depth >= repeat_level ? rs[depth - repeat_level] : 0;
    repeat += repeat_step * repeat_r;
    for (int64_t q = 0; q < repeat; q++) {
      if (body) {
        rs[depth] = q;
        expand_steps_in(body, values, count, capacity, rs, depth + 1);
      } else
        expand_steps_add(values, count, capacity,
                         (int64_t)((uint64_t)value + (uint64_t)value_step * (uint64_t)value_r));
    }
  }
}

/* The whole text (r: unused, 0; kept for the callers' signature). */
static inline const char *expand_steps(const char *p, int64_t **values, size_t *count,
                                       size_t *capacity, int64_t r) {
  int64_t rs[80] = {r};
  return expand_steps_in(p, values, count, capacity, rs, 0);
}

#endif
