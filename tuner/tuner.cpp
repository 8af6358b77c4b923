#include "tuner/tuner.h"

#include <algorithm>
#include <map>

#include "generator/emit/emit.h"
#include "generator/spec/spec_parse.h"
#include "runtime/launch/attention_args.h"
#include "runtime/driver/cuda_driver.h"
#include "runtime/driver/event_wait.h"
#include "runtime/driver/module.h"
#include "runtime/compiler/thread_pool.h"
#include "runtime/dispatch/tuning_key.h"
#include "tuner/gate.h"
#include "tuner/record.h"
#include "tuner/search_space.h"

namespace attnc {
namespace {

using Clock = std::chrono::steady_clock;

// One compiled config, loaded into the context (or why not).
struct Loaded {
  KernelPlan plan;
  std::optional<Module> module;
  std::optional<Kernel> kernel, combine;
  std::string status, error;  // status empty: usable
  std::optional<double> compile_ms;
};

// Driver errors that leave the context usable; any other (illegal address, launch failure...) is
// sticky and ends the run.
bool context_survives(CUresult code) {
  return code == CUDA_ERROR_OUT_OF_MEMORY || code == CUDA_ERROR_INVALID_VALUE ||
         code == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES || code == CUDA_ERROR_NOT_FOUND;
}

class Sweep {
 public:
  Sweep(const Spec& s, const Device& d, KernelBuilder& b, Store& st, const TuneOptions& o)
      : spec_(s),
        id_(spec_id(s)),
        dev_(d),
        builder_(b),
        store_(st),
        opt_(o),
        start_(Clock::now()),
        deadline_(start_ + o.budget) {
    layout_ = s.kv_cache.layout == KvLayout::HND ? KvCacheLayout::fork_hnd : KvCacheLayout::vllm;
  }

  TuneResult run(const std::vector<ShapeBucket>& tasks) {
    TuneResult result;
    result.tasks_total = static_cast<int>(tasks.size());
    std::vector<std::vector<SpacePoint>> spaces;
    for (const ShapeBucket& t : tasks) {
      spaces.push_back(search_space(spec_, t.kind, t, dev_.arch(), dev_.max_smem_per_block_optin(), dev_.sm_count()));
      total_ += static_cast<int>(spaces.back().size());
    }
    for (std::size_t i = 0; i < tasks.size() && !should_stop(); ++i) {
      // Each bucket may use an equal share of what is left, so a budget too small for the whole
      // space still records every bucket (its best so far); time a bucket leaves goes to the next.
      const auto now = Clock::now();
      bucket_deadline_ = now + (deadline_ - now) / static_cast<long>(tasks.size() - i);
      task_ = static_cast<int>(i);
      tasks_ = static_cast<int>(tasks.size());
      result.buckets.push_back(tune_bucket(tasks[i], spaces[i]));
    }
    result.stopped = stopped_;
    result.stop_detail = stop_detail_;
    return result;
  }

 private:
  bool should_stop() {
    if (!stopped_.empty()) return true;
    if (opt_.interrupt && opt_.interrupt->load())
      stopped_ = "interrupted";
    else if (Clock::now() >= deadline_)
      stopped_ = "budget";
    return !stopped_.empty();
  }
  // For compile workers: no state change, safe from any thread.
  bool stop_requested() const {
    return !stopped_.empty() || (opt_.interrupt && opt_.interrupt->load()) || Clock::now() >= deadline_;
  }
  void fatal(const std::string& why, const std::string& detail) {
    stopped_ = why;
    stop_detail_ = detail;
  }

  void report(const std::string& bucket, bool started) {
    if (!opt_.progress) return;
    TuneProgress p;
    p.done = done_;
    p.total = total_;
    p.task = task_;
    p.tasks = tasks_;
    p.bucket = bucket;
    p.bucket_started = started;
    p.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_);
    p.remaining_budget = std::max(std::chrono::milliseconds(0),
                                  std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()));
    opt_.progress(p);
  }

  static std::string config_key(KernelKind kind, const Config& c) {
    return std::string(to_string(kind)) + ":" + c.family + ":" + c.short_name();
  }

  // Compiles (in parallel) and loads every config of `kind` not loaded yet.
  void compile(KernelKind kind, const std::vector<Config>& configs) {
    struct Job {
      Config config;
      std::optional<KernelPlan> plan;
      std::optional<KernelSource> source;
      std::optional<BuiltKernel> built;
      std::string status, error;
      bool started = false;
    };
    std::vector<Job> jobs(configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i) {
      jobs[i].config = configs[i];
      try {
        jobs[i].plan = plan_kernel(spec_, kind, configs[i], dev_.arch());
        jobs[i].source = emit_kernel(*jobs[i].plan);
      } catch (const std::exception& e) {
        jobs[i].status = kStatusError;
        jobs[i].error = e.what();
      }
    }
    {
      ThreadPool pool(opt_.compile_jobs);
      std::vector<std::future<void>> done;
      for (Job& j : jobs) {
        if (!j.source) continue;
        done.push_back(pool.submit([&] {
          if (stop_requested()) return;  // not reached: the bucket is recorded as incomplete
          j.started = true;
          try {
            j.built = builder_.build(*j.source);
          } catch (const CompileTimeout& e) {
            j.status = kStatusTimeout;
            j.error = e.what();
          } catch (const CompileError& e) {
            j.status = kStatusCompileError;
            j.error = e.what();
          } catch (const std::exception& e) {
            j.status = kStatusError;
            j.error = e.what();
          }
        }));
      }
      for (auto& f : done) f.get();
    }
    // A spilling kernel is dropped (its config is past its register budget), except the planner's
    // own default, chosen knowing it spills (decode_bw at Dv 256: 2.5x decode_split, measured): the
    // heuristic's config is always timed, so no winner is slower than what runs untuned.
    const Config heuristic = default_config(spec_, kind, dev_.arch());
    for (Job& j : jobs) {
      if (j.source && !j.started) continue;
      Loaded l;
      if (j.plan) l.plan = *j.plan;
      l.status = j.status;
      l.error = j.error;
      if (j.built) {
        const KernelRecord& r = j.built->record;
        l.compile_ms = r.compile_ms;
        if ((r.spill_stores > 0 || r.spill_loads > 0) && !(j.config == heuristic)) {
          l.status = kStatusSpills;
          l.error = std::to_string(r.registers) + " registers, " + std::to_string(r.spill_stores) +
                    " bytes spill stores, " + std::to_string(r.spill_loads) + " bytes spill loads";
        } else {
          try {
            l.module.emplace(r.cubin);
            l.kernel.emplace(l.module->kernel(r.entry));
            l.kernel->reserve_dynamic_smem(l.plan.smem_bytes);
            if (const char* suffix = companion_suffix(l.plan)) l.combine.emplace(l.module->kernel(r.entry + suffix));
          } catch (const std::exception& e) {
            l.status = kStatusError;
            l.error = std::string("loading the cubin: ") + e.what();
          }
        }
      }
      loaded_.emplace(config_key(kind, j.config), std::move(l));
    }
  }

  // The gate, once per (config, split count, case) in this run.
  GateResult gate(const Loaded& l, KernelKind kind, const ShapeBucket& b, int num_splits) {
    const AttentionCase c = gate_case(kind, b, spec_.kv_cache.page_size, layout_, num_splits, dev_.sm_count());
    std::string key = config_key(kind, l.plan.config) + ":" + std::to_string(num_splits);
    for (int q : c.seqlens_q) key += "," + std::to_string(q);
    key += "/";
    for (int k : c.seqlens_k) key += "," + std::to_string(k);
    if (auto it = gates_.find(key); it != gates_.end()) return it->second;
    GateResult g = run_gate(l.plan, *l.kernel, l.combine ? &*l.combine : nullptr, c);
    gates_.emplace(key, g);
    return g;
  }

  BucketOutcome tune_bucket(const ShapeBucket& b, const std::vector<SpacePoint>& points) {
    const KernelKind kind = b.kind;
    const std::string name = std::string(to_string(kind)) + " " + b.label();
    BucketOutcome out;
    out.bucket = b;
    out.candidates = static_cast<int>(points.size());
    report(name, true);

    std::vector<CandidateResult> cands(points.size());
    std::vector<Config> need;
    for (std::size_t i = 0; i < points.size(); ++i) {
      cands[i].choice = points[i].choice;
      cands[i].baseline = points[i].baseline;
      if (!points[i].pruned.empty()) {
        cands[i].status = kStatusPruned;
        cands[i].error = points[i].pruned;
        ++done_;
        continue;
      }
      const Config& c = points[i].choice.config;
      if (!loaded_.count(config_key(kind, c)) && std::find(need.begin(), need.end(), c) == need.end())
        need.push_back(c);
    }
    if (!need.empty()) compile(kind, need);
    report(name, false);

    std::optional<TimingInputs> inputs;
    // Decode: a config whose first split count ran far slower than the best so far cannot win with
    // another split count (they move decode by a few percent); its other counts are skipped.
    constexpr double kDecodeGiveUp = 1.3;
    std::map<std::string, double> first_us;
    double best_us = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      CandidateResult& cand = cands[i];
      if (!cand.status.empty()) continue;
      if (should_stop() || Clock::now() >= bucket_deadline_) break;
      auto it = loaded_.find(config_key(kind, cand.choice.config));
      if (it == loaded_.end()) continue;  // its compile never started (stopped)
      const Loaded& l = it->second;
      cand.compile_ms = l.compile_ms;
      ++done_;
      if (const auto f = first_us.find(it->first); kind == KernelKind::decode && f != first_us.end() &&
                                                   f->second > kDecodeGiveUp * best_us) {
        cand.status = kStatusPruned;
        cand.error = "its first split count ran " + std::to_string(int(f->second)) +
                     " us, over 1.3x the best so far (" + std::to_string(int(best_us)) + " us)";
        continue;
      }
      if (!l.status.empty()) {
        cand.status = l.status;
        cand.error = l.error;
        continue;
      }
      const int splits = cand.choice.num_splits;
      try {
        const GateResult g = gate(l, kind, b, splits);
        if (!g.passed) {
          cand.status = kStatusFailedCheck;
          cand.error = g.summary;
          report(name, false);
          continue;
        }
        if (!inputs) {
          if (!out.error.empty()) throw std::runtime_error(out.error);
          try {
            inputs.emplace(dev_, spec_, kind, b.representative(), spec_.kv_cache.page_size, layout_, opt_.measure);
          } catch (const std::exception& e) {
            out.error = std::string("timing inputs: ") + e.what();
            throw;
          }
        }
        const Timing t = inputs->time(l.plan, *l.kernel, l.combine ? &*l.combine : nullptr, splits);
        cand.status = kStatusOk;
        cand.time_us = t.median_us;
        cand.min_us = t.min_us;
        cand.p90_us = t.p90_us;
        cand.repeats = t.repeats;
        cand.splits_used = t.num_splits;
        cand.throughput = problem_throughput(spec_, kind, b.representative(), t.median_us);
        ++out.ok;
        first_us.emplace(it->first, t.median_us);
        best_us = best_us > 0 ? std::min(best_us, t.median_us) : t.median_us;
      } catch (const GpuTimeout& e) {
        cand.status = kStatusTimeout;
        cand.error = e.what();
        fatal("timeout", e.what());
      } catch (const CudaError& e) {
        cand.status = kStatusError;
        cand.error = e.what();
        if (!context_survives(e.code())) fatal("gpu_error", e.what());
      } catch (const std::exception& e) {
        cand.status = kStatusError;
        cand.error = e.what();
      }
      report(name, false);
    }
    for (const auto& c : cands)
      if (c.status.empty()) out.complete = false;

    if (const auto w = pick_winner(cands)) {
      MeasuredHow how;
      how.warmup = opt_.measure.warmup;
      how.target_ms = opt_.measure.target_ms;
      how.max_repeats = opt_.measure.max_repeats;
      how.rotation_sets = inputs ? inputs->sets() : 0;
      how.rotated_bytes = inputs ? double(inputs->rotated_bytes()) : 0;
      how.l2_bytes = dev_.l2_bytes();
      how.problem = b.representative();
      how.page_size = kind == KernelKind::prefill ? 0 : spec_.kv_cache.page_size;
      how.unit = throughput_unit(kind);
      how.baseline = points.front().choice;
      how.budget_s = std::chrono::duration<double>(opt_.budget).count();
      how.complete = out.complete;
      TuningRecord r = make_tuning_record(tuning_key(dev_, id_, kind, b), cands, *w, how);
      try {
        store_.put_tuning(r, TuningConflict::Replace);
        out.record = std::move(r);
      } catch (const std::exception& e) {
        out.error = std::string("could not store the record: ") + e.what();
      }
    } else if (out.error.empty()) {
      out.error = out.complete ? "no candidate passed the check" : "stopped before any candidate was measured";
    }
    return out;
  }

  const Spec& spec_;
  const std::string id_;
  const Device& dev_;
  KernelBuilder& builder_;
  Store& store_;
  const TuneOptions& opt_;
  const Clock::time_point start_, deadline_;
  Clock::time_point bucket_deadline_;
  KvCacheLayout layout_;
  std::map<std::string, Loaded> loaded_;
  std::map<std::string, GateResult> gates_;
  std::string stopped_, stop_detail_;
  int done_ = 0, total_ = 0, task_ = 0, tasks_ = 0;
};

}  // namespace

TuneResult tune(const Spec& spec, const std::vector<ShapeBucket>& tasks, const Device& dev, KernelBuilder& builder,
                Store& store, const TuneOptions& options) {
  store.put_spec(spec_id(spec), spec.name, canonical_form(spec));
  return Sweep(spec, dev, builder, store, options).run(tasks);
}

}  // namespace attnc
