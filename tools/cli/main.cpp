// attnc: the command line. Each subcommand lives in its own cmd_*.cpp.
#include <cstdio>
#include <cstdlib>

#include "attnc_version.h"
#include "generator/spec/spec_parse.h"
#include "tools/cli/cli_common.h"

int main(int argc, char** argv) {
  // attnc's SQLite store is the kernel cache. NVRTC's own compile cache (CUDA 12.9+) would only
  // hide ptxas's resource report on its hits, so the command line turns it off unless asked.
  setenv("CUDA_CACHE_DISABLE", "1", /*overwrite=*/0);
  CLI::App app{"attnc: attention-kernel compiler and autotuner (spec -> CUDA -> NVRTC -> cache)"};
  app.set_version_flag("--version", "attnc " ATTNC_VERSION);
  app.require_subcommand(1);
  attnc::cli::add_validate(app);
  attnc::cli::add_gen(app);
  attnc::cli::add_compile(app);
  attnc::cli::add_cache(app);
  attnc::cli::add_info(app);
  attnc::cli::add_run(app);
  attnc::cli::add_tune(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const attnc::cli::ExitCode& e) {
    return e.code;
  } catch (const attnc::cli::Failed& e) {
    if (*e.what()) std::fprintf(stderr, "attnc: error: %s\n", e.what());
    return 1;
  } catch (const attnc::SpecError& e) {  // its lines already read "FILE:LINE:COL: error: ..."
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnc: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
