#include "runtime/capi/capi_support.h"

#include <stdexcept>

#include "generator/spec/spec_parse.h"
#include "runtime/compiler/nvrtc_compiler.h"
#include "runtime/dispatch/dispatcher.h"
#include "runtime/driver/cuda_driver.h"

namespace attnc::capi {
namespace {
thread_local std::string t_error;
}  // namespace

int fail(int code, std::string message) {
  t_error = std::move(message);
  return code;
}

const char* last_error() { return t_error.c_str(); }

int copy_out(const std::string& text, char* out, size_t size) {
  if (text.size() + 1 > size)
    return fail(ATTNC_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(size) + " bytes, the result needs " +
                                                std::to_string(text.size() + 1));
  std::memcpy(out, text.c_str(), text.size() + 1);
  return ATTNC_OK;
}

int fail_current(const char* call) {
  try {
    throw;
  } catch (const SpecError& e) {
    return fail(ATTNC_ERR_SPEC, e.what());
  } catch (const NotSupportedYet& e) {
    return fail(ATTNC_ERR_NOT_SUPPORTED, e.what());
  } catch (const BadCall& e) {
    return fail(ATTNC_ERR_BAD_CALL, std::string(call) + ": " + e.what());
  } catch (const JitDisabled& e) {
    return fail(ATTNC_ERR_NO_JIT, e.what());
  } catch (const DispatchError& e) {
    return fail(ATTNC_ERR_DISPATCH, e.what());
  } catch (const CompileError& e) {
    return fail(ATTNC_ERR_COMPILE, e.what());
  } catch (const DriverUnavailable& e) {
    return fail(ATTNC_ERR_NO_GPU, e.what());
  } catch (const CudaError& e) {
    return fail(ATTNC_ERR_CUDA, e.what());
  } catch (const std::invalid_argument& e) {  // BadConfig, bad arch, bad JSON
    return fail(ATTNC_ERR_INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return fail(ATTNC_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(ATTNC_ERR_INTERNAL, "unknown error");
  }
}

int check_size(const char* what, size_t got, size_t need, bool has_init) {
  if (got >= need) return ATTNC_OK;
  const std::string name = what;
  return fail(ATTNC_ERR_INVALID_ARGUMENT, name + ".struct_size is " + std::to_string(got) + ", expected at least " +
                                              std::to_string(need) + ": set it to sizeof(" + name + ")" +
                                              (has_init ? " before " + name + "_init" : ""));
}

}  // namespace attnc::capi
