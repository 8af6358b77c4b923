/* A C program on the installed attnc: the library's version is the package's, and a spec given as
 * YAML text serves a real selection, workspace size and spec description for a described device
 * (no GPU needed). Prints "attnc VERSION: <select JSON>" and exits 0, or says what failed. */
#include <attnc.h>
#include <stdio.h>
#include <string.h>

static const char* kSpec =
    "version: 1\nname: consumer\nhead_dim: 128\nnum_q_heads: 32\nnum_kv_heads: 8\n"
    "dtype: bf16\nmask: causal\nkernels: [prefill, decode]\n";

static int failed(const char* what, const char* detail) {
  fprintf(stderr, "consumer: %s: %s\n", what, detail);
  return 1;
}

static int has(const char* text, const char* part) { return strstr(text, part) != NULL; }

int main(void) {
  if (strcmp(attnc_version(), ATTNC_PACKAGE_VERSION) != 0)
    return failed("attnc_version() differs from the package version " ATTNC_PACKAGE_VERSION, attnc_version());

  attnc_attention* bad = NULL;
  if (attnc_attention_create_from_yaml("version: 1\nhead_dim: 65\n", NULL, &bad) != ATTNC_ERR_SPEC ||
      !has(attnc_last_error(), "head_dim"))
    return failed("a spec with head_dim 65 should be ATTNC_ERR_SPEC naming head_dim", attnc_last_error());

  attnc_options opt = {.struct_size = sizeof(attnc_options)};
  if (attnc_options_init(&opt)) return failed("attnc_options_init", attnc_last_error());
  opt.db = "none";
  opt.device_name = "Test GPU";
  opt.device_arch = "sm_90a";
  opt.device_sm_count = 132;
  opt.device_driver_version = 13000;
  attnc_attention* att = NULL;
  if (attnc_attention_create_from_yaml(kSpec, &opt, &att)) return failed("create", attnc_last_error());

  attnc_selection sel = {.struct_size = sizeof(attnc_selection)};
  char json[1024];
  if (attnc_attention_select(att, ATTNC_KIND_DECODE, 1, 1, 8192, &sel, json, sizeof json))
    return failed("select", attnc_last_error());
  if (sel.origin != ATTNC_ORIGIN_HEURISTIC || sel.num_splits != 1 || sel.block_n <= 0 ||
      !has(json, "\"bucket\":\"b1.q1.k8192\"") || !has(json, "\"family\":\"decode_bw\""))
    return failed("select: expected the heuristic decode_bw choice for b1.q1.k8192 with 1 split", json);

  size_t bytes = 0;
  if (attnc_attention_workspace_needed(att, ATTNC_KIND_DECODE, 64, 1, 32768, &bytes) || bytes == 0)
    return failed("workspace_needed: expected a split-KV workspace for 64 x 32768", attnc_last_error());

  char spec[2048];
  if (attnc_attention_spec_json(att, spec, sizeof spec) || !has(spec, "\"head_dim\":128") ||
      !has(spec, "\"num_kv_heads\":8"))
    return failed("spec_json", spec);

  printf("attnc %s: %s\n", attnc_version(), json);
  attnc_attention_destroy(att);
  return 0;
}
