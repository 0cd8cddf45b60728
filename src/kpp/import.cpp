// KPP mechanism -> one ESM reaction system (see include/esi/kpp/import.hpp for the mapping).
//
// The preprocessed text (source.cpp) is cut into sections at each `#DIRECTIVE`; sections are
// lists of statements ended by ';'. Species sections are read first, then #INITVALUES, then
// #EQUATIONS, so the files may come in any order (as KPP allows through #INCLUDE).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "esi/kpp/import.hpp"
#include "kpp/kpp_internal.hpp"

namespace esi::kpp {
namespace {

using json = nlohmann::json;
using namespace detail;

struct Section {
  std::string name;          ///< upper case, without '#'
  std::size_t at = 0;        ///< position of '#'
  std::size_t begin = 0, end = 0;  ///< the section's text
};

struct Statement {
  std::size_t begin = 0, end = 0;  ///< text of the statement, without ';'
};

struct SpeciesDecl {
  std::string name;
  bool fixed = false;
  std::size_t at = 0;
  double initial = 0;
  bool has_initial = false;
};

/// Directives that steer KPP's code generation or checks; they do not change the mechanism.
const std::set<std::string>& ignored_directives() {
  static const std::set<std::string> names = {
      "ATOMS",    "CHECK",     "CHECKALL",   "LOOKAT",     "LOOKATALL",  "MONITOR",
      "TRANSPORT", "TRANSPORTALL", "INTEGRATOR", "INTFILE",  "LANGUAGE",   "DRIVER",
      "DOUBLE",   "REORDER",   "JACOBIAN",   "HESSIAN",    "STOICMAT",   "FUNCTION",
      "MEX",      "DUMMYINDEX", "EQNTAGS",   "USE",        "USES",       "DECLARE",
      "MINVERSION", "AUTOREDUCE", "UPPERCASEF90", "XGRID",
      "YGRID",    "ZGRID",     "WRITE_ATM",  "WRITE_SPC",  "WRITE_MAT",  "WRITE_OPT",
      "FLUX",     "MECHANISM", "ENDINLINE", "FAMILIES", "STOCHASTIC", "INITIALIZE",
      "RUN",      "SPARSEDATA", "RETURNRATES"};
  return names;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::string collapse_spaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

/// "small_strato.eqn" -> "small_strato"; "2nd-mech" -> "_2nd_mech".
std::string identifier_from_stem(const std::filesystem::path& p) {
  std::string s = p.stem().string();
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
  return s;
}

bool is_photon(const std::string& name) { return upper(name) == "HV"; }

class Importer {
 public:
  Importer(Source src, const ImportOptions& options) : src_(std::move(src)), options_(options) {}

  ImportResult run(const std::vector<std::filesystem::path>& files) {
    split_sections();
    for (const Section& s : sections_)
      if (s.name == "SETVAR" || s.name == "SETRAD" || s.name == "SETFIX")
        src_.fail(s.at, "kpp_unsupported_directive",
                  "#" + s.name + " changes which species are fixed; esi does not read it: declare "
                  "the species in #DEFVAR or #DEFFIX instead");
      else if (s.name == "LUMP")
        src_.fail(s.at, "kpp_unsupported_directive",
                  "#LUMP lumps species together; esi does not read it: write the lumped species "
                  "into the equations instead");
    for (const Section& s : sections_)
      if (s.name == "DEFVAR" || s.name == "DEFRAD" || s.name == "DEFFIX")
        read_species(s, s.name == "DEFFIX");
    choose_parameter_names();
    for (const Section& s : sections_)
      if (s.name == "INITVALUES") read_initial_values(s);
    for (const Section& s : sections_)
      if (s.name == "EQUATIONS") read_equations(s);
    for (const Section& s : sections_) note_other(s);
    if (reactions_.empty())
      throw Error("kpp_no_equations", files.empty() ? "" : files.front().string(), "",
                  "the mechanism has no #EQUATIONS: nothing to import");
    return ImportResult{build_document(files), std::move(src_.notes)};
  }

 private:
  Source src_;
  const ImportOptions& options_;
  std::vector<Section> sections_;
  std::vector<SpeciesDecl> species_;
  std::map<std::string, std::size_t> species_index_;
  RateNames names_;
  bool air_is_species_ = false;
  double cfactor_ = 1.0;
  json reactions_ = json::array();
  std::set<std::string> reaction_ids_;
  std::set<std::string> noted_directives_;

  void split_sections() {
    const std::string& t = src_.text;
    std::size_t i = 0;
    while (i < t.size() && t[i] != '#') {
      if (!std::isspace(static_cast<unsigned char>(t[i])))
        src_.fail(i, "kpp_parse_error",
                  "text before the first KPP section (#EQUATIONS, #DEFVAR, #DEFFIX, "
                  "#INITVALUES, ...)");
      ++i;
    }
    while (i < t.size()) {
      Section s;
      s.at = i;
      std::size_t j = i + 1;
      while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
      s.name = t.substr(i + 1, j - i - 1);
      if (s.name.empty()) src_.fail(i, "kpp_parse_error", "'#' without a directive name");
      s.begin = j;
      std::size_t e = j;
      while (e < t.size() && t[e] != '#') ++e;
      s.end = e;
      sections_.push_back(s);
      i = e;
    }
  }

  std::vector<Statement> statements(const Section& s) {
    std::vector<Statement> out;
    std::size_t start = s.begin;
    for (std::size_t i = s.begin; i <= s.end; ++i) {
      if (i < s.end && src_.text[i] != ';') continue;
      const bool terminated = i < s.end;
      std::size_t b = start;
      while (b < i && std::isspace(static_cast<unsigned char>(src_.text[b]))) ++b;
      if (b < i) {
        if (!terminated) {
          // Some directives take one word and no ';' (#LANGUAGE Fortran90): callers that read
          // statements are the ones whose entries KPP ends with ';'.
          src_.fail(b, "kpp_parse_error",
                    "this #" + s.name + " entry is not ended by ';'");
        }
        out.push_back(Statement{b, i});
      }
      start = i + 1;
    }
    return out;
  }

  std::string statement_text(const Statement& st) const {
    return collapse_spaces(std::string_view(src_.text).substr(st.begin, st.end - st.begin));
  }

  void read_species(const Section& s, bool fixed) {
    for (const Statement& st : statements(s)) {
      const std::string text = statement_text(st);
      const std::size_t eq = text.find('=');
      if (eq == std::string::npos)
        src_.fail(st.begin, "kpp_parse_error",
                  "'" + text + "' is not a species declaration 'NAME = composition ;'");
      std::string name = collapse_spaces(text.substr(0, eq));
      if (!is_identifier(name))
        src_.fail(st.begin, "kpp_parse_error",
                  "'" + name + "' is not a species name (letters, digits and '_', not starting "
                  "with a digit)");
      if (is_photon(name)) continue;  // the photon is a dummy, never a species
      if (species_index_.count(name)) {
        const SpeciesDecl& first = species_[species_index_[name]];
        src_.fail(st.begin, "kpp_duplicate_species",
                  "species '" + name + "' is declared twice (first at " + src_.file_of(first.at) +
                      " " + src_.pointer_of(first.at) + ")");
      }
      species_index_[name] = species_.size();
      species_.push_back(SpeciesDecl{name, fixed, st.begin, 0.0, false});
    }
  }

  bool name_taken(const std::string& n) const {
    return species_index_.count(n) || options_.extra_parameters.count(n);
  }

  std::string free_name(std::initializer_list<const char*> candidates) const {
    for (const char* c : candidates)
      if (!name_taken(c)) return c;
    std::string base = *candidates.begin();
    for (int k = 2;; ++k)
      if (!name_taken(base + "_" + std::to_string(k))) return base + "_" + std::to_string(k);
  }

  void choose_parameter_names() {
    for (const auto& [name, value] : options_.extra_parameters) {
      if (!is_identifier(name))
        throw Error("kpp_invalid_parameter", "", "",
                    "--param '" + name + "' is not a name (letters, digits and '_')");
      if (species_index_.count(name))
        throw Error("kpp_invalid_parameter", src_.file_of(species_[species_index_.at(name)].at),
                    src_.pointer_of(species_[species_index_.at(name)].at),
                    "--param '" + name + "' names a species of the mechanism");
      names_.extra.insert(name);
    }
    names_.temperature = free_name({"T", "TEMP", "T_air"});
    names_.cfactor = free_name({"CFACTOR", "CFACTOR_kpp"});
    // KPP mechanisms that need the air density usually declare it as the fixed species M; its
    // #INITVALUES value is then the one the rates read.
    auto m = species_index_.find("M");
    if (m != species_index_.end() && species_[m->second].fixed && !options_.extra_parameters.count("M")) {
      names_.air_density = "M";
      air_is_species_ = true;
    } else {
      names_.air_density = free_name({"M", "M_air"});
    }
  }

  void read_initial_values(const Section& s) {
    std::map<std::string, double> generic;  // ALL_SPEC, VAR_SPEC, FIX_SPEC
    std::vector<std::pair<std::size_t, double>> specific;
    for (const Statement& st : statements(s)) {
      const std::vector<Token> toks = tokenize(src_, st.begin, st.end);
      if (toks.size() < 3 || toks[0].kind != Tok::Ident || toks[1].text != "=")
        src_.fail(st.begin, "kpp_parse_error",
                  "'" + statement_text(st) + "' is not an initial value 'NAME = value ;'");
      const double value = constant_value(src_, toks, 2, toks.size());
      const std::string& name = toks[0].text;
      const std::string key = upper(name);
      if (species_index_.count(name)) {
        specific.emplace_back(species_index_[name], value);
      } else if (key == "CFACTOR") {
        cfactor_ = value;
      } else if (key == "ALL_SPEC" || key == "VAR_SPEC" || key == "FIX_SPEC") {
        generic[key] = value;
      } else if (is_photon(name)) {
        continue;
      } else {
        src_.fail(st.begin, "kpp_undefined_species",
                  "#INITVALUES sets '" + name + "', which is not a declared species (nor "
                  "CFACTOR, ALL_SPEC, VAR_SPEC, FIX_SPEC)");
      }
    }
    // KPP's Initialize: everything from ALL_SPEC, then VAR_SPEC / FIX_SPEC, then by name.
    for (SpeciesDecl& sp : species_) {
      if (generic.count("ALL_SPEC")) sp.initial = generic["ALL_SPEC"], sp.has_initial = true;
      const char* kind = sp.fixed ? "FIX_SPEC" : "VAR_SPEC";
      if (generic.count(kind)) sp.initial = generic[kind], sp.has_initial = true;
    }
    for (const auto& [index, value] : specific) {
      species_[index].initial = value;
      species_[index].has_initial = true;
    }
  }

  /// One side of an equation: tokens [first, last) as `[coef] NAME (+ [coef] NAME)*`.
  json read_side(const std::vector<Token>& toks, std::size_t first, std::size_t last,
                 std::size_t stmt_at, const char* side) {
    std::vector<std::pair<std::string, double>> terms;
    std::size_t i = first;
    auto fail_at = [&](std::size_t k, const std::string& code, const std::string& msg) {
      src_.fail(k < toks.size() ? toks[k].pos : stmt_at, code, msg);
    };
    while (i < last) {
      double coef = 1.0;
      if (toks[i].kind == Tok::Punct && toks[i].text == "-")
        fail_at(i, "kpp_unsupported_stoichiometry",
                std::string("a negative coefficient among the ") + side +
                    " (esi reads positive stoichiometric coefficients only)");
      if (toks[i].kind == Tok::Punct && toks[i].text == "+" && i == first) ++i;  // leading '+'
      if (i < last && toks[i].kind == Tok::Number) {
        coef = toks[i].number;
        ++i;
        if (i < last && toks[i].kind == Tok::Punct && toks[i].text == "*") ++i;
        if (!(coef > 0))
          fail_at(i - 1, "kpp_unsupported_stoichiometry",
                  "the coefficient " + toks[i - 1].text + " is not positive");
      }
      if (i + 1 < last && toks[i].kind == Tok::Ident && toks[i + 1].kind == Tok::Punct &&
          toks[i + 1].text == "*")
        fail_at(i, "kpp_unsupported_stoichiometry",
                "the coefficient '" + toks[i].text + "*' is a name; esi reads numeric "
                "stoichiometric coefficients only");
      if (i >= last || toks[i].kind != Tok::Ident)
        fail_at(i, "kpp_parse_error",
                std::string("expected a species name among the ") + side + (i < last ? ", found '" + toks[i].text + "'" : ""));
      const std::string& name = toks[i].text;
      if (!is_photon(name)) {
        if (!species_index_.count(name))
          fail_at(i, "kpp_undefined_species",
                  "'" + name + "' is not declared in #DEFVAR or #DEFFIX");
        auto it = std::find_if(terms.begin(), terms.end(),
                               [&](const auto& t) { return t.first == name; });
        const double total = it == terms.end() ? coef : it->second + coef;
        if (!std::isfinite(total))
          fail_at(i, "kpp_unsupported_stoichiometry",
                  "the coefficient of '" + name + "' is not a finite number");
        if (it == terms.end()) terms.emplace_back(name, total);
        else it->second = total;  // O + O = O2: one substrate with stoichiometry 2
      }
      ++i;
      if (i < last) {
        if (toks[i].kind == Tok::Punct && toks[i].text == "-")
          fail_at(i, "kpp_unsupported_stoichiometry",
                  std::string("a negative coefficient among the ") + side +
                      " (esi reads positive stoichiometric coefficients only)");
        if (!(toks[i].kind == Tok::Punct && toks[i].text == "+"))
          fail_at(i, "kpp_parse_error",
                  std::string("expected '+' between the ") + side + ", found '" + toks[i].text + "'");
        ++i;
        if (i >= last) fail_at(i - 1, "kpp_parse_error", std::string("the ") + side + " end with '+'");
      }
    }
    if (terms.empty()) return nullptr;
    json out = json::array();
    for (const auto& [name, coef] : terms) {
      // Spec §7.3a: integer-valued coefficients are written without a decimal point.
      const bool integral = coef == std::floor(coef) && coef < 1e15;
      out.push_back({{"species", name},
                     {"stoichiometry", integral ? json(static_cast<std::int64_t>(coef)) : json(coef)}});
    }
    return out;
  }

  void read_equations(const Section& s) {
    for (const Statement& st : statements(s)) {
      const std::vector<Token> toks = tokenize(src_, st.begin, st.end);
      std::size_t i = 0;
      std::string tag;
      if (!toks.empty() && toks[0].text == "<") {
        std::size_t close = 1;
        while (close < toks.size() && toks[close].text != ">") ++close;
        if (close >= toks.size())
          src_.fail(toks[0].pos, "kpp_parse_error", "the equation tag '<' is not closed by '>'");
        tag = close > 1 ? collapse_spaces(std::string_view(src_.text).substr(
                              toks[1].pos, toks[close].pos - toks[1].pos))
                        : "";
        if (tag.empty()) src_.fail(toks[0].pos, "kpp_parse_error", "the equation tag is empty");
        i = close + 1;
      }
      std::size_t eq = toks.size(), colon = toks.size();
      for (std::size_t k = i; k < toks.size(); ++k) {
        if (toks[k].kind != Tok::Punct) continue;
        if (toks[k].text == "=" && eq == toks.size() && colon == toks.size()) eq = k;
        if (toks[k].text == ":" && colon == toks.size()) colon = k;
      }
      const std::string text = statement_text(st);
      if (colon == toks.size())
        src_.fail(st.begin, "kpp_parse_error",
                  "'" + text + "' has no ':' before its rate (KPP: 'A + B = C : rate ;')");
      if (eq == toks.size())
        src_.fail(st.begin, "kpp_parse_error",
                  "'" + text + "' has no '=' between reactants and products");
      json substrates = read_side(toks, i, eq, st.begin, "reactants");
      json products = read_side(toks, eq + 1, colon, st.begin, "products");
      if (substrates.is_null() && products.is_null())
        src_.fail(st.begin, "kpp_parse_error", "the equation has neither reactants nor products");
      if (colon + 1 >= toks.size())
        src_.fail(toks[colon].pos, "kpp_parse_error", "the equation has no rate after ':'");
      json rate = translate_rate(src_, toks, colon + 1, toks.size(), names_);

      const std::size_t number = reactions_.size() + 1;
      std::string id = tag;
      if (id.empty()) {
        id = "R" + std::to_string(number);
        if (reaction_ids_.count(id)) id = "EQ" + std::to_string(number);
      } else if (reaction_ids_.count(id)) {
        src_.fail(toks[0].pos, "kpp_duplicate_tag", "the equation tag <" + tag + "> is used twice");
      }
      reaction_ids_.insert(id);
      const std::size_t name_from = i < toks.size() ? toks[i].pos : st.begin;
      const std::string reaction_text = collapse_spaces(
          std::string_view(src_.text).substr(name_from, toks[colon].pos - name_from));
      const std::string rate_text = collapse_spaces(
          std::string_view(src_.text).substr(toks[colon + 1].pos, st.end - toks[colon + 1].pos));
      reactions_.push_back(json{
          {"id", id},
          {"name", reaction_text},
          {"substrates", std::move(substrates)},
          {"products", std::move(products)},
          {"rate", std::move(rate)},
          {"reference",
           {{"notes", "KPP " + std::filesystem::path(src_.file_of(st.begin)).filename().string() +
                          " " + src_.pointer_of(st.begin) +
                          ": rate " + rate_text}}}});
    }
  }

  void note_other(const Section& s) {
    if (s.name == "EQUATIONS" || s.name == "DEFVAR" || s.name == "DEFRAD" || s.name == "DEFFIX" ||
        s.name == "INITVALUES")
      return;
    if (!noted_directives_.insert(s.name).second) return;
    if (ignored_directives().count(s.name))
      src_.note(s.at, "kpp_directive_ignored",
                "#" + s.name + " steers KPP's code generation; it does not change the mechanism "
                "and was ignored");
    else
      src_.note(s.at, "kpp_unknown_directive",
                "#" + s.name + " is not a KPP directive esi knows; it was ignored");
  }

  json build_document(const std::vector<std::filesystem::path>& files) {
    const std::string name =
        !options_.name.empty() ? options_.name
        : files.empty()        ? std::string("kpp_mechanism")
                               : identifier_from_stem(files.front());
    std::string file_list;
    for (const auto& f : src_.files)
      file_list += (file_list.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();

    json species = json::object();
    for (const SpeciesDecl& sp : species_) {
      if (!std::isfinite(sp.initial * cfactor_))
        src_.fail(sp.at, "kpp_parse_error",
                  "the initial value of '" + sp.name + "' times CFACTOR is not a finite number");
      json s = {{"units", options_.species_units},
                {"default", sp.initial * cfactor_},
                {"description", std::string(sp.fixed ? "KPP fixed species (#DEFFIX), held constant"
                                                     : "KPP variable species (#DEFVAR)") +
                                    ", declared at " +
                                    std::filesystem::path(src_.file_of(sp.at)).filename().string() +
                                    " " + src_.pointer_of(sp.at)}};
      if (sp.fixed) s["constant"] = true;
      if (sp.fixed && !sp.has_initial)
        src_.note(sp.at, "kpp_fixed_species_zero",
                  "the fixed species '" + sp.name + "' has no #INITVALUES entry: it is held at 0");
      species[sp.name] = std::move(s);
    }

    json parameters = json::object();
    if (names_.used_temperature)
      parameters[names_.temperature] = {{"units", "K"},
                                        {"default", options_.temperature},
                                        {"description", "Temperature (KPP's TEMP)"}};
    if (names_.used_air_density && !air_is_species_)
      parameters[names_.air_density] = {
          {"units", "molec/cm^3"},
          {"default", options_.air_density},
          {"description", "Air number density (KPP's M, C_M, CAIR)"}};
    if (names_.used_cfactor)
      parameters[names_.cfactor] = {
          {"default", cfactor_},
          {"description", "KPP's CFACTOR (conversion factor of #INITVALUES; EP2, EP3 and FALL "
                          "multiply by 1e6 CFACTOR)"}};
    for (const auto& [pname, value] : options_.extra_parameters)
      if (names_.used_extra.count(pname))
        parameters[pname] = {{"default", value},
                             {"description", "Given to esi import-kpp with --param (defined by "
                                             "KPP's inline code or driver)"}};

    const std::string summary =
        "Imported by esi import-kpp from the KPP mechanism " + file_list + ": " +
        std::to_string(reactions_.size()) + " reactions, " + std::to_string(species_.size()) +
        " species. Species are number densities in " + options_.species_units +
        " (KPP's units); #INITVALUES were multiplied by CFACTOR = " + json(cfactor_).dump() +
        " as KPP's Initialize does. Fixed species (#DEFFIX) are reservoir species. Rate "
        "constants are KPP's rate expressions with its rate functions expanded inline.";
    json system = {{"reference", {{"notes", summary}}},
                   {"species", std::move(species)},
                   {"parameters", std::move(parameters)},
                   {"reactions", std::move(reactions_)}};
    return json{{"esm", "1.0.0"},
                {"metadata",
                 {{"name", name}, {"description", summary}, {"tags", {"kpp", "imported"}}}},
                {"reaction_systems", {{name, std::move(system)}}}};
  }
};

}  // namespace

ImportResult import_kpp(const std::vector<std::filesystem::path>& files,
                        const ImportOptions& options) {
  if (files.empty())
    throw Error("kpp_no_input", "", "", "no KPP file given (expected MECH.eqn [MECH.spc] [MECH.def])");
  if (!options.name.empty() && !is_identifier(options.name))
    throw Error("kpp_invalid_parameter", "", "",
                "the name '" + options.name + "' is not an identifier (letters, digits and '_')");
  Importer importer(preprocess(files), options);
  return importer.run(files);
}

}  // namespace esi::kpp
