/* Text form of a fold: `((+16^15 +48)^127 +16^15 -36816)^16384`.
 *
 * Grammar (docs/formats.md, "Nested-repetition expressions"):
 *   expression := { term }          terms separated by white space (or by parentheses)
 *   term       := ITEM [ '^' COUNTS ] | '(' term { term } ')' '^' COUNTS
 *   ITEM       := VALUE | '{' VALUE ',' STEP '}'
 *   COUNTS     := COUNT | '{' COUNT ',' STEP '}'
 *   COUNT      := decimal digits, 1 .. 2^64-1
 *   STEP       := a signed decimal int64 other than 0, "+8", "-1"
 * A step is added at each iteration of the enclosing group, whose body must be a term of
 * the top level (fold.h, ms_fold_term).
 * VALUE tokens are any run of characters other than white space, '(', ')' and '^'; their
 * meaning comes from a caller's callback (signed strides, site ids, ...). The writer puts
 * exactly one space between terms and `^COUNT` after values only when COUNT > 1, so
 * format(parse(format(F))) == format(F). Both directions are iterative (explicit stacks):
 * nesting depth is bounded by MS_FOLD_MAX_DEPTH, not by the C stack.
 */
#include "fold_internal.h"

#include "memsnap/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Built-in value syntaxes ----------------------------------------------------------- */

int ms_fold_format_signed(char *buffer, int64_t value, void *context) {
  (void)context;
  return snprintf(buffer, MS_FOLD_VALUE_TEXT_MAX, "%+" PRId64, value);
}

int ms_fold_format_decimal(char *buffer, int64_t value, void *context) {
  (void)context;
  return snprintf(buffer, MS_FOLD_VALUE_TEXT_MAX, "%" PRId64, value);
}

static int parse_integer(const char *token, size_t length, bool allow_plus, int64_t *value) {
  size_t at = 0;
  bool negative = false;
  if (at < length && (token[at] == '-' || (allow_plus && token[at] == '+')))
    negative = token[at++] == '-';
  if (at == length) return 1;
  uint64_t magnitude = 0;
  for (; at < length; at++) {
    if (token[at] < '0' || token[at] > '9') return 1;
    if (fold_mul_overflows(magnitude, 10, &magnitude) ||
        fold_add_overflows(magnitude, (uint64_t)(token[at] - '0'), &magnitude))
      return 1;
  }
  if (negative) {
    if (magnitude > (uint64_t)INT64_MAX + 1) return 1;
    *value = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)magnitude;
  } else {
    if (magnitude > INT64_MAX) return 1;
    *value = (int64_t)magnitude;
  }
  return 0;
}

int ms_fold_parse_signed(const char *token, size_t length, int64_t *value, void *context) {
  (void)context;
  return parse_integer(token, length, true, value);
}

int ms_fold_parse_decimal(const char *token, size_t length, int64_t *value, void *context) {
  (void)context;
  return parse_integer(token, length, false, value);
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static bool is_delimiter(char c) { return is_space(c) || c == '(' || c == ')' || c == '^'; }

/* ---- Writer ----------------------------------------------------------------------------- */

typedef struct text_buffer {
  char *data;
  size_t length, capacity;
} text_buffer;

static bool text_append(text_buffer *text, const char *bytes, size_t length) {
  if (text->length + length + 1 > text->capacity) {
    size_t capacity = text->capacity ? text->capacity : 256;
    while (capacity < text->length + length + 1)
      capacity *= 2;
    char *grown = realloc(text->data, capacity);
    if (!grown) return false;
    text->data = grown;
    text->capacity = capacity;
  }
  memcpy(text->data + text->length, bytes, length);
  text->length += length;
  text->data[text->length] = '\0';
  return true;
}

static bool text_count(text_buffer *text, uint64_t count, int64_t step) {
  char digits[64];
  int n = step ? snprintf(digits, sizeof digits, "^{%" PRIu64 ",%+" PRId64 "}", count, step)
               : snprintf(digits, sizeof digits, "^%" PRIu64, count);
  return text_append(text, digits, (size_t)n);
}

typedef struct format_frame {
  const ms_fold_term *terms;
  size_t length, index;
} format_frame;

static int format_value(text_buffer *text, ms_fold_value_formatter formatter, void *context,
                        int64_t value) {
  char buffer[MS_FOLD_VALUE_TEXT_MAX];
  int n = formatter(buffer, value, context);
  if (n <= 0 || n >= MS_FOLD_VALUE_TEXT_MAX)
    return ms_error_set(MS_ERR_ARG, "fold: the value formatter failed for %" PRId64, value);
  for (int i = 0; i < n; i++)
    if (is_delimiter(buffer[i]) || buffer[i] == '\0')
      return ms_error_set(MS_ERR_ARG,
                          "fold: the value formatter wrote '%.*s' for %" PRId64
                          " (white space, '(', ')' and '^' are reserved)",
                          n, buffer, value);
  return text_append(text, buffer, (size_t)n) ? MS_OK
                                              : ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
}

int ms_fold_format(const ms_fold *fold, ms_fold_value_formatter formatter, void *context,
                   char **out, size_t *out_length) {
  *out = NULL;
  if (out_length) *out_length = 0;
  if (!fold->finished) return ms_error_set(MS_ERR_ARG, "fold: format of an unfinished fold");
  text_buffer text = {0};
  format_frame *stack = malloc(((size_t)fold->depth + 1) * sizeof *stack);
  if (!stack || !text_append(&text, "", 0)) {
    free(stack);
    free(text.data);
    return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
  }
  int status = MS_OK;
  size_t depth = 0;
  stack[depth].terms = ms_fold_sequence(fold, 0, &stack[depth].length);
  stack[depth++].index = 0;
  while (status == MS_OK && depth > 0) {
    format_frame *frame = &stack[depth - 1];
    if (frame->index == frame->length) {
      if (--depth == 0) break;
      frame = &stack[depth - 1];
      const ms_fold_term *group = &frame->terms[frame->index];
      if (!text_append(&text, ")", 1) ||
          !text_count(&text, group->count, fold_steps_of(fold, group).count_step))
        status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
      frame->index++;
      continue;
    }
    const ms_fold_term *term = &frame->terms[frame->index];
    if (frame->index > 0 && !text_append(&text, " ", 1)) {
      status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
      break;
    }
    if (term->group) {
      if (!text_append(&text, "(", 1)) {
        status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
        break;
      }
      stack[depth].terms = ms_fold_sequence(fold, term->group, &stack[depth].length);
      stack[depth++].index = 0;
      continue;
    }
    ms_fold_steps steps = fold_steps_of(fold, term);
    if (steps.value_step && !text_append(&text, "{", 1))
      status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    if (status == MS_OK) status = format_value(&text, formatter, context, term->value);
    if (status == MS_OK && steps.value_step) {
      char step[32];
      int n = snprintf(step, sizeof step, ",%+" PRId64 "}", steps.value_step);
      if (!text_append(&text, step, (size_t)n))
        status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    }
    if (status == MS_OK && (term->count > 1 || steps.count_step) &&
        !text_count(&text, term->count, steps.count_step))
      status = ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    frame->index++;
  }
  free(stack);
  if (status != MS_OK) {
    free(text.data);
    return status;
  }
  *out = text.data;
  if (out_length) *out_length = text.length;
  return MS_OK;
}

/* ---- Reader ----------------------------------------------------------------------------- */

typedef struct parse_level {
  size_t first_term; /* index in the term stack of the level's first term */
  size_t column;     /* column of its '(' */
  uint64_t expanded; /* elements of one iteration so far */
} parse_level;

typedef struct parser_state {
  const char *text;
  size_t length, at;
  ms_fold_term *terms;
  size_t term_count, term_capacity;
  parse_level *levels;
  size_t depth;
  size_t *error_column;
} parser_state;

static int parse_error(parser_state *state, size_t offset, const char *what) {
  if (state->error_column) *state->error_column = offset + 1;
  return ms_error_set(MS_ERR_FORMAT, "column %zu: %s", offset + 1, what);
}

/* Reads `,STEP}` at the current position (a signed int64, not 0). */
static int parse_step(parser_state *state, int64_t *step) {
  if (state->at == state->length || state->text[state->at] != ',')
    return parse_error(state, state->at, "expected ',' and a step");
  size_t start = ++state->at;
  while (state->at < state->length && state->text[state->at] != '}' &&
         !is_delimiter(state->text[state->at]))
    state->at++;
  if (state->at == state->length || state->text[state->at] != '}')
    return parse_error(state, state->at, "expected '}' after a step");
  if (parse_integer(state->text + start, state->at - start, true, step) != 0)
    return parse_error(state, start, "bad step (a signed 64-bit integer such as +8 or -1)");
  if (*step == 0) return parse_error(state, start, "zero step (write the term without braces)");
  state->at++;
  return MS_OK;
}

/* Reads `^COUNT` or `^{COUNT,STEP}` at the current position (required after ')', optional
 * after a value). */
static int parse_count(parser_state *state, bool required, uint64_t *count, int64_t *step) {
  *count = 1;
  *step = 0;
  if (state->at == state->length || state->text[state->at] != '^') {
    if (!required) return MS_OK;
    return parse_error(state, state->at, "expected '^' and a count after ')'");
  }
  bool braced = ++state->at < state->length && state->text[state->at] == '{';
  size_t start = state->at += braced;
  uint64_t value = 0;
  while (state->at < state->length && state->text[state->at] >= '0' &&
         state->text[state->at] <= '9') {
    if (fold_mul_overflows(value, 10, &value) ||
        fold_add_overflows(value, (uint64_t)(state->text[state->at] - '0'), &value))
      return parse_error(state, start, "count beyond 2^64-1");
    state->at++;
  }
  if (state->at == start) return parse_error(state, start, "expected a count after '^'");
  if (braced) {
    int status = parse_step(state, step);
    if (status != MS_OK) return status;
  }
  if (state->at < state->length && !is_delimiter(state->text[state->at]))
    return parse_error(state, state->at, "unexpected character after a count");
  if (state->at < state->length && state->text[state->at] == '^')
    return parse_error(state, state->at, "unexpected '^' after a count");
  if (value == 0) return parse_error(state, start, "zero count");
  *count = value;
  return MS_OK;
}

static int parse_push(parser_state *state, ms_fold *fold, const ms_fold_term *term, size_t column) {
  uint64_t length;
  parse_level *level = &state->levels[state->depth];
  if (fold_term_has_step(term) && state->depth != 1)
    return parse_error(state, column, "a step belongs to a term in the body of a top-level group");
  if (!fold_term_length(fold, term, &length) ||
      fold_add_overflows(level->expanded, length, &level->expanded))
    return parse_error(state, column,
                       term->group && fold->seqs[term->group].affine
                           ? "a step takes a count below 1 or beyond 2^64-1, or the expanded "
                             "length exceeds 2^64-1"
                           : "expanded length exceeds 2^64-1");
  if (state->term_count == state->term_capacity) {
    size_t capacity = state->term_capacity ? state->term_capacity * 2 : 64;
    ms_fold_term *grown = realloc(state->terms, capacity * sizeof *grown);
    if (!grown) return ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
    state->terms = grown;
    state->term_capacity = capacity;
  }
  state->terms[state->term_count++] = *term;
  return MS_OK;
}

static int parse_close(parser_state *state, ms_fold *fold) {
  size_t column = state->at;
  if (state->depth == 0) return parse_error(state, column, "unbalanced ')'");
  parse_level *level = &state->levels[state->depth];
  if (state->term_count == level->first_term) return parse_error(state, column, "empty group");
  size_t open_column = level->column;
  size_t first = level->first_term;
  state->at++;
  uint64_t count;
  int64_t count_step;
  int status = parse_count(state, true, &count, &count_step);
  if (status != MS_OK) return status;
  size_t body_length = state->term_count - first;
  if (body_length > UINT32_MAX) return parse_error(state, open_column, "group too long");
  uint32_t id = fold_sequence_create(fold, &state->terms[first], (uint32_t)body_length, 0, &status);
  if (!id)
    return status == MS_ERR_FORMAT
               ? parse_error(state, open_column, "expanded length exceeds 2^64-1")
               : status;
  state->term_count = first;
  state->depth--;
  ms_fold_term group = {0, count, id, 0};
  if (count_step && !(group.steps = fold_steps_add(fold, 0, count_step))) return MS_ERR_NOMEM;
  return parse_push(state, fold, &group, open_column);
}

static int parse_value(parser_state *state, ms_fold *fold, ms_fold_value_parser parser,
                       void *context) {
  size_t start = state->at;
  bool braced = state->text[start] == '{';
  while (state->at < state->length && !is_delimiter(state->text[state->at]) &&
         !(braced && state->text[state->at] == ','))
    state->at++;
  int64_t value, value_step = 0;
  size_t token = start + braced;
  if (parser(state->text + token, state->at - token, &value, context) != 0) {
    char what[96];
    int shown = state->at - start > 40 ? 40 : (int)(state->at - start);
    snprintf(what, sizeof what, "bad value '%.*s%s'", shown, state->text + start,
             state->at - start > 40 ? "..." : "");
    return parse_error(state, start, what);
  }
  int status;
  if (braced && (status = parse_step(state, &value_step)) != MS_OK) return status;
  if (braced && state->at < state->length && !is_delimiter(state->text[state->at]))
    return parse_error(state, state->at, "unexpected character after '}'");
  uint64_t count;
  int64_t count_step;
  if ((status = parse_count(state, false, &count, &count_step)) != MS_OK) return status;
  ms_fold_term term = {value, count, 0, 0};
  if ((value_step || count_step) && !(term.steps = fold_steps_add(fold, value_step, count_step)))
    return MS_ERR_NOMEM;
  return parse_push(state, fold, &term, start);
}

static int parse_terms(parser_state *state, ms_fold *fold, ms_fold_value_parser parser,
                       void *context) {
  while (state->at < state->length) {
    char c = state->text[state->at];
    int status = MS_OK;
    if (is_space(c)) {
      state->at++;
    } else if (c == '(') {
      if (state->depth == MS_FOLD_MAX_DEPTH)
        return parse_error(state, state->at, "groups nested too deeply");
      state->levels[++state->depth] = (parse_level){state->term_count, state->at, 0};
      state->at++;
    } else if (c == ')') {
      status = parse_close(state, fold);
    } else if (c == '^') {
      return parse_error(state, state->at, "'^' without a value or group before it");
    } else {
      status = parse_value(state, fold, parser, context);
    }
    if (status != MS_OK) return status;
  }
  if (state->depth > 0)
    return parse_error(state, state->levels[state->depth].column, "unbalanced '('");
  for (size_t i = 0; i < state->term_count; i++) {
    int status = fold_top_append(fold, &state->terms[i]);
    if (status != MS_OK) return status;
  }
  return fold_seal(fold);
}

int ms_fold_parse(const char *text, size_t length, ms_fold_value_parser parser, void *context,
                  ms_fold **out, size_t *error_column) {
  *out = NULL;
  if (error_column) *error_column = 0;
  ms_fold *fold = fold_alloc(MS_FOLD_DEFAULT_WINDOW, 0);
  parser_state state = {text, length, 0, NULL, 0, 0, NULL, 0, error_column};
  state.levels = calloc(MS_FOLD_MAX_DEPTH + 1, sizeof *state.levels);
  int status = fold && state.levels ? parse_terms(&state, fold, parser, context)
                                    : ms_error_set(MS_ERR_NOMEM, "fold: out of memory");
  free(state.terms);
  free(state.levels);
  if (status != MS_OK) {
    ms_fold_free(fold);
    return status;
  }
  *out = fold;
  return MS_OK;
}
