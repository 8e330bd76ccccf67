/* analyze: any input memsnap reads, through analyses of its choosing, in one pass.
 *
 *   analyze INPUT 'NAME KEY=VALUE...' ['NAME KEY=VALUE...' ...]
 *   analyze app.mtr 'sim hierarchy=nehalem top=3' 'surface widths=64 depths=1:1024'
 *   analyze app.psnap 'scores top=5'                (a profile, replayed)
 *
 * INPUT is a trace of any format, a trace seed, a .psnap profile or "-"; the analyses are
 * those of memsnap/analysis.h. Each report is printed as the memsnap command of the same
 * name prints it, one after the other, separated by a blank line. This is the whole use of
 * the library a tool needs: ms_open, ms_analysis_new, ms_pipeline_run, ms_analysis_report.
 *
 * Build against an installed memsnap: cc -o analyze analyze.c $(pkg-config --cflags --libs memsnap)
 */
#include <stdio.h>

#include <memsnap/memsnap.h>

int main(int argc, char **argv) {
  enum { MAX = 16 };
  if (argc < 3 || argc - 2 > MAX) {
    fprintf(stderr, "usage: analyze INPUT 'NAME KEY=VALUE...' ... (at most %d analyses)\n", MAX);
    for (int i = 0; i < ms_analysis_catalog_count(); i++) {
      const ms_analysis_entry *entry = ms_analysis_catalog_get(i);
      fprintf(stderr, "  %-10s %s\n  %-10s %s\n", entry->name, entry->summary, "", entry->options);
    }
    return 2;
  }
  const char *input = argv[1];
  int count = argc - 2, status = 1;
  ms_analysis *analyses[MAX] = {NULL};
  ms_sink *sinks[MAX];
  ms_source *source = NULL;
  for (int i = 0; i < count; i++) {
    if (ms_analysis_new(argv[2 + i], &analyses[i]) < 0) {
      fprintf(stderr, "analyze: %s\n", ms_error_message());
      status = 2;
      goto done;
    }
    sinks[i] = ms_analysis_sink(analyses[i]);
  }
  if (ms_open(input, 0, NULL, NULL, &source) < 0 || ms_pipeline_run(source, sinks, count, 0) < 0) {
    fprintf(stderr, "analyze: %s\n", ms_error_message());
    goto done;
  }
  for (int i = 0; i < count; i++) {
    if (i) putchar('\n');
    if (ms_analysis_report(analyses[i], ms_source_info(source), input, stdout, MS_REPORT_TEXT) <
        0) {
      fprintf(stderr, "analyze: %s\n", ms_error_message());
      goto done;
    }
  }
  status = 0;
done:
  ms_source_destroy(source);
  for (int i = 0; i < count; i++)
    ms_analysis_free(analyses[i]);
  return status;
}
