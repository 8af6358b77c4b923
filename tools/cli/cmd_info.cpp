// attnc info: versions, GPUs, cache path. `--gpu-present` answers by exit code alone.
#include <cstdio>

#include "attnc_version.h"
#include "cache/cache_path.h"
#include "generator/emit/embedded_templates.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/device.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "tools/cli/cli_common.h"

namespace attnc::cli {
namespace {

struct InfoOptions {
  bool json = false, gpu_present = false;
};

void run_info(const InfoOptions& o) {
  const int gpus = Device::count();
  if (o.gpu_present) {
    if (gpus > 0) return;
    throw Failed("");
  }
  nlohmann::ordered_json j;
  j["attnc"] = ATTNC_VERSION;
  j["nvrtc"] = nvrtc_version();
  j["templates_hash"] = templates_hash();
  j["cache"] = default_cache_path();
  nlohmann::ordered_json devs = nlohmann::ordered_json::array();
  for (int i = 0; i < gpus; ++i) {
    Device d(i);
    devs.push_back({{"index", i}, {"name", d.name()}, {"arch", d.arch()}, {"sm_count", d.sm_count()},
                    {"memory_gb", double(d.total_memory()) / 1e9}, {"driver", d.driver_version()}});
  }
  j["gpus"] = devs;
  if (gpus == 0) j["gpu_status"] = Driver::get().available() ? "no GPU" : Driver::get().error();
  if (o.json) return print_json(j);
  std::printf("attnc      %s\nNVRTC      %s\ntemplates  %s\ncache      %s\n", ATTNC_VERSION,
              nvrtc_version().c_str(), templates_hash().c_str(), default_cache_path().c_str());
  if (gpus == 0) std::printf("GPU        none (%s)\n", j["gpu_status"].get<std::string>().c_str());
  for (const auto& d : devs)
    std::printf("GPU %d      %s, %s, %d SMs, %.0f GB, driver %d\n", d["index"].get<int>(),
                d["name"].get<std::string>().c_str(), d["arch"].get<std::string>().c_str(),
                d["sm_count"].get<int>(), d["memory_gb"].get<double>(), d["driver"].get<int>());
}

}  // namespace

void add_info(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  auto* cmd = app.add_subcommand("info", "Versions, GPUs and the cache path");
  cmd->add_flag("--json", o->json, "machine-readable");
  cmd->add_flag("--gpu-present", o->gpu_present, "print nothing; exit 0 iff a GPU is usable");
  cmd->final_callback([o] { run_info(*o); });
}

}  // namespace attnc::cli
