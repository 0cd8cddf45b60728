// `esi import-kpp MECH.eqn [MECH.spc] [MECH.def] -o MECH.esm`: a KPP mechanism as an ESM
// reaction system (esi::kpp::import_kpp), written as indented JSON and then checked with the
// same pipeline as `esi validate`, so a document this command writes is one esi can run.
//
// Notes (skipped #INLINE code, ignored directives) go to stderr as "note[...]" lines; a
// construct that cannot be translated is one "error[...]" line with its file and line, exit 1.
#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "esi/core/error.hpp"
#include "esi/esm/load.hpp"
#include "esi/kpp/import.hpp"

namespace esi::cli {
namespace {

constexpr const char* kCommand = "import-kpp";

bool parse_double(const std::string& s, double& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && ptr == e && std::isfinite(out);
}

}  // namespace

void print_import_kpp_help(std::FILE* out) {
  std::fputs(
      "usage: esi import-kpp MECH.eqn [MECH.spc] [MECH.def] -o OUT.esm [options]\n"
      "\n"
      "Translates a KPP (Kinetic PreProcessor) mechanism into an ESM document with one reaction\n"
      "system, then checks the result as 'esi validate' does. The files may come in any order;\n"
      "#INCLUDE names files next to the including one.\n"
      "\n"
      "  #DEFVAR species      -> species (initial value from #INITVALUES times CFACTOR, else 0)\n"
      "  #DEFFIX species      -> reservoir species (constant: true)\n"
      "  #EQUATIONS           -> reactions (id = the <TAG>, else R<n>); hv is dropped\n"
      "  rates                -> ESM expressions; ARR, ARR2, ARR_ab, ARR_ac, ARR_abc, GCARR_ab,\n"
      "                          GCARR_ac, GCARR_abc, EP2, EP3, FALL, TROE, k_3rd, k_3rd_iupac,\n"
      "                          k3rd_jpl, k3rd_iupac, k_arr\n"
      "                          expanded inline; TEMP -> parameter T [K], M / C_M / CAIR -> M\n"
      "                          [molec/cm^3] (the fixed species M when declared), CFACTOR\n"
      "  #INLINE code, #INTEGRATOR, #LANGUAGE, #LOOKAT, ... -> skipped with a note\n"
      "\n"
      "options:\n"
      "  -o, --output FILE    where to write the document ('-' = standard output, not checked)\n"
      "  --name NAME          name of the reaction system (default: the first file's stem)\n"
      "  --units UNITS        units of every species (default molec/cm^3, KPP's units)\n"
      "  --temperature K      default of T (298.15)\n"
      "  --air-density N      default of M in molec/cm^3 (2.46e19)\n"
      "  --param NAME=VALUE   a name the rates read that KPP's inline code defines (SUN, J_NO2):\n"
      "                       a dimensionless parameter with this default (repeatable)\n"
      "\n"
      "exit status: 0 written and valid, 1 the mechanism cannot be translated (or the result is\n"
      "refused), 2 usage error\n",
      out);
}

int run_import_kpp(Args args) {
  std::vector<std::filesystem::path> files;
  std::string output;
  kpp::ImportOptions options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> const std::string* {
      if (i + 1 >= args.size()) return nullptr;
      (void)what;
      return &args[++i];
    };
    if (a == "-h" || a == "--help") {
      print_import_kpp_help(stdout);
      return kExitOk;
    }
    if (a == "-o" || a == "--output") {
      const std::string* v = value("FILE");
      if (!v) return usage_error(kCommand, a + " needs a file name");
      output = *v;
    } else if (a == "--name") {
      const std::string* v = value("NAME");
      if (!v) return usage_error(kCommand, "--name needs a name");
      options.name = *v;
    } else if (a == "--units") {
      const std::string* v = value("UNITS");
      if (!v) return usage_error(kCommand, "--units needs a unit string");
      options.species_units = *v;
    } else if (a == "--temperature" || a == "--air-density") {
      const std::string* v = value("VALUE");
      double x = 0;
      if (!v || !parse_double(*v, x))
        return usage_error(kCommand, a + " needs a finite number");
      (a == "--temperature" ? options.temperature : options.air_density) = x;
    } else if (a == "--param") {
      const std::string* v = value("NAME=VALUE");
      const std::size_t eq = v ? v->find('=') : std::string::npos;
      double x = 0;
      if (!v || eq == std::string::npos || eq == 0 || !parse_double(v->substr(eq + 1), x))
        return usage_error(kCommand, "--param needs NAME=VALUE with a finite number");
      options.extra_parameters[v->substr(0, eq)] = x;
    } else if (!a.empty() && a[0] == '-' && a != "-") {
      return usage_error(kCommand, "unknown option '" + a + "'");
    } else {
      files.emplace_back(a);
    }
  }
  if (files.empty()) return usage_error(kCommand, "no KPP file given");
  if (output.empty()) return usage_error(kCommand, "no output file given (-o OUT.esm)");

  kpp::ImportResult result;
  try {
    result = kpp::import_kpp(files, options);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", format_diagnostic(e.diagnostic()).c_str());
    std::fprintf(stderr, "esi import-kpp: nothing written\n");
    return kExitInvalid;
  }
  for (const Diagnostic& d : result.notes)
    std::fprintf(stderr, "%s\n", format_diagnostic(d, "note").c_str());

  const std::string text = result.document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (output == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "esi import-kpp: cannot write to standard output\n");
      return kExitInvalid;
    }
    return kExitOk;
  }
  {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      std::fprintf(stderr, "%s:/: error[file_not_writable]: cannot write the document (%s)\n",
                   output.c_str(), std::strerror(errno));
      return kExitInvalid;
    }
  }
  // The document goes through the checks every command runs, so "written" means "runnable".
  const esm::ValidationReport report = esm::validate_file(output);
  if (!report.valid()) {
    for (Diagnostic d : report.shown()) {
      if (d.file.empty()) d.file = output;
      std::fprintf(stderr, "%s\n", format_diagnostic(d).c_str());
    }
    std::fprintf(stderr,
                 "%s: written, but the checks every command runs refuse it (above): change the "
                 "rate in the KPP file (e.g. LOG(TEMP) takes a logarithm of kelvins), or report "
                 "it if the translation is at fault\n",
                 output.c_str());
    return kExitInvalid;
  }
  for (Diagnostic d : report.notes) {
    if (d.file.empty()) d.file = output;
    std::fprintf(stderr, "%s\n", format_diagnostic(d, "note").c_str());
  }
  std::fprintf(stderr, "%s: %zu reactions, %zu species written (valid)\n", output.c_str(),
               result.document["reaction_systems"].begin()->at("reactions").size(),
               result.document["reaction_systems"].begin()->at("species").size());
  return kExitOk;
}

}  // namespace esi::cli
