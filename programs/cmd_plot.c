/* memsnap plot surface INPUT -o FILE.png|.svg [--3d] [--widths W] [--depths D] [--shards R]
 * memsnap plot reuse   INPUT -o FILE.png|.svg [--widths W] [--depths D] [--shards R]
 * memsnap plot scores  INPUT... -o FILE.png|.svg [--word B] [--lookback N]
 *
 * Pictures through gnuplot: the cache surface as a heat map (or a 3-D surface), the reuse
 * CDFs (hit rate against depth, one curve per width), and the spatial-versus-temporal
 * locality chart with one point per input. Inputs as for `memsnap surface` / `scores`.
 */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "locality_cli.h"
#include "memsnap/scores.h"
#include "plot_gnuplot.h"

static void usage(FILE *to) {
  fprintf(to, "usage: memsnap plot surface INPUT -o FILE.png|FILE.svg [--3d] [GRID]\n"
              "       memsnap plot reuse INPUT -o FILE.png|FILE.svg [GRID]\n"
              "       memsnap plot scores INPUT... -o FILE.png|FILE.svg [--word B] "
              "[--lookback N]\n"
              "  INPUT              a trace, a .sig (surface and reuse only), or -- PROGRAM ARGS\n"
              "  -o, --output FILE  the picture: PNG or SVG by its extension (required)\n"
              "  --3d               surface: a 3-D surface instead of a heat map\n"
              "  --title T          title (default: from the input)\n"
              "  GRID: -w/--widths W, -d/--depths D, --shards RATE, --sample ON/OFF as for\n"
              "        memsnap surface\n"
              "  --word B, --lookback N, --window-log2 L: as for memsnap scores\n");
}

typedef struct plot_options {
  locality_input_options input;
  ms_scores_config scores;
  const char *output, *title;
  int three_d;
} plot_options;

static int parse_options(int argc, char **argv, plot_options *o) {
  static const struct option long_options[] = {
      {"output", required_argument, NULL, 'o'},   {"3d", no_argument, NULL, '3'},
      {"title", required_argument, NULL, 'T'},    {"widths", required_argument, NULL, 'w'},
      {"depths", required_argument, NULL, 'd'},   {"shards", required_argument, NULL, 'S'},
      {"sample", required_argument, NULL, 's'},   {"word", required_argument, NULL, 'W'},
      {"lookback", required_argument, NULL, 'l'}, {"window-log2", required_argument, NULL, 'L'},
      {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 2; /* argv[1] is the kind of plot */
  int c;
  while ((c = getopt_long(argc, argv, ":o:w:d:h", long_options, NULL)) != -1) {
    int input = locality_parse_input_option(argv[0], c, optarg, &o->input);
    if (input < 0) return 2;
    if (input > 0) continue;
    int scores = locality_parse_scores_option(argv[0], c, optarg, &o->scores);
    if (scores < 0) return 2;
    if (scores > 0) continue;
    switch (c) {
    case 'o': o->output = optarg; break;
    case '3': o->three_d = 1; break;
    case 'T': o->title = optarg; break;
    case 'h': usage(stdout); return 0;
    default: return cli_option_error(argv[0], c, argv);
    }
  }
  if (ms_surface_config_check(&o->input.config) < 0 || ms_scores_config_check(&o->scores) < 0) {
    cli_error(argv[0], "%s", ms_error_message());
    return 2;
  }
  if (!o->output) {
    cli_error(argv[0], "give the picture to write: -o FILE.png or -o FILE.svg");
    return 2;
  }
  if (!plot_format_of(o->output)) {
    cli_error(argv[0], "%s: the picture's name must end in .png or .svg", o->output);
    return 2;
  }
  return -1;
}

/* "app" for "dir/app.mtr"; the program's base name for a live input. */
static const char *label_of(const char *path, char *buf, size_t size) {
  snprintf(buf, size, "%s", path);
  char *base = strrchr(buf, '/');
  base = base ? base + 1 : buf;
  char *dot = strrchr(base, '.');
  if (dot && dot != base) *dot = '\0';
  return base;
}

static int log2_of(uint64_t v) {
  int k = 0;
  while ((1ull << k) < v)
    k++;
  return k;
}

static void depth_tics(FILE *s, const ms_surface *surface, const char *axis) {
  fprintf(s, "set %stics (", axis);
  for (int k = 0; k < surface->depth_count; k++) {
    uint64_t d = surface->depths[k];
    if (d >= 1024)
      fprintf(s, "%s\"%lluK\" %d", k ? ", " : "", (unsigned long long)(d / 1024), log2_of(d));
    else
      fprintf(s, "%s\"%llu\" %d", k ? ", " : "", (unsigned long long)d, log2_of(d));
  }
  fprintf(s, ")\n");
}

static void width_tics(FILE *s, const ms_surface *surface, const char *axis) {
  fprintf(s, "set %stics (", axis);
  for (int i = 0; i < surface->width_count; i++)
    fprintf(s, "%s\"%u\" %d", i ? ", " : "", surface->widths[i], log2_of(surface->widths[i]));
  fprintf(s, ")\n");
}

static void title_line(FILE *s, const char *what, const char *title, const ms_surface *surface) {
  fprintf(s, "set title ");
  char text[1024];
  snprintf(text, sizeof text, "%s: %s%s", title, what,
           surface->sample_rate < 1.0 ? " (SHARDS-sampled)" : "");
  plot_quote(s, text);
  fprintf(s, " font ',14'\n");
}

static void surface_script(FILE *s, const ms_surface *surface, const char *title, int three_d) {
  fprintf(s, "$surface << EOD\n");
  for (int i = 0; i < surface->width_count; i++) {
    for (int k = 0; k < surface->depth_count; k++)
      fprintf(s, "%d %d %.6f\n", log2_of(surface->depths[k]), log2_of(surface->widths[i]),
              surface->hit_rate[i][k]);
    fprintf(s, "\n");
  }
  fprintf(s, "EOD\n");
  title_line(s, "cache surface (hit rate of fully-associative LRU caches)", title, surface);
  fprintf(s, "set palette defined (0 '#0d0887', 0.25 '#7e03a8', 0.5 '#cc4778', 0.75 '#f89540', "
             "1 '#f0f921')\nset cbrange [0:1]\nset cblabel 'hit rate'\n");
  depth_tics(s, surface, "x");
  width_tics(s, surface, "y");
  if (three_d) {
    fprintf(s, "set xlabel 'depth (lines)' offset 0,-1\nset ylabel 'width (bytes)' offset 2,0\n"
               "set zlabel 'hit rate' rotate parallel\nset zrange [0:1]\nset ticslevel 0\n"
               "set view 58, 300\nset pm3d depthorder border lc 'gray40' lw 0.5\nunset key\n"
               "set grid\nsplot $surface using 1:2:3 with pm3d\n");
  } else {
    fprintf(s,
            "set xlabel 'depth: cache lines (log scale)'\n"
            "set ylabel 'width: line size in bytes (log scale)'\n"
            "set xrange [%g:%g]\nset yrange [%g:%g]\nunset key\nset tics out nomirror\n"
            "plot $surface using 1:2:3 with image, "
            "$surface using 1:2:($3 > 0.55 ? sprintf('%%.2f', $3) : '') with labels font ',7' "
            "tc rgb 'black', "
            "$surface using 1:2:($3 > 0.55 ? '' : sprintf('%%.2f', $3)) with labels font ',7' "
            "tc rgb 'white'\n",
            log2_of(surface->depths[0]) - 0.5,
            log2_of(surface->depths[surface->depth_count - 1]) + 0.5,
            log2_of(surface->widths[0]) - 0.5,
            log2_of(surface->widths[surface->width_count - 1]) + 0.5);
  }
}

static void reuse_script(FILE *s, const ms_surface *surface, const char *title) {
  fprintf(s, "$reuse << EOD\n");
  for (int i = 0; i < surface->width_count; i++) {
    for (int k = 0; k < surface->depth_count; k++)
      fprintf(s, "%d %.6f\n", log2_of(surface->depths[k]), surface->hit_rate[i][k]);
    fprintf(s, "\n\n");
  }
  fprintf(s, "EOD\n");
  title_line(s, "reuse-distance CDF per line width", title, surface);
  depth_tics(s, surface, "x");
  fprintf(s, "set xlabel 'reuse distance < D lines (= fully-associative LRU depth D, log scale)'\n"
             "set ylabel 'fraction of references (hit rate)'\nset yrange [0:1.02]\nset grid\n"
             "set key outside right title 'width'\nplot ");
  for (int i = 0; i < surface->width_count; i++)
    fprintf(s, "%s$reuse index %d using 1:2 with linespoints lw 2 pt 7 ps 0.6 title '%u B'",
            i ? ", " : "", i, surface->widths[i]);
  fprintf(s, "\n");
}

/* The whole run's scores of one input. */
static int scores_of(const char *command, const char *path, int program_argc, char **program_argv,
                     const plot_options *o, ms_locality_score *whole) {
  if (program_argc == 0 && locality_is_signature(path)) {
    cli_error(command,
              "%s: a memory signature holds no strides: plot scores takes traces or "
              "-- PROGRAM ARGS",
              path);
    return 2;
  }
  ms_analysis *analysis = NULL;
  ms_source *source = NULL;
  int status = 1;
  if (ms_scores_analysis_new(&o->scores, 0,
                             (ms_analysis_sampling){o->input.sample_on, o->input.sample_off},
                             &analysis) < 0) {
    cli_fail(command);
    goto done;
  }
  source = cli_open_source(command, path, program_argc, program_argv, NULL);
  if (!source) goto done;
  ms_sink *sink = ms_analysis_sink(analysis);
  if (ms_pipeline_run(source, &sink, 1, 0) < 0) {
    cli_fail(command);
    goto done;
  }
  *whole = ((const ms_scores *)ms_analysis_result(analysis))->whole;
  status = 0;
done:
  ms_source_destroy(source);
  ms_analysis_free(analysis);
  return status;
}

static int plot_scores(const char *command, const cli_inputs *inputs, const plot_options *o,
                       FILE *s) {
  int n = inputs->count + (inputs->program_argc > 0);
  fprintf(s, "$scores << EOD\n");
  for (int i = 0; i < n; i++) {
    int live = i == inputs->count;
    ms_locality_score whole;
    int status = scores_of(command, live ? NULL : inputs->paths[i], live ? inputs->program_argc : 0,
                           inputs->program_argv, o, &whole);
    if (status) return status;
    char buf[512];
    const char *label =
        label_of(live ? inputs->program_argv[0] : inputs->paths[i], buf, sizeof buf);
    fprintf(s, "%.6f %.6f \"", whole.spatial, whole.temporal);
    for (const char *p = label; *p; p++)
      if (*p != '"' && *p != '\\' && *p != '\n') fputc(*p, s);
    fprintf(s, "\"\n");
  }
  fprintf(s, "EOD\nset title ");
  plot_quote(s, o->title ? o->title : "Locality: spatial versus temporal score");
  fprintf(s,
          " font ',14'\nset xlabel 'spatial score (1/stride in %u-byte words, lookback %d "
          "accesses)'\nset ylabel 'temporal score (reuse distances up to 2^{%d} words, "
          "weighted (L-i)/L)'\n",
          o->scores.word, o->scores.lookback, o->scores.log2_window);
  fprintf(s, "set xrange [0:1.05]\nset yrange [0:1.05]\nset size square\nset grid\nunset key\n"
             "set label 'random' at 0.03,0.04 tc rgb 'gray50'\n"
             "set label 'streaming' at 0.97,0.04 right tc rgb 'gray50'\n"
             "set label 'reuse, no strides' at 0.03,1.0 tc rgb 'gray50'\n"
             "set label 'dense reuse (tiled)' at 0.97,1.0 right tc rgb 'gray50'\n"
             "plot $scores using 1:2 with points pt 7 ps 1.8 lc rgb '#cc4778', "
             "$scores using 1:2:3 with labels offset 0,1.2 font ',11'\n");
  return 0;
}

int cmd_plot(int argc, char **argv) {
  if (argc < 2 || (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *kind = argv[1];
  if (strcmp(kind, "surface") != 0 && strcmp(kind, "reuse") != 0 && strcmp(kind, "scores") != 0) {
    cli_error(argv[0], "unknown plot '%s' (surface, reuse or scores)", kind);
    return 2;
  }
  plot_options o = {0};
  ms_surface_config_default(&o.input.config);
  ms_scores_config_default(&o.scores);
  int status = parse_options(argc, argv, &o);
  if (status >= 0) return status;
  cli_inputs inputs;
  cli_split_inputs(argc, argv, optind, &inputs);
  int n = inputs.count + (inputs.program_argc > 0);
  if (n == 0 || (strcmp(kind, "scores") != 0 && n != 1)) {
    cli_error(argv[0],
              strcmp(kind, "scores") != 0 ? "plot %s: give one input"
                                          : "plot %s: give one input or more",
              kind);
    return 2;
  }
  char *script = NULL;
  size_t script_size = 0;
  FILE *s = open_memstream(&script, &script_size);
  if (!s) {
    cli_error(argv[0], "out of memory");
    return 1;
  }
  int program_status = 0;
  if (!strcmp(kind, "scores")) {
    status = plot_scores(argv[0], &inputs, &o, s);
  } else {
    static ms_surface surface;
    status =
        locality_surface_of(argv[0], inputs.count ? inputs.paths[0] : NULL, inputs.program_argc,
                            inputs.program_argv, &o.input, &surface, NULL, &program_status);
    char buf[512];
    const char *title = o.title ? o.title
                                : label_of(inputs.count ? inputs.paths[0] : inputs.program_argv[0],
                                           buf, sizeof buf);
    if (!status && !strcmp(kind, "surface")) surface_script(s, &surface, title, o.three_d);
    if (!status && !strcmp(kind, "reuse")) reuse_script(s, &surface, title);
  }
  fclose(s);
  if (!status) status = plot_run_gnuplot(argv[0], o.output, script);
  free(script);
  return status ? status : program_status;
}
