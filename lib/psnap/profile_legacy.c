/* Version 1 of the .psnap format, still read (docs/formats.md, "Version 1"): one
 * `key value` line per field of a site, blocks per site and thread. */
#include <stdlib.h>
#include <string.h>

#include "memsnap/error.h"
#include "memsnap/psnap.h"
#include "profile_internal.h"

int profile_legacy_site(reader *r, ms_psnap_profile *profile, uint32_t id) {
  ms_psnap_site *site = &profile->sites[id];
  char *function = NULL, *file = NULL;
  uint64_t line = 0, pc = 0, value;
  int rc = 0, have_count = 0, have_first = 0, stored = -1, have_pattern = 0, histograms = 0;
  site->cls = MS_STRIDE_UNDESIGNATED;
  ms_expr_init(&site->pattern);
  site->size = 0;
  while (rc == 0 && profile_next_line(r)) {
    if (r->p == r->line) break; /* an unindented line starts the next block */
    if (profile_key_is(r, "function")) {
      free(function);
      if (!(function = profile_copy_rest(r))) rc = ms_error_set(MS_ERR_NOMEM, "out of memory");
    } else if (profile_key_is(r, "line")) {
      const char *colon = NULL;
      for (const char *q = r->p; q < r->end; q++)
        if (*q == ':') colon = q;
      if (!colon)
        rc = read_error(r, "expected FILE:LINE");
      else {
        free(file);
        file = strndup(r->p, (size_t)(colon - r->p));
        r->p = colon + 1;
        rc = profile_read_number_line(r, 10, &line);
        if (rc == 0 && line > UINT32_MAX) rc = read_error(r, "line number too large");
      }
    } else if (profile_key_is(r, "pc"))
      rc = profile_read_number_line(r, 16, &pc);
    else if (profile_key_is(r, "thread")) {
      if ((rc = profile_read_number_line(r, 10, &value)) == 0 && value > UINT16_MAX)
        rc = read_error(r, "thread number too large");
      site->thread = (uint16_t)value;
    } else if (profile_key_is(r, "kind")) {
      char *kind = profile_copy_rest(r);
      int k = kind ? ms_access_kind_parse(kind) : -1;
      free(kind);
      if (k < 0) r->p = r->line, rc = read_error(r, "kind is load, store or modify");
      site->kind = (uint8_t)k;
    } else if (profile_key_is(r, "size")) {
      if ((rc = profile_read_number_line(r, 10, &value)) == 0 && (value == 0 || value > 255))
        rc = read_error(r, "size is 1 to 255 bytes");
      site->size = (uint8_t)value;
    } else if (profile_key_is(r, "count")) {
      rc = profile_read_number_line(r, 10, &site->count);
      have_count = 1;
    } else if (profile_key_is(r, "first")) {
      rc = profile_read_number_line(r, 16, &site->first_address);
      have_first = 1;
    } else if (profile_key_is(r, "class")) {
      char *name = profile_copy_rest(r);
      int cls = name ? ms_stride_class_parse(name) : -1;
      free(name);
      if (cls < 0) r->p = r->line, rc = read_error(r, "unknown class");
      site->cls = (ms_stride_class)cls;
    } else if (profile_key_is(r, "stored")) {
      if (profile_key_is(r, "exact"))
        stored = 0;
      else if (profile_key_is(r, "lossy"))
        stored = 1, site->lossy = 1;
      else if (profile_key_is(r, "lossless"))
        stored = 2;
      else
        rc = read_error(r, "stored is exact, lossy or lossless");
      if (rc == 0) rc = profile_read_end(r);
    } else if (profile_key_is(r, "pattern")) {
      ms_expr_free(&site->pattern);
      rc = ms_expr_parse(&site->pattern, r->p, (size_t)(r->end - r->p), MS_EXPR_STRIDES, r->name,
                         r->number, (unsigned)(r->p - r->line) + 1);
      have_pattern = rc == 0;
    } else if (profile_key_is(r, "range")) {
      if ((rc = profile_read_unsigned(r, 16, &site->low)) == 0)
        rc = profile_read_number_line(r, 16, &site->high);
    } else if (profile_key_is(r, "alignment")) {
      if ((rc = profile_read_number_line(r, 10, &site->alignment)) == 0 && site->alignment == 0)
        rc = read_error(r, "alignment is at least 1");
    } else if (profile_key_is(r, "histogram")) {
      if (histograms == MS_PSNAP_SEGMENTS)
        rc = read_error(r, "more than %d histogram lines", MS_PSNAP_SEGMENTS);
      if (rc == 0) rc = profile_ensure_histogram(site);
      for (int b = 0; rc == 0 && b < MS_PSNAP_HISTOGRAM_BINS; b++)
        rc = profile_read_unsigned(r, 10, &site->histogram[histograms][b]);
      histograms++;
      if (rc == 0) rc = profile_read_end(r);
    } else if (profile_key_is(r, "addresses")) {
      if (!have_count || !have_first)
        rc = read_error(r, "addresses before count and first");
      else
        rc = profile_read_addresses(r, site);
    } else
      rc = read_error(r, "unknown key in a site block");
  }
  if (rc == 0) {
    if (!have_count || !have_first || !site->size || stored < 0)
      rc = read_error(r, "site %u lacks one of thread, kind, size, count, first, stored", id);
    else if (stored == 0 && !have_pattern)
      rc = read_error(r, "exact site %u has no pattern", id);
    else if (stored == 1 &&
             (site->alignment == 0 || site->high < site->low || histograms != MS_PSNAP_SEGMENTS))
      rc = read_error(r, "lossy site %u needs range (low <= high), alignment and %d histograms", id,
                      MS_PSNAP_SEGMENTS);
    else if (stored == 2 && !site->addresses)
      rc = read_error(r, "lossless site %u has no addresses", id);
    else if (stored != 0 && !have_pattern)
      rc = ms_expr_finish(&site->pattern, NULL, 0);
  }
  if (rc == 0) {
    site->trace_site = id;
    rc = profile_add_location(profile, function, file, (uint32_t)line, pc);
  }
  free(function);
  free(file);
  return rc;
}

int profile_legacy_thread(reader *r, ms_psnap_profile *profile, uint32_t t) {
  ms_psnap_thread_order *order = &profile->threads[t];
  int rc = 0, have_order = 0;
  uint32_t capacity = 0;
  unsigned order_line = r->number;
  ms_expr_init(&order->order);
  while (rc == 0 && profile_next_line(r)) {
    if (r->p == r->line) break;
    if (profile_key_is(r, "accesses"))
      rc = profile_read_number_line(r, 10, &order->accesses);
    else if (profile_key_is(r, "order")) {
      order_line = r->number;
      ms_expr_free(&order->order);
      order->lossy = 0;
      if (profile_key_is(r, "lossy")) {
        order->lossy = 1;
        rc = profile_read_end(r);
      } else
        rc = ms_expr_parse(&order->order, r->p, (size_t)(r->end - r->p), MS_EXPR_SITES, r->name,
                           r->number, (unsigned)(r->p - r->line) + 1);
      have_order = rc == 0;
    } else if (profile_key_is(r, "start") && r->p < r->end && *r->p == 's') {
      uint64_t first;
      r->p++;
      if ((rc = profile_read_number_line(r, 10, &first)) == 0) order->first_site = (uint32_t)first;
    } else if (profile_key_is(r, "path"))
      rc = profile_read_transition(r, order, &capacity);
    else
      rc = read_error(r, "unknown key in a thread block");
  }
  if (rc < 0) return rc;
  if (!have_order) return read_error(r, "thread %u has no order", t);
  return profile_check_order(r, profile, t, order_line);
}
