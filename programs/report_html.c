/* The page of `memsnap report` (see report_html.h): one <section> per input, each drawn
 * from that input's JSON object. Tables print the JSON's numbers with a fixed precision
 * (hit rates in percent with 3 decimals, as `memsnap sim` prints them); the charts are SVG
 * written here (the heat map and CDF chart of `memsnap plot`, without gnuplot, so that
 * the page needs nothing but itself). */
#include "report_html.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

void report_html_escape(FILE *out, const char *text) {
  for (const char *p = text ? text : ""; *p; p++) {
    switch (*p) {
    case '&': fputs("&amp;", out); break;
    case '<': fputs("&lt;", out); break;
    case '>': fputs("&gt;", out); break;
    case '"': fputs("&quot;", out); break;
    case '\'': fputs("&#39;", out); break;
    default: fputc(*p, out);
    }
  }
}

/* ---- reading the JSON ---- */

static json_object *field(json_object *object, const char *key) {
  json_object *value = NULL;
  return object && json_object_object_get_ex(object, key, &value) ? value : NULL;
}

static const char *text_of(json_object *object, const char *key) {
  json_object *value = field(object, key);
  return value && json_object_is_type(value, json_type_string) ? json_object_get_string(value)
                                                               : NULL;
}

static double number_of(json_object *object, const char *key) {
  json_object *value = field(object, key);
  return value ? json_object_get_double(value) : NAN;
}

static uint64_t count_of(json_object *object, const char *key) {
  json_object *value = field(object, key);
  return value ? json_object_get_uint64(value) : 0;
}

static size_t length_of(json_object *array) {
  return array && json_object_is_type(array, json_type_array) ? json_object_array_length(array) : 0;
}

static json_object *item(json_object *array, size_t index) {
  return json_object_array_get_idx(array, index);
}

/* ---- colours and sizes ---- */

/* The palette of `memsnap plot surface` (plasma-like), at t in [0, 1]. */
static void palette(double t, char colour[8]) {
  static const unsigned char stops[5][3] = {{0x0d, 0x08, 0x87},
                                            {0x7e, 0x03, 0xa8},
                                            {0xcc, 0x47, 0x78},
                                            {0xf8, 0x95, 0x40},
                                            {0xf0, 0xf9, 0x21}};
  if (!(t >= 0)) t = 0;
  if (t > 1) t = 1;
  int k = t >= 1 ? 3 : (int)(t * 4);
  double f = t * 4 - k;
  int rgb[3];
  for (int c = 0; c < 3; c++)
    rgb[c] = (int)lround(stops[k][c] + f * (stops[k + 1][c] - stops[k][c]));
  snprintf(colour, 8, "#%02x%02x%02x", rgb[0] & 255, rgb[1] & 255, rgb[2] & 255);
}

/* "32K", "768K", "6M", "100": sizes as caches are named. */
static const char *size_text(uint64_t bytes, char buf[32]) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
    snprintf(buf, 32, "%" PRIu64 "M", bytes >> 20);
  else if (bytes >= 1024 && bytes % 1024 == 0)
    snprintf(buf, 32, "%" PRIu64 "K", bytes >> 10);
  else
    snprintf(buf, 32, "%" PRIu64, bytes);
  return buf;
}

/* ---- the page ---- */

static const char style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d1d1f;"
    "background:#f6f6f8;margin:0}\n"
    "header{background:#24243e;color:#fff;padding:14px 28px}header h1{margin:0;font-size:22px}"
    "header p{margin:4px 0 0;color:#c8c8dc}header a{color:#ffd27a}\n"
    "main{max-width:1200px;margin:0 auto;padding:8px 28px 40px}\n"
    "section.input{background:#fff;border:1px solid #dcdce4;border-radius:8px;margin:20px 0;"
    "padding:4px 22px 18px}\n"
    "h2{font-size:19px;border-bottom:2px solid #cc4778;padding-bottom:4px}h3{font-size:16px;"
    "margin:22px 0 6px}\n"
    "dl.observed{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}"
    "dl.observed dt{color:#555}dl.observed dd{margin:0;word-break:break-all}\n"
    ".ok{color:#1a7f37;font-weight:600}.warn{color:#b35900;font-weight:600}\n"
    "table{border-collapse:collapse;font-size:13px;margin:4px 0}th,td{padding:2px 8px;"
    "border-bottom:1px solid #e6e6ee;text-align:left;vertical-align:top}"
    "th{background:#efeff5;position:sticky;top:0}td.n,th.n{text-align:right;"
    "font-variant-numeric:tabular-nums}\n"
    "table.sortable th{cursor:pointer}code{font-size:12px;word-break:break-all}\n"
    ".scroll{max-height:430px;overflow:auto;display:inline-block;border:1px solid #e6e6ee}\n"
    ".row{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}\n"
    "svg{max-width:100%;height:auto;font-family:system-ui,sans-serif}\n"
    "p.note{color:#555;font-size:13px;margin:4px 0;max-width:900px}\n";

/* Sorts a table by the column whose header is clicked; marks the page as scripted. */
static const char script[] =
    "document.querySelectorAll('table.sortable th').forEach(function(th){"
    "th.addEventListener('click',function(){var b=th.closest('table').tBodies[0],"
    "k=th.cellIndex,d=th.dataset.dir==='1'?-1:1;th.dataset.dir=d===1?'1':'0';"
    "Array.from(b.rows).sort(function(x,y){var a=x.cells[k].textContent,c=y.cells[k]."
    "textContent,p=parseFloat(a),q=parseFloat(c);return d*(isNaN(p)||isNaN(q)?"
    "a.localeCompare(c):p-q)}).forEach(function(r){b.appendChild(r)})})});"
    "document.documentElement.setAttribute('data-ready','1');\n";

static const char *input_title(json_object *input) {
  const char *name = text_of(input, "input");
  if (!name) name = text_of(input, "program");
  return name ? name : "(unknown)";
}

static void observed_section(FILE *out, json_object *input) {
  fprintf(out, "<dl class=\"observed\">\n<dt>program</dt><dd>");
  report_html_escape(out, text_of(input, "program") ? text_of(input, "program") : "(unknown)");
  fprintf(out, "</dd>\n<dt>input</dt><dd>");
  report_html_escape(out, text_of(input, "input") ? text_of(input, "input") : "live program");
  fprintf(out, " (");
  report_html_escape(out, text_of(input, "kind"));
  fprintf(out, ")</dd>\n<dt>exit</dt><dd>");
  if (text_of(input, "signal")) {
    fprintf(out, "<span class=\"warn\">killed by ");
    report_html_escape(out, text_of(input, "signal"));
    fprintf(out, "</span>");
  } else if (field(input, "exit_status")) {
    fprintf(out, "exit status %" PRIu64, count_of(input, "exit_status"));
  } else {
    fprintf(out, "exit status unknown");
  }
  json_object *truncated = field(input, "truncated");
  fprintf(out, "</dd>\n<dt>stream</dt><dd>%s</dd>\n",
          !truncated                           ? "whether it is complete is not known"
          : json_object_get_boolean(truncated) ? "<span class=\"warn\">truncated: the accesses "
                                                 "are those before the program stopped</span>"
                                               : "<span class=\"ok\">complete</span>");
  json_object *surface = field(input, "surface"), *signature = field(input, "signature");
  uint64_t accesses = surface && !field(surface, "from_signature")
                          ? count_of(surface, "accesses")
                          : count_of(signature, "accesses_seen");
  fprintf(out, "<dt>accesses</dt><dd>%" PRIu64 "</dd>\n</dl>\n", accesses);
}

/* A hit-rate cell: the rate in percent, shaded from red (0) to green (100). */
static void rate_cell(FILE *out, double rate) {
  if (isnan(rate)) {
    fprintf(out, "<td class=\"n\">-</td>");
    return;
  }
  int hue = (int)lround(120 * (rate < 0 ? 0 : rate > 1 ? 1 : rate));
  fprintf(out, "<td class=\"n\" style=\"background:hsl(%d,70%%,88%%)\">%.3f</td>", hue, 100 * rate);
}

static void hierarchies_section(FILE *out, json_object *hierarchies, int index) {
  size_t levels = 0;
  for (size_t h = 0; h < length_of(hierarchies); h++) {
    size_t n = length_of(field(item(hierarchies, h), "levels"));
    if (n > levels) levels = n;
  }
  fprintf(out,
          "<h3>Hit rates of the %zu evaluation hierarchies</h3>\n"
          "<p class=\"note\">Set-associative LRU, write-back (memsnap sim -H evaluation); "
          "hit rates in percent; click a column to sort.</p>\n"
          "<div class=\"scroll\"><table class=\"hierarchies sortable\" "
          "id=\"hierarchies-%d\">\n<thead><tr><th>hierarchy</th><th class=\"n\">accesses</th>",
          length_of(hierarchies), index);
  for (size_t l = 1; l <= levels; l++)
    fprintf(out, "<th>L%zu size/line/ways</th><th class=\"n\">L%zu hit %%</th>", l, l);
  fprintf(out, "</tr></thead>\n<tbody>\n");
  for (size_t h = 0; h < length_of(hierarchies); h++) {
    json_object *hierarchy = item(hierarchies, h), *level_array = field(hierarchy, "levels");
    fprintf(out, "<tr><td>");
    report_html_escape(out, text_of(hierarchy, "name"));
    fprintf(out, "</td><td class=\"n\">%" PRIu64 "</td>",
            count_of(item(level_array, 0), "accesses"));
    for (size_t l = 0; l < levels; l++) {
      json_object *level = item(level_array, l);
      char size[32];
      if (!level) {
        fprintf(out, "<td></td><td class=\"n\">-</td>");
        continue;
      }
      fprintf(out, "<td>%s/%" PRIu64 "/%" PRIu64 "</td>", size_text(count_of(level, "size"), size),
              count_of(level, "line_size"), count_of(level, "associativity"));
      rate_cell(out, number_of(level, "hit_rate"));
    }
    fprintf(out, "</tr>\n");
  }
  fprintf(out, "</tbody></table></div>\n");
}

/* ---- the cache surface as a heat map ---- */

enum { HEAT_LEFT = 64, HEAT_TOP = 16, HEAT_CELL_W = 46, HEAT_CELL_H = 28 };

static void depth_label(uint64_t depth, char buf[32]) {
  if (depth >= 1024 && depth % 1024 == 0)
    snprintf(buf, 32, "%" PRIu64 "K", depth / 1024);
  else
    snprintf(buf, 32, "%" PRIu64, depth);
}

static void surface_section(FILE *out, json_object *surface, int index) {
  json_object *depths = field(surface, "depths"), *widths = field(surface, "widths");
  size_t columns = length_of(depths), rows = length_of(widths);
  if (!columns || !rows) return;
  int width = HEAT_LEFT + (int)columns * HEAT_CELL_W + 90;
  int height = HEAT_TOP + (int)rows * HEAT_CELL_H + 50;
  double rate = number_of(surface, "sample_rate");
  fprintf(out,
          "<h3 id=\"surface-%d\">Cache surface</h3>\n<p class=\"note\">Hit rate of a "
          "fully-associative LRU cache "
          "of each line width (rows) and depth in lines (columns)%s%s.</p>\n",
          index,
          !text_of(surface, "from_signature") ? " (memsnap surface)"
          : !strcmp(text_of(surface, "from_signature"), "measured")
              ? ", from the signature's reuse CDFs of each width"
              : ", derived from the signature as the dissertation derives it (its alpha values)",
          rate < 1 ? "; estimated by SHARDS sampling" : "");
  fprintf(out,
          "<svg class=\"surface\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
          "xmlns=\"http://www.w3.org/2000/svg\">\n<title>cache surface</title>\n",
          width, height, width, height);
  for (size_t i = 0; i < rows; i++) {
    json_object *row = item(widths, rows - 1 - i), *rates = field(row, "hit_rates");
    int y = HEAT_TOP + (int)i * HEAT_CELL_H;
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"12\">%" PRIu64 " B</text>\n",
            HEAT_LEFT - 6, y + HEAT_CELL_H / 2 + 4, count_of(row, "width"));
    for (size_t k = 0; k < columns; k++) {
      double value = json_object_get_double(item(rates, k));
      char colour[8];
      palette(value, colour);
      int x = HEAT_LEFT + (int)k * HEAT_CELL_W;
      fprintf(out,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>width %" PRIu64
              " B, depth %" PRIu64 ": %.4f</title></rect><text x=\"%d\" y=\"%d\" "
              "text-anchor=\"middle\" font-size=\"10\" fill=\"%s\">%.2f</text>\n",
              x, y, HEAT_CELL_W, HEAT_CELL_H, colour, count_of(row, "width"),
              json_object_get_uint64(item(depths, k)), value, x + HEAT_CELL_W / 2,
              y + HEAT_CELL_H / 2 + 4, value > 0.55 ? "#000" : "#fff", value);
    }
  }
  int axis_y = HEAT_TOP + (int)rows * HEAT_CELL_H;
  for (size_t k = 0; k < columns; k++) {
    char label[32];
    depth_label(json_object_get_uint64(item(depths, k)), label);
    fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n",
            HEAT_LEFT + (int)k * HEAT_CELL_W + HEAT_CELL_W / 2, axis_y + 15, label);
  }
  fprintf(out,
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">depth (lines)</text>\n",
          HEAT_LEFT + (int)columns * HEAT_CELL_W / 2, axis_y + 36);
  int bar_x = HEAT_LEFT + (int)columns * HEAT_CELL_W + 24, bar_h = (int)rows * HEAT_CELL_H;
  for (int s = 0; s < 20; s++) {
    char colour[8];
    palette(1.0 - (s + 0.5) / 20, colour);
    fprintf(out, "<rect x=\"%d\" y=\"%.1f\" width=\"16\" height=\"%.1f\" fill=\"%s\"/>\n", bar_x,
            HEAT_TOP + s * bar_h / 20.0, bar_h / 20.0 + 0.5, colour);
  }
  fprintf(out,
          "<text x=\"%d\" y=\"%d\" font-size=\"11\">1.0</text><text x=\"%d\" y=\"%d\" "
          "font-size=\"11\">0.0</text></svg>\n",
          bar_x + 20, HEAT_TOP + 10, bar_x + 20, HEAT_TOP + bar_h);
}

/* ---- reuse CDFs and alpha values of the signature ---- */

enum { CDF_LEFT = 56, CDF_TOP = 14, CDF_W = 640, CDF_H = 300, CDF_DEPTHS = 17 };

static const char *const curve_colours[] = {"#0d0887", "#5302a3", "#8b0aa5", "#b83289",
                                            "#db5c68", "#f48849", "#febd2a", "#1a7f37",
                                            "#2166ac", "#666666", "#a6611a", "#4d9221"};

static void cdf_axes(FILE *out) {
  for (int t = 0; t <= 10; t += 2) {
    double y = CDF_TOP + CDF_H - t / 10.0 * CDF_H;
    fprintf(out,
            "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" "
            "y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%.1f</text>\n",
            CDF_LEFT, CDF_LEFT + CDF_W, y, y, CDF_LEFT - 6, y + 4, t / 10.0);
  }
  for (int k = 0; k < CDF_DEPTHS; k += 2) {
    double x = CDF_LEFT + k * (double)CDF_W / (CDF_DEPTHS - 1);
    char label[32];
    depth_label(1ull << k, label);
    fprintf(out,
            "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#eee\"/><text x=\"%.1f\" "
            "y=\"%d\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n",
            x, x, CDF_TOP, CDF_TOP + CDF_H, x, CDF_TOP + CDF_H + 15, label);
  }
  fprintf(out,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n"
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"12\">LRU stack depth "
          "(lines): reuse distance &lt; depth</text>\n<text transform=\"translate(14,%d) "
          "rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">fraction of references "
          "(hit rate)</text>\n",
          CDF_LEFT, CDF_TOP, CDF_W, CDF_H, CDF_LEFT + CDF_W / 2, CDF_TOP + CDF_H + 34,
          CDF_TOP + CDF_H / 2);
}

/* One curve of rates at depths 2^0..2^16 (JSON nulls skipped) and its legend entry. */
static void cdf_curve(FILE *out, const double *rates, int curve, const char *label, int bold) {
  const char *colour = curve_colours[curve % (int)(sizeof curve_colours / sizeof *curve_colours)];
  fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%d\" points=\"", colour,
          bold ? 3 : 1);
  for (int k = 0; k < CDF_DEPTHS; k++)
    if (!isnan(rates[k]))
      fprintf(out, "%.1f,%.1f ", CDF_LEFT + k * (double)CDF_W / (CDF_DEPTHS - 1),
              CDF_TOP + CDF_H - rates[k] * CDF_H);
  int y = CDF_TOP + 10 + curve * 18;
  fprintf(out,
          "\"/>\n<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%d\"/>"
          "<text x=\"%d\" y=\"%d\" font-size=\"12\">%s</text>\n",
          CDF_LEFT + CDF_W + 12, CDF_LEFT + CDF_W + 36, y, y, colour, bold ? 3 : 1,
          CDF_LEFT + CDF_W + 42, y + 4, label);
}

static void rates_of(json_object *array, const char *key, double rates[CDF_DEPTHS]) {
  for (int k = 0; k < CDF_DEPTHS; k++) {
    json_object *value = item(array, (size_t)k);
    if (key) value = field(value, key);
    rates[k] =
        value && !json_object_is_type(value, json_type_null) ? json_object_get_double(value) : NAN;
  }
}

static void cdf_chart(FILE *out, json_object *signature, json_object *whole) {
  int width = CDF_LEFT + CDF_W + 120, height = CDF_TOP + CDF_H + 44;
  fprintf(out,
          "<svg class=\"cdf\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
          "xmlns=\"http://www.w3.org/2000/svg\">\n<title>reuse-distance CDFs</title>\n",
          width, height, width, height);
  cdf_axes(out);
  double rates[CDF_DEPTHS];
  char label[48];
  int curve = 0;
  json_object *rows = field(field(signature, "widths"), "rows");
  for (size_t r = 0; r < length_of(rows); r++) {
    rates_of(field(item(rows, r), "hit_rates"), NULL, rates);
    snprintf(label, sizeof label, "%" PRIu64 " B", count_of(item(rows, r), "width"));
    cdf_curve(out, rates, curve++, label, 0);
  }
  rates_of(field(whole, "reuse_cdf"), "hit_rate", rates);
  snprintf(label, sizeof label, "%" PRIu64 " B", count_of(signature, "line_length"));
  cdf_curve(out, rates, curve, label, 1);
  fprintf(out, "</svg>\n");
}

static void cdf_table(FILE *out, json_object *signature, json_object *whole, int index) {
  uint64_t line = count_of(signature, "line_length");
  json_object *cdf = field(whole, "reuse_cdf");
  fprintf(out,
          "<table class=\"cdf\" id=\"cdf-%d\"><thead><tr><th class=\"n\">depth</th>"
          "<th class=\"n\">cache</th><th class=\"n\">hit rate</th></tr></thead><tbody>\n",
          index);
  for (size_t k = 0; k < length_of(cdf); k++) {
    json_object *point = item(cdf, k), *rate = field(point, "hit_rate");
    char size[32];
    fprintf(out, "<tr><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%sB</td>",
            count_of(point, "depth"), size_text(count_of(point, "depth") * line, size));
    if (rate && !json_object_is_type(rate, json_type_null))
      fprintf(out, "<td class=\"n\">%.4f</td></tr>\n", json_object_get_double(rate));
    else
      fprintf(out, "<td class=\"n\">NA</td></tr>\n");
  }
  fprintf(out, "</tbody></table>\n");
}

static void alpha_table(FILE *out, json_object *whole, int index) {
  json_object *alphas = field(whole, "alpha");
  fprintf(out,
          "<table class=\"alpha\" id=\"alpha-%d\"><thead><tr><th>alpha(S, 2S)</th>"
          "<th class=\"n\">average</th><th class=\"n\">trials</th></tr></thead><tbody>\n",
          index);
  for (size_t i = length_of(alphas); i-- > 0;) {
    json_object *alpha = item(alphas, i), *avg = field(alpha, "avg"), *value = field(avg, "alpha");
    fprintf(out, "<tr><td>alpha(%" PRIu64 ", %" PRIu64 ")</td>", count_of(alpha, "subset"),
            count_of(alpha, "superset"));
    if (value && !json_object_is_type(value, json_type_null))
      fprintf(out, "<td class=\"n\">%.4f</td>", json_object_get_double(value));
    else
      fprintf(out, "<td class=\"n\">NA</td>");
    fprintf(out, "<td class=\"n\">%.17g</td></tr>\n", number_of(avg, "trials"));
  }
  fprintf(out, "</tbody></table>\n");
}

static void signature_section(FILE *out, json_object *signature, int index) {
  json_object *whole = item(field(signature, "bins"), 0);
  if (!whole) return;
  fprintf(out,
          "<h3>Reuse-distance CDF and spatial locality (memory signature)</h3>\n<p "
          "class=\"note\">Fraction of references to %" PRIu64 "-byte lines whose LRU stack "
          "distance is within each depth (memsnap signature)%s. alpha(S, 2S): how often "
          "consecutive uses of a 2S-byte block reuse the same S-byte half.</p>\n"
          "<div class=\"row\">\n",
          count_of(signature, "line_length"),
          field(signature, "widths") ? "; narrower line widths as thin curves" : "");
  cdf_chart(out, signature, whole);
  cdf_table(out, signature, whole, index);
  alpha_table(out, whole, index);
  fprintf(out, "</div>\n");
}

/* ---- sites ---- */

static void sites_section(FILE *out, json_object *hierarchy, int index) {
  json_object *levels = field(hierarchy, "levels");
  fprintf(out, "<h3>Sites with most misses on ");
  report_html_escape(out, text_of(hierarchy, "name"));
  fprintf(out, " (");
  report_html_escape(out, text_of(hierarchy, "spec"));
  fprintf(out,
          ")</h3>\n<div class=\"scroll\"><table class=\"sites sortable\" "
          "id=\"sites-%d\"><thead><tr><th>level</th>"
          "<th class=\"n\">misses</th><th class=\"n\">%% of level</th><th>pc</th>"
          "<th>function</th><th>file:line</th></tr></thead><tbody>\n",
          index);
  for (size_t l = 0; l < length_of(levels); l++) {
    json_object *level = item(levels, l), *top = field(level, "top_sites");
    uint64_t level_misses = count_of(level, "misses");
    for (size_t i = 0; i < length_of(top); i++) {
      json_object *site = item(top, i);
      uint64_t misses = count_of(site, "misses");
      fprintf(out,
              "<tr><td>L%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td>"
              "<td class=\"n\">%.2f</td><td><code>",
              count_of(level, "level"), misses,
              level_misses ? 100.0 * (double)misses / (double)level_misses : 0.0);
      report_html_escape(out, text_of(site, "pc") ? text_of(site, "pc") : "?");
      fprintf(out, "</code></td><td>");
      report_html_escape(out, text_of(site, "function") ? text_of(site, "function") : "?");
      fprintf(out, "</td><td>");
      if (text_of(site, "file")) {
        report_html_escape(out, text_of(site, "file"));
        fprintf(out, ":%" PRIu64, count_of(site, "line"));
      } else {
        fprintf(out, "?");
      }
      fprintf(out, "</td></tr>\n");
    }
    if (!length_of(top))
      fprintf(out,
              "<tr><td>L%" PRIu64 "</td><td class=\"n\">0</td><td></td><td></td>"
              "<td>no misses at a site</td><td></td></tr>\n",
              count_of(level, "level"));
  }
  fprintf(out, "</tbody></table></div>\n");
}

/* The source lines (or data objects) with most misses on the sites' hierarchy (memsnap
 * annotate): first-level accesses and misses per level. */
static void annotation_section(FILE *out, json_object *annotation, int objects, int index) {
  json_object *rows = field(annotation, objects ? "objects" : "lines");
  json_object *hierarchy = field(annotation, "hierarchy");
  json_object *misses = field(field(annotation, "total"), "misses");
  size_t levels = length_of(misses);
  fprintf(out, "<h3>%s with most L%" PRIu64 " misses on ",
          objects ? "Data objects (by allocating call)" : "Source lines",
          count_of(annotation, "sort_level"));
  report_html_escape(out, text_of(hierarchy, "name"));
  fprintf(out,
          "</h3>\n<p class=\"note\">The %zu of %" PRIu64 " %s with most misses (memsnap "
          "annotate%s).</p>\n<div class=\"scroll\"><table class=\"%s sortable\" id=\"%s-%d\">"
          "<thead><tr><th class=\"n\">accesses</th>",
          length_of(rows), count_of(annotation, objects ? "object_count" : "line_count"),
          objects ? "allocating calls and variables" : "source lines",
          objects ? " --by allocation" : "", objects ? "objects" : "lines",
          objects ? "objects" : "lines", index);
  for (size_t l = 0; l < levels; l++)
    fprintf(out, "<th class=\"n\">L%zu misses</th>", l + 1);
  fprintf(out, "<th>%s</th><th>function</th></tr></thead><tbody>\n",
          objects ? "object" : "file:line");
  for (size_t i = 0; i < length_of(rows); i++) {
    json_object *row = item(rows, i), *at = objects ? field(row, "allocated_at") : row;
    fprintf(out, "<tr><td class=\"n\">%" PRIu64 "</td>", count_of(row, "accesses"));
    for (size_t l = 0; l < levels; l++)
      fprintf(out, "<td class=\"n\">%" PRIu64 "</td>",
              (uint64_t)json_object_get_int64(item(field(row, "misses"), l)));
    fprintf(out, "<td>");
    if (objects && text_of(row, "name")) {
      fprintf(out, "static ");
      report_html_escape(out, text_of(row, "name"));
    } else if (objects) {
      report_html_escape(out, text_of(row, "kind") ? text_of(row, "kind") : "?");
      fprintf(out, ", %" PRIu64 " bytes, at ", count_of(row, "bytes"));
    }
    if (at && text_of(at, "file")) {
      report_html_escape(out, text_of(at, "file"));
      fprintf(out, ":%" PRIu64, count_of(at, "line"));
    } else if (at && text_of(at, "pc")) {
      fprintf(out, "<code>");
      report_html_escape(out, text_of(at, "pc"));
      fprintf(out, "</code>");
    }
    fprintf(out, "</td><td>");
    report_html_escape(out, at && text_of(at, "function") ? text_of(at, "function") : "");
    fprintf(out, "</td></tr>\n");
  }
  fprintf(out, "</tbody></table></div>\n");
}

static void profile_section(FILE *out, json_object *profile, int index) {
  json_object *sites = field(profile, "sites");
  fprintf(out,
          "<h3>Profile sites by weight</h3>\n<p class=\"note\">%" PRIu64 " accesses, %" PRIu64
          " sites (%" PRIu64 " lossy), %" PRIu64 " threads; the %zu heaviest, as memsnap show "
          "lists them.</p>\n<div class=\"scroll\"><table class=\"profile sortable\" "
          "id=\"profile-%d\"><thead><tr><th>site</th><th class=\"n\">share %%</th>"
          "<th class=\"n\">count</th><th>kind</th><th class=\"n\">size</th><th>class</th>"
          "<th>stored</th><th>where</th><th>pattern</th></tr></thead><tbody>\n",
          count_of(profile, "accesses"), count_of(profile, "site_count"),
          count_of(profile, "lossy_sites"), count_of(profile, "threads"), length_of(sites), index);
  for (size_t i = 0; i < length_of(sites); i++) {
    json_object *site = item(sites, i);
    fprintf(out,
            "<tr><td>s%" PRIu64 "</td><td class=\"n\">%.2f</td><td class=\"n\">%" PRIu64
            "</td><td>",
            count_of(site, "site"), 100 * number_of(site, "share"), count_of(site, "count"));
    report_html_escape(out, text_of(site, "kind"));
    fprintf(out, "</td><td class=\"n\">%" PRIu64 "</td><td>", count_of(site, "size"));
    report_html_escape(out, text_of(site, "class"));
    fprintf(out, "</td><td>");
    report_html_escape(out, text_of(site, "stored"));
    fprintf(out, "</td><td>");
    report_html_escape(out, text_of(site, "where"));
    fprintf(out, "</td><td><code>");
    report_html_escape(out, text_of(site, "pattern") ? text_of(site, "pattern") : "(lossy)");
    fprintf(out, "</code></td></tr>\n");
  }
  fprintf(out, "</tbody></table></div>\n");
}

static void input_section(FILE *out, json_object *input, int index) {
  fprintf(out, "<section class=\"input\" id=\"input-%d\">\n<h2>", index);
  report_html_escape(out, input_title(input));
  fprintf(out, "</h2>\n");
  observed_section(out, input);
  if (field(input, "surface")) surface_section(out, field(input, "surface"), index);
  if (field(input, "signature")) signature_section(out, field(input, "signature"), index);
  fprintf(out, "<div class=\"row\">\n");
  if (field(input, "hierarchies")) {
    fprintf(out, "<div>\n");
    hierarchies_section(out, field(input, "hierarchies"), index);
    fprintf(out, "</div>\n");
  }
  if (field(input, "sites")) {
    fprintf(out, "<div>\n");
    sites_section(out, field(input, "sites"), index);
    fprintf(out, "</div>\n");
  }
  fprintf(out, "</div>\n");
  if (field(input, "lines")) annotation_section(out, field(input, "lines"), 0, index);
  if (field(input, "objects")) annotation_section(out, field(input, "objects"), 1, index);
  if (field(input, "profile")) profile_section(out, field(input, "profile"), index);
  fprintf(out, "</section>\n");
}

int report_html_write(FILE *out, json_object *root) {
  json_object *inputs = field(root, "inputs");
  fprintf(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<title>memsnap report: ");
  for (size_t i = 0; i < length_of(inputs); i++) {
    if (i) fputs(", ", out);
    report_html_escape(out, input_title(item(inputs, i)));
  }
  fprintf(out,
          "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header><h1>memsnap report</h1>"
          "<p>memsnap ",
          style);
  report_html_escape(out, text_of(root, "memsnap_version"));
  fprintf(out, " &middot; %zu input%s:", length_of(inputs), length_of(inputs) == 1 ? "" : "s");
  for (size_t i = 0; i < length_of(inputs); i++) {
    fprintf(out, " <a href=\"#input-%zu\">", i + 1);
    report_html_escape(out, input_title(item(inputs, i)));
    fprintf(out, "</a>");
  }
  fprintf(out, "</p></header>\n<main>\n");
  for (size_t i = 0; i < length_of(inputs); i++)
    input_section(out, item(inputs, i), (int)i + 1);
  fprintf(out, "</main>\n<script>\n%s</script>\n</body>\n</html>\n", script);
  return ferror(out) ? -1 : 0;
}
