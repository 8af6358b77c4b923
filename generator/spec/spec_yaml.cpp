// Reads a spec's YAML with yaml-cpp 0.7.0 without its unbounded paths.
//
// YAML::LoadAll loops forever, adding a null document each turn, when a document ends without
// consuming a token (jbeder/yaml-cpp#1040): a leading ',' is such a token, since
// SingleDocParser::HandleNode reports a null for it and leaves it in place, and
// Parser::HandleNextDocument still returns true. So this file never calls LoadAll. A first pass
// drives Parser::HandleNextDocument itself, at most three times, with an event handler that builds
// nothing and counts: a document that the next one starts at the same token is stuck (an error at
// that token), and the handler stops any document past kMaxSpecNesting or kMaxSpecNodes. Every
// loop inside one document emits an event per turn, so the node limit bounds those loops too.
// The second pass, YAML::Load, parses the same first document into nodes (one
// HandleNextDocument call), which the first pass has already seen end.
#include "generator/spec/spec_yaml.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <cctype>
#include <sstream>
#include <vector>

namespace attnc::spec_detail {
namespace {

// Thrown from the event handler, through yaml-cpp, to stop a document past a limit.
struct LimitExceeded {
  YAML::Mark at;
  std::string message;
};

std::string nesting_message() {
  return cat("lists and mappings nested more than ", kMaxSpecNesting,
             " deep; allowed: a nesting depth of at most ", kMaxSpecNesting,
             " (a spec needs 3: tuning: {warps: [4, 8]})");
}

// What the first pass learns about each document, without building it.
class DocumentScan : public YAML::EventHandler {
 public:
  struct Document {
    YAML::Mark start;  // the document's first token (its `---`, if written)
    YAML::Mark root;   // its root node
    bool null_root = true;
  };
  std::vector<Document> docs;

  void OnDocumentStart(const YAML::Mark& m) override {
    docs.push_back({m, m, true});
    depth_ = 0;
    seen_root_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { value(m, true); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { value(m, false); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    value(m, false);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    collection(m);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    collection(m);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void value(const YAML::Mark& m, bool null) {
    if (!seen_root_) {
      docs.back().root = m;
      docs.back().null_root = null;
      seen_root_ = true;
    }
    if (++values_ > kMaxSpecNodes)
      throw LimitExceeded{m, cat("more than ", kMaxSpecNodes,
                                 " YAML values; allowed: at most ", kMaxSpecNodes,
                                 " (a spec has a few dozen)")};
  }
  void collection(const YAML::Mark& m) {
    value(m, false);
    if (++depth_ > kMaxSpecNesting) throw LimitExceeded{m, nesting_message()};
  }

  int depth_ = 0, values_ = 0;
  bool seen_root_ = false;
};

Loc loc(const YAML::Mark& m) {
  return m.is_null() || m.line < 0 ? Loc{} : Loc{m.line + 1, m.column + 1};
}

// Line `line` (0-based) of the text, without its line break; empty past the end.
std::string_view line_of(std::string_view text, int line) {
  std::size_t start = 0;
  for (int i = 0; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return {};
    ++start;
  }
  return text.substr(start, text.find('\n', start) - start);
}

// yaml-cpp's messages are terse; name the usual cause of the most common one, but only where a
// tab really indents the line the error points at.
std::string syntax_message(const YAML::ParserException& e, std::string_view text) {
  std::string msg = cat("YAML syntax error: ", e.msg);
  if (e.mark.is_null() || e.mark.line < 0) return msg;
  const std::string_view line = line_of(text, e.mark.line);
  const std::string_view indent = line.substr(0, line.find_first_not_of(" \t"));
  if (indent.find('\t') != std::string_view::npos) msg += " (tabs cannot indent YAML; use spaces)";
  return msg;
}

// A token that no node can start with, left in place by yaml-cpp (see the top of the file).
std::string stuck_message(std::string_view text, const YAML::Mark& at) {
  const std::string_view line = line_of(text, at.line);
  const char c = at.column >= 0 && std::size_t(at.column) < line.size() ? line[at.column] : 0;
  if (c == ',')
    return "YAML syntax error: unexpected ','; a comma separates the items of a [list] or "
           "{mapping} only";
  if (std::isprint(static_cast<unsigned char>(c)))
    return cat("YAML syntax error: unexpected '", c, "'; a value cannot start with it");
  return "YAML syntax error: a value cannot start here";
}

}  // namespace

std::optional<YAML::Node> load_document(std::string_view text, Diags& diags) {
  auto fail = [&](Loc at, const std::string& message) -> std::optional<YAML::Node> {
    diags.error(at, "", message);
    return std::nullopt;
  };
  DocumentScan scan;
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    // Three documents tell "a second document" from "the second one is stuck".
    while (scan.docs.size() < 3 && parser.HandleNextDocument(scan)) {
    }
  } catch (const LimitExceeded& e) {
    return fail(loc(e.at), e.message);
  } catch (const YAML::DeepRecursion& e) {  // yaml-cpp's own limit (500) is above ours
    return fail(loc(e.mark), nesting_message());
  } catch (const YAML::ParserException& e) {
    return fail(loc(e.mark), syntax_message(e, text));
  } catch (const YAML::Exception& e) {
    return fail({}, cat("YAML error: ", e.what()));
  }
  const auto& docs = scan.docs;
  auto stuck = [&](std::size_t i) {
    return i + 1 < docs.size() && docs[i + 1].start.pos == docs[i].start.pos;
  };
  for (std::size_t i = 0; i < 2; ++i)
    if (stuck(i)) return fail(loc(docs[i].start), stuck_message(text, docs[i].start));
  if (docs.empty() || (docs.size() == 1 && docs[0].null_root))
    return fail({1, 1}, "empty spec; a spec is a mapping of fields that starts with `version: 1`");
  if (docs.size() > 1)
    return fail(loc(docs[1].root),
                "a second YAML document; a spec file holds exactly one (remove the `---`)");
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {  // the first pass read the same document without error
    return fail(loc(e.mark), cat("YAML error: ", e.what()));
  }
}

}  // namespace attnc::spec_detail
