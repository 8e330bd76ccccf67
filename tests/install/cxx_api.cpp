// A C++ program that includes every public header (through the umbrella) and uses the
// library's ways in: the input API (ms_input_kind_of, ms_open), the analysis API (a
// profile and a simulation in one pass), and verification (the profile replays its trace
// exactly). Built and run by test_cxx_api.sh against libmemsnap.so.
#include <memsnap/memsnap.h>

#include <cstdio>
#include <cstdlib>
#include <string>

static int fail(const std::string &what) {
  std::fprintf(stderr, "cxx_api: %s: %s\n", what.c_str(), ms_error_message());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1], trace = dir + "/loop.lackey", profile = dir + "/loop.psnap";
  std::FILE *f = std::fopen(trace.c_str(), "w");
  if (!f) return 1;
  for (int i = 0; i < 4000; i++)
    std::fprintf(f, "I  00401000,4\n L %08x,8\n", 0x1000000 + 8 * (i % 1000));
  std::fclose(f);

  ms_input_kind kind;
  if (ms_input_kind_of(trace.c_str(), &kind) < 0) return fail("kind");
  if (kind != MS_INPUT_LACKEY) return fail(std::string("kind ") + ms_input_kind_name(kind));

  ms_analysis *analyses[2] = {nullptr, nullptr};
  if (ms_analysis_new("profile", &analyses[0]) < 0) return fail("profile analysis");
  ms_hierarchy_config config;
  if (ms_hierarchy_parse("32k/64/8", &config) < 0) return fail("hierarchy");
  if (ms_sim_analysis_new(&config, 1, 0, &analyses[1]) < 0) return fail("sim analysis");
  ms_source *source = nullptr;
  if (ms_open(trace.c_str(), 0, nullptr, nullptr, &source) < 0) return fail("open");
  ms_sink *sinks[2] = {ms_analysis_sink(analyses[0]), ms_analysis_sink(analyses[1])};
  if (ms_pipeline_run(source, sinks, 2, 0) < 0) return fail("run");
  ms_source_destroy(source);

  const ms_psnap_profile *p = static_cast<const ms_psnap_profile *>(ms_analysis_result(analyses[0]));
  if (!p || p->access_count != 4000) return fail("profile result");
  if (ms_psnap_profile_save(p, profile.c_str()) < 0) return fail("save");
  const ms_hierarchy_set *set = static_cast<const ms_hierarchy_set *>(ms_analysis_result(analyses[1]));
  ms_cache_stats stats;
  ms_hierarchy_level_stats(ms_hierarchy_set_get(set, 0), 0, &stats);
  // 1000 words of 8 bytes: 125 lines, all missed once, then in the cache
  if (stats.total.accesses != 4000 || stats.total.misses != 125) return fail("sim counts");

  if (ms_open(trace.c_str(), 0, nullptr, nullptr, &source) < 0) return fail("reopen");
  ms_verify_options options = {};
  options.no_cache = 1;
  ms_verify_result result;
  if (ms_psnap_verify(profile.c_str(), source, &options, &result) < 0) return fail("verify");
  ms_source_destroy(source);
  const bool exact = result.total == 4000 && result.exact == 4000 && !result.diverged;
  ms_verify_result_free(&result);
  for (ms_analysis *a : analyses)
    ms_analysis_free(a);
  if (!exact) return fail("the replay is not the trace");
  std::printf("cxx_api: input, analysis and verify APIs from C++: ok\n");
  return 0;
}
