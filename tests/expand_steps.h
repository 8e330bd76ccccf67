/* The tests' own expansion of a signed-value expression text with steps (memsnap/expr.h's
 * syntax), independent of the library: a body is re-read for each iteration r of its group,
 * `{V,S}` is V + r S (wrapping) and `^{C,S}` is C + r S. The values are appended to
 * *values (malloc'ed, grown as needed; *count of them, room for *capacity). */
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

static inline const char *expand_steps(const char *p, int64_t **values, size_t *count,
                                       size_t *capacity, int64_t r) {
  for (;;) {
    while (*p == ' ')
      p++;
    if (!*p || *p == ')') return p;
    int64_t value = 0, value_step = 0;
    const char *body = NULL;
    if (*p == '(') {
      body = p + 1;
      int open = 1;
      for (p++; open; p++)
        open += *p == '(' ? 1 : *p == ')' ? -1 : 0;
    } else if (*p == '{') {
      char *end;
      value = strtoll(p + 1, &end, 10);
      value_step = strtoll(end + 1, &end, 10);
      p = end + 1;
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
      if (braced) repeat_step = strtoll(end + 1, &end, 10), end++;
      p = end;
    }
    repeat += repeat_step * r;
    for (int64_t q = 0; q < repeat; q++) {
      if (body)
        expand_steps(body, values, count, capacity, q);
      else
        expand_steps_add(values, count, capacity,
                         (int64_t)((uint64_t)value + (uint64_t)value_step * (uint64_t)r));
    }
  }
}

#endif
