// `esi sample FILE [--component NAME] --energy E --rows R --steps K --step-size ETA
// --temperature T [--seed S] [--threads N] [--native] [--set name=value ...] --output OUT.csv`:
// overdamped Langevin chains on an energy of the document (exec/sample.hpp), one CSV row per
// chain holding its final state, one column per feature (state) by flattened name.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/text.hpp"
#include "esi/core/error.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/exec/sample.hpp"
#include "esi/io/csv.hpp"

namespace esi::cli {
namespace {

struct SampleArgs {
  std::string file, component, output;
  bool have_rows = false, have_steps = false, have_eta = false, have_temperature = false;
  exec::SampleOptions options;
  std::vector<std::pair<std::string, double>> sets;
};

bool parse_whole(const std::string& s, std::uint64_t max, std::uint64_t& out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, out);
  return r.ec == std::errc() && r.ptr == end && out <= max;
}

/// kExitOk with `s` filled, -1 after help, or the usage status.
int parse_args(Args args, SampleArgs& s) {
  std::vector<std::string> files;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      print_sample_help(stdout);
      return -1;
    }
    if (a.size() < 2 || a[0] != '-') {
      files.push_back(a);
      continue;
    }
    if (a == "--native") {
      s.options.native = true;
      continue;
    }
    if (a == "--f32") {
      s.options.single_precision = true;
      continue;
    }
    if (i + 1 >= args.size()) return usage_error("sample", a + " needs a value");
    const std::string& v = args[++i];
    std::uint64_t whole = 0;
    double number = 0;
    if (a == "--energy") s.options.energy = v;
    else if (a == "--component") s.component = v;
    else if (a == "--output" || a == "-o") s.output = v;
    else if (a == "--rows" || a == "--steps" || a == "--seed" || a == "--threads") {
      const std::uint64_t max = a == "--rows" ? 4294967295u : a == "--threads" ? 1024 : ~std::uint64_t{0};
      if (!parse_whole(v, max, whole) || ((a == "--rows" || a == "--threads") && whole == 0))
        return usage_error("sample", a + ": '" + v + "' is not a whole number in range");
      if (a == "--rows") s.options.rows = whole, s.have_rows = true;
      else if (a == "--steps") s.options.steps = whole, s.have_steps = true;
      else if (a == "--seed") s.options.seed = whole;
      else s.options.threads = static_cast<unsigned>(whole);
    } else if (a == "--step-size" || a == "--temperature") {
      if (!parse_finite(v, number)) return usage_error("sample", a + ": '" + v + "' is not a finite number");
      if (a == "--step-size") {
        if (!(number > 0)) return usage_error("sample", "--step-size must be positive");
        s.options.step_size = number, s.have_eta = true;
      } else {
        if (number < 0) return usage_error("sample", "--temperature must not be negative");
        s.options.temperature = number, s.have_temperature = true;
      }
    } else if (a == "--set") {
      const auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || !parse_finite(v.substr(eq + 1), number))
        return usage_error("sample", "--set expects name=value with a finite value, got '" + v + "'");
      s.sets.emplace_back(v.substr(0, eq), number);
    } else {
      return usage_error("sample", "unknown option '" + a + "'");
    }
  }
  if (files.size() != 1) return usage_error("sample", files.empty() ? "no FILE given" : "expects exactly one FILE");
  if (s.options.energy.empty()) return usage_error("sample", "--energy NAME is required");
  if (!s.have_rows || !s.have_steps || !s.have_eta || !s.have_temperature)
    return usage_error("sample", "--rows, --steps, --step-size and --temperature are required");
  if (s.output.empty()) return usage_error("sample", "--output OUT.csv is required");
  s.file = files[0];
  return kExitOk;
}

void write_csv(const std::string& path, const exec::SampleResult& r) {
  const bool to_stdout = path == "-";
  std::FILE* f = to_stdout ? stdout : std::fopen(path.c_str(), "w");
  if (f == nullptr)
    throw Error("output_not_writable", path, "", std::string("cannot open the output file for writing: ") + std::strerror(errno));
  std::string text;
  for (std::size_t j = 0; j < r.features.size(); ++j) text += (j ? "," : "") + io::csv_field(r.features[j]);
  text += "\n";
  char buf[32];
  const std::size_t n = r.features.size();
  for (std::size_t row = 0; row < r.rows; ++row) {
    for (std::size_t j = 0; j < n; ++j) {
      if (j) text += ',';
      text.append(buf, std::to_chars(buf, buf + sizeof buf, r.values[row * n + j]).ptr);
    }
    text += '\n';
  }
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const bool closed = to_stdout || std::fclose(f) == 0;
  if (!wrote || !closed)
    throw Error("output_write_failed", path, "", std::string("writing the output file failed: ") + std::strerror(errno));
}

}  // namespace

void print_sample_help(std::FILE* out) {
  std::fputs(
      "usage: esi sample FILE [--component NAME] --energy E --rows R --steps K --step-size ETA\n"
      "                  --temperature T [--seed S] [--threads N] [--native] [--f32]\n"
      "                  [--set name=value ...]\n"
      "                  --output OUT.csv\n"
      "\n"
      "Runs R independent overdamped Langevin chains over the model's states (the features),\n"
      "each from the states' initial values for K steps of\n"
      "    x <- x - ETA * grad E(x) + sqrt(2 ETA T) * xi\n"
      "where E is an observed of the document (flat or unique local name) and its gradient is\n"
      "derived symbolically. xi is keyed by (seed, chain, step, feature): the same seed gives the\n"
      "same bits on any thread count. Writes one CSV row per chain (its final state), one column\n"
      "per feature. Parameters with a distribution are drawn once per chain. --native runs the\n"
      "gradient as compiled C++ (same bits); --f32 runs the chains in single precision.\n"
      "\n"
      "exit status: 0 ok, 1 invalid input or failed write, 2 usage error\n",
      out);
}

int run_sample(Args args) {
  SampleArgs s;
  if (const int rc = parse_args(args, s); rc != kExitOk) return rc < 0 ? kExitOk : rc;
  try {
    const std::optional<esm::ResolvedDocument> loaded = load_or_report(s.file);
    if (!loaded) return kExitInvalid;
    esm::FlattenOptions fo;
    fo.component = s.component;
    for (const auto& [name, value] : s.sets) fo.parameter_overrides[name] = value;
    const esm::System system = esm::flatten(*loaded, fo);
    s.options.document = &*loaded;
    const exec::SampleResult r = exec::sample(system, s.options);
    write_csv(s.output, r);
    if (s.options.native && r.gradient_status.rfind("native", 0) != 0)
      std::fprintf(stderr, "esi sample: warning: --native was requested, but the gradient ran on the interpreter: %s\n",
                   r.gradient_status.c_str());
    if (!r.failure.empty()) {
      std::fprintf(stderr, "%s: error[sample_failed]: %s\n", s.file.c_str(), r.failure.c_str());
      return kExitInvalid;
    }
    return kExitOk;
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = s.file;
    std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    return kExitInvalid;
  }
}

}  // namespace esi::cli

