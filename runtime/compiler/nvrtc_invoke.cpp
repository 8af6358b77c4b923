#include "runtime/compiler/nvrtc_invoke.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "generator/emit/embedded_templates.h"

namespace attnc::detail {
namespace {

using Clock = std::chrono::steady_clock;

// State shared by the waiting caller and the compile thread; the thread owns a reference, so a
// caller that gave up may return while the thread still writes here.
struct Job {
  explicit Job(NvrtcRequest r) : request(std::move(r)) {}
  NvrtcRequest request;
  std::atomic<bool> cancel{false};
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  bool abandoned = false;
  NvrtcOutcome outcome;
};

// NVRTC calls this at points of its choosing during nvrtcCompileProgram; returning 1 cancels.
int flow_callback(void* payload, void*) { return static_cast<Job*>(payload)->cancel.load() ? 1 : 0; }

NvrtcOutcome execute(Job& job) {
  NvrtcOutcome out;
  const auto start = Clock::now();
  const auto& req = job.request;
  const auto& h = nvrtc_headers();
  nvrtcProgram prog = nullptr;
  out.status = nvrtcCreateProgram(&prog, req.source.c_str(), req.program_name.c_str(),
                                  static_cast<int>(h.names.size()), h.text_ptrs.data(), h.name_ptrs.data());
  if (out.status != NVRTC_SUCCESS) return out;
  nvrtcSetFlowCallback(prog, flow_callback, &job);
  std::vector<const char*> opts;
  for (const auto& o : req.options) opts.push_back(o.c_str());
  out.status = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t n = 0;
  if (nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    out.log.resize(n);
    nvrtcGetProgramLog(prog, out.log.data());
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();  // NVRTC may end it with more than one NUL
  }
  if (out.status == NVRTC_SUCCESS) {
    n = 0;
    if (req.want_cubin) {
      out.status = nvrtcGetCUBINSize(prog, &n);
      out.output.resize(n);
      if (out.status == NVRTC_SUCCESS) out.status = nvrtcGetCUBIN(prog, out.output.data());
    } else {
      out.status = nvrtcGetPTXSize(prog, &n);
      out.output.resize(n);
      if (out.status == NVRTC_SUCCESS) out.status = nvrtcGetPTX(prog, out.output.data());
      if (!out.output.empty() && out.output.back() == '\0') out.output.pop_back();
    }
  }
  nvrtcDestroyProgram(&prog);
  out.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return out;
}

// Compile threads whose caller stopped waiting. Never destroyed: a late thread may still report here
// during static destruction.
class Abandoned {
 public:
  void add() {
    std::lock_guard lock(mutex_);
    ++running_;
  }
  void remove() {
    {
      std::lock_guard lock(mutex_);
      --running_;
    }
    idle_.notify_all();
  }
  void wait_for(std::chrono::seconds limit) {
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, limit, [this] { return running_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  int running_ = 0;
};

Abandoned& abandoned() {
  static auto* a = new Abandoned;
  return *a;
}

// At exit, give abandoned compiles (already told to cancel) a moment to leave NVRTC, so that
// NVRTC's globals are not destroyed under a running compile; a compile that never reaches a
// cancellation point does not hold the process hostage beyond the limit.
struct ExitWait {
  ~ExitWait() { abandoned().wait_for(std::chrono::seconds(20)); }
};

// NVRTC creates many of its globals during the first compile, and globals are destroyed in reverse
// order of creation. One small compile before ExitWait exists makes ExitWait's destructor run before
// theirs. (Without it, a process whose first compile timed out aborted at exit with
// "LLVM ERROR: out of memory".)
ExitWait& exit_wait() {
  static ExitWait wait = [] {
    Job job(NvrtcRequest{"attnc_warm_up.cu", "extern \"C\" __global__ void attnc_warm_up(int* p) { *p = 1; }\n",
                         {"--gpu-architecture=sm_80", "--ptxas-options=-v"}, true});
    execute(job);
    return ExitWait{};
  }();
  return wait;
}

}  // namespace

const NvrtcHeaders& nvrtc_headers() {
  static const NvrtcHeaders headers = [] {
    NvrtcHeaders h;
    for (const auto& f : embedded_templates()) {
      h.names.emplace_back(f.path);
      h.texts.emplace_back(f.text);
    }
    for (size_t i = 0; i < h.names.size(); ++i) {
      h.name_ptrs.push_back(h.names[i].c_str());
      h.text_ptrs.push_back(h.texts[i].c_str());
    }
    return h;
  }();
  return headers;
}

// nvrtcCompileProgram cannot be interrupted from outside. So the compile runs on its own thread and
// the caller waits only until the deadline; then it reports a timeout and leaves. The thread is
// detached and told to cancel through NVRTC's flow callback, which NVRTC polls only now and then
// (seconds apart inside ptxas), so it may run on for a while; its result is discarded.
NvrtcOutcome run_nvrtc(NvrtcRequest request, std::chrono::milliseconds timeout) {
  auto job = std::make_shared<Job>(std::move(request));
  if (timeout.count() <= 0) return execute(*job);

  exit_wait();  // exists before any thread can be abandoned
  std::thread worker([job] {
    NvrtcOutcome out = execute(*job);
    std::lock_guard lock(job->mutex);
    job->outcome = std::move(out);
    job->done = true;
    job->finished.notify_all();
    if (job->abandoned) abandoned().remove();
  });
  std::unique_lock lock(job->mutex);
  if (job->finished.wait_for(lock, timeout, [&] { return job->done; })) {
    lock.unlock();
    worker.join();
    return std::move(job->outcome);
  }
  job->abandoned = true;
  job->cancel = true;
  abandoned().add();  // under the job's lock: the worker cannot have finished in between
  lock.unlock();
  worker.detach();
  NvrtcOutcome out;
  out.timed_out = true;
  out.elapsed_ms = static_cast<double>(timeout.count());
  return out;
}

}  // namespace attnc::detail
