// Running the inline tests of one document (spec §6.6): find every component with a `tests`
// block, flatten it alone, apply each test's overrides, simulate over its span and compare the
// samples at the assertion times.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <unordered_set>
#include <new>
#include <limits>
#include <optional>
#include <vector>

#include "check/inject_imports.hpp"
#include "esi/check/check.hpp"
#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/flatten.hpp"
#include "esi/esm/local_names.hpp"
#include "esi/exec/simulate.hpp"

namespace esi::check {
namespace {

using esm::resolve_local;
using nlohmann::json;

/// A tolerance level: each bound may be absent (then the next level's applies).
struct Tolerance {
  std::optional<double> abs, rel;
};

Tolerance tolerance_of(const json& owner) {
  Tolerance t;
  if (auto it = owner.find("tolerance"); it != owner.end() && it->is_object()) {
    if (auto a = it->find("abs"); a != it->end() && a->is_number()) t.abs = a->get<double>();
    if (auto r = it->find("rel"); r != it->end() && r->is_number()) t.rel = r->get<double>();
  }
  return t;
}

/// Per-field precedence: assertion > test > component > default (rel 1e-6, no abs), §6.6.4.
Tolerance resolve_tolerance(const Tolerance& assertion, const Tolerance& test, const Tolerance& component) {
  Tolerance t;
  t.abs = assertion.abs ? assertion.abs : test.abs ? test.abs : component.abs;
  t.rel = assertion.rel ? assertion.rel : test.rel ? test.rel : component.rel ? component.rel : 1e-6;
  return t;
}

bool within(double actual, double expected, const Tolerance& tol) {
  const double diff = std::abs(actual - expected);
  if (std::isnan(diff)) return false;
  if (tol.abs && diff <= *tol.abs) return true;
  return tol.rel && diff / std::max(std::abs(expected), 1e-300) <= *tol.rel;
}

void apply_overrides(esm::System& sys, const std::string& scope, const json& test,
                     const std::string& file, const std::string& pointer) {
  for (const char* field : {"parameter_overrides", "initial_conditions"}) {
    const json block = test.value(field, json::object());
    if (!block.is_object()) continue;
    for (auto it = block.begin(); it != block.end(); ++it) {
      const std::string ptr = pointer_join(pointer_join(pointer, field), it.key());
      if (!it->is_number())
        throw Error("invalid_override", file, ptr, "override '" + it.key() + "' must be a number");
      const std::string name = resolve_local(sys, scope, it.key(), file, ptr);
      // Lenient about the block a key sits in (bindings merge both maps into one): a
      // parameter in initial_conditions is overridden, a state in parameter_overrides gets
      // its initial value; an unknown defined by an equation follows from the states.
      const int p = sys.parameter_index(name), s = sys.state_index(name);
      if (p >= 0) {
        sys.parameters[p].default_value = it->get<double>();
        sys.parameters[p].initial = expr::kNoNode;
      } else if (s >= 0) {
        auto& v = sys.states.mutable_entry(static_cast<std::size_t>(s));
        v.default_value = it->get<double>();
        v.initial = expr::kNoNode;
      } else if (sys.observed_index(name) < 0) {
        throw Error("unknown_override", file, ptr,
                    "'" + it.key() + "' resolves to '" + name + "', which is neither a state nor a "
                    "parameter of the system");
      }
    }
  }
}

struct TestContext {
  const esm::ResolvedDocument& doc;
  const esm::System& system;
  std::string component;  ///< dotted path
  std::string file;       ///< file of the component's definition
  Tolerance component_tolerance;
  const CheckOptions& options;
};

/// A failure that is not an esi::Error, said without the library's own text (which names
/// its internals, not the document).
Diagnostic describe_exception(const std::exception& e, const std::string& file, const std::string& pointer) {
  if (dynamic_cast<const nlohmann::json::exception*>(&e) != nullptr)
    return Diagnostic{"invalid_test", file, pointer,
                      "this part of the document does not have the shape the test runner reads "
                      "(run 'esi validate' on the file for the details)"};
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr)
    return Diagnostic{"out_of_memory", file, pointer, "ran out of memory"};
  return Diagnostic{"internal_error", file, pointer,
                    std::string("unexpected failure inside esi (please report it): ") + e.what()};
}

/// A test that asserts nothing would pass vacuously: refuse it, and malformed entries, with
/// the pointer of the offending node.
void check_test_shape(const json& test, const std::string& file, const std::string& pointer) {
  if (!test.is_object()) throw Error("invalid_test", file, pointer, "a test must be an object");
  const auto assertions = test.find("assertions");
  if (assertions == test.end() || !assertions->is_array() || assertions->empty())
    throw Error("test_without_assertions", file, pointer,
                "this test has no assertions, so it would check nothing; add at least one");
  for (std::size_t i = 0; i < assertions->size(); ++i) {
    const json& a = (*assertions)[i];
    const std::string ptr = pointer_join(pointer_join(pointer, "assertions"), i);
    if (!a.is_object()) throw Error("invalid_test", file, ptr, "an assertion must be an object");
    if (!a.contains("variable") || !a["variable"].is_string())
      throw Error("invalid_test", file, pointer_join(ptr, "variable"), "an assertion needs a variable name");
    // PDE assertions (coords, reduce) may compare with a reference instead; they are refused
    // as unsupported further on.
    const bool pointwise = !a.contains("coords") && !a.contains("reduce");
    for (const char* field : {"time", "expected"})
      if ((a.contains(field) || field == std::string("time") || pointwise) &&
          !(a.contains(field) && a[field].is_number()))
        throw Error("invalid_test", file, pointer_join(ptr, field),
                    std::string("an assertion needs a numeric '") + field + "'");
  }
  if (auto span = test.find("time_span"); span != test.end())
    for (const char* field : {"start", "end"})
      if (!span->is_object() || (span->contains(field) && !(*span)[field].is_number()))
        throw Error("invalid_test", file, pointer_join(pointer_join(pointer, "time_span"), field),
                    "time_span needs numeric start and end");
}

/// The array an assertion names (flat name, or local to the component), or nullptr.
const esm::System::Array* asserted_array(const esm::System& sys, const std::string& scope,
                                         const std::string& key) {
  for (const auto& a : sys.arrays)
    if (a.name == scope + "." + key || a.name == key) return &a;
  return nullptr;
}

/// Every cell of `a`, first index fastest (the order cells are stored in).
std::vector<std::vector<std::int64_t>> cells_of(const esm::System::Array& a) {
  std::vector<std::vector<std::int64_t>> out;
  std::int64_t n = 1;
  for (auto e : a.extents) n *= e;
  std::vector<std::int64_t> c(a.extents.size(), 1);
  for (std::int64_t k = 0; k < n; ++k) {
    out.push_back(c);
    for (std::size_t d = 0; d < c.size() && ++c[d] > a.extents[d]; ++d) c[d] = 1;
  }
  return out;
}

/// How one §6.6.5 assertion reads a shaped variable: the cell columns, and for error norms the
/// reference (an inline expression flattened as an extra array, or a snapshot file).
struct PdeAssertion {
  const esm::System::Array* array = nullptr;
  std::string reduce;                 ///< "" for `coords`
  std::vector<std::string> cells;     ///< flat cell names read
  std::string reference_array;        ///< inline reference: the extra array's flat name
  std::vector<double> reference_file; ///< from_file reference, cell order
};

std::vector<double> read_snapshot(const json& ref, const esm::System::Array& a, const std::string& doc_file,
                                  const std::string& file, const std::string& ptr) {
  const std::string rel = ref.value("path", std::string());
  if (ref.value("format", std::string("json")) != "json")
    throw Error("unsupported_test_feature", file, pointer_join(ptr, "format"),
                "reference snapshots are read in the 'json' format only (§6.6.5)");
  const std::filesystem::path path = std::filesystem::path(doc_file).parent_path() / rel;
  const json data = read_json_file(path);
  std::vector<double> out;
  for (const auto& cell : cells_of(a)) {
    const json* v = &data;
    for (std::size_t d = 0; d < cell.size(); ++d) {  // row-major nested: first axis outermost
      if (!v->is_array() || v->size() != static_cast<std::size_t>(a.extents[d]))
        throw Error("reference_shape_mismatch", file, pointer_join(ptr, "path"),
                    "the snapshot '" + rel + "' does not have the shape of '" + a.name + "' " +
                        json(a.extents).dump());
      v = &(*v)[static_cast<std::size_t>(cell[d] - 1)];
    }
    if (!v->is_number())
      throw Error("reference_shape_mismatch", file, pointer_join(ptr, "path"),
                  "the snapshot '" + rel + "' holds a non-number where '" + a.name + "' has a cell");
    out.push_back(v->get<double>());
  }
  return out;
}

/// The value a §6.6.5 assertion compares with `expected`.
double pde_value(const PdeAssertion& p, const std::vector<double>& u, const std::vector<double>& ref) {
  const std::string& r = p.reduce;
  if (r.empty()) return u[0];
  double acc = r == "max" ? -INFINITY : r == "min" ? INFINITY : 0.0;
  double norm = 0.0;
  for (std::size_t k = 0; k < u.size(); ++k) {
    if (r == "integral" || r == "mean") acc += u[k];
    else if (r == "max") acc = std::max(acc, u[k]);
    else if (r == "min") acc = std::min(acc, u[k]);
    else if (r == "Linf_error") acc = std::max(acc, std::abs(u[k] - ref[k]));
    else if (r == "L2_error") {
      acc += (u[k] - ref[k]) * (u[k] - ref[k]);
      norm += ref[k] * ref[k];
    }
    if (std::isnan(u[k])) return NAN;
  }
  if (r == "integral" || r == "mean") return acc / static_cast<double>(u.size());  // unit measure per axis
  if (r == "L2_error") return std::sqrt(acc) / std::sqrt(norm);
  return acc;
}

/// The cell an assertion's `coords` pick in `array`; an axis of one cell may go unnamed.
std::vector<std::int64_t> coords_cell(const esm::System::Array& array, const json& coords, const std::string& var,
                                      const std::string& file, const std::string& ptr) {
  std::vector<std::int64_t> cell;
  for (std::size_t d = 0; d < array.axes.size(); ++d) {
    const std::string& axis = array.axes[d];
    if (!coords.is_object() || !coords.contains(axis) || !coords[axis].is_number()) {
      if (array.extents[d] == 1) {
        cell.push_back(1);
        continue;
      }
      throw Error("invalid_test", file, pointer_join(ptr, "coords"),
                  "coords must give a position along '" + axis + "' (the array '" + var +
                      "' has " + std::to_string(array.extents[d]) + " cells along it)");
    }
    // §6.6.5 convention 1: index-space positions, nearest index, ties rounding down.
    const double c = coords[axis].get<double>();
    const std::int64_t idx = static_cast<std::int64_t>(std::ceil(c - 0.5));
    if (idx < 1 || idx > array.extents[d])
      throw Error("invalid_test", file, pointer_join(pointer_join(ptr, "coords"), axis),
                  "position " + coords[axis].dump() + " is outside 1.." +
                      std::to_string(array.extents[d]) + " along '" + axis + "'");
    cell.push_back(idx);
  }
  for (auto it = coords.begin(); coords.is_object() && it != coords.end(); ++it)
    if (std::find(array.axes.begin(), array.axes.end(), it.key()) == array.axes.end())
      throw Error("invalid_test", file, pointer_join(pointer_join(ptr, "coords"), it.key()),
                  "'" + var + "' has no axis '" + it.key() + "'");
  return cell;
}

void run_test(const TestContext& ctx, const json& test, const std::string& pointer, TestResult& out) {
  check_test_shape(test, ctx.file, pointer);
  // §6.6.6: a test may lower its component under a discretization of its own; it runs as its
  // own build of the document with the test's imports added to the component's.
  std::optional<esm::ResolvedDocument> injected;
  if (test.contains("expression_template_imports"))
    injected = detail::inject_template_imports(ctx.doc, ctx.component, test["expression_template_imports"], ctx.file,
                                               pointer_join(pointer, "expression_template_imports"), "test");
  const esm::ResolvedDocument& doc = injected ? *injected : ctx.doc;
  std::optional<esm::System> injected_system;
  if (injected) {
    esm::FlattenOptions fo;
    fo.component = ctx.component;
    fo.inputs = ctx.options.inputs;
    fo.inputs_file = ctx.options.inputs_file;
    injected_system = esm::flatten(*injected, fo);
  }
  const esm::System& base = injected_system ? *injected_system : ctx.system;
  const json assertions_block = test.value("assertions", json::array());
  // Inline references (§6.6.5) are arrays over the asserted variable's cells, defined in the
  // component's scope: they are flattened with it, once per test that has them.
  esm::FlattenOptions with_refs;
  with_refs.component = ctx.component;
  with_refs.inputs = ctx.options.inputs;
  with_refs.inputs_file = ctx.options.inputs_file;
  std::vector<PdeAssertion> pde(assertions_block.is_array() ? assertions_block.size() : 0);
  for (std::size_t i = 0; i < pde.size(); ++i) {
    const json& a = assertions_block[i];
    if (!a.is_object() || (!a.contains("coords") && !a.contains("reduce"))) continue;
    const std::string ptr = pointer_join(pointer_join(pointer, "assertions"), i);
    const std::string var = a.value("variable", std::string());
    PdeAssertion& p = pde[i];
    p.array = asserted_array(base, ctx.component, var);
    if (!p.array)
      throw Error("invalid_test", ctx.file, pointer_join(ptr, "variable"),
                  "'" + var + "' is not a shaped variable of '" + ctx.component +
                      "'; coords and reduce select from arrays (§6.6.5)");
    if (a.contains("coords")) {
      p.cells.push_back(esm::cell_name(p.array->name, coords_cell(*p.array, a["coords"], var, ctx.file, ptr)));
      continue;
    }
    p.reduce = a.value("reduce", std::string());
    static const std::set<std::string> known{"integral", "mean", "max", "min", "L2_error", "Linf_error"};
    if (!known.count(p.reduce))
      throw Error("invalid_test", ctx.file, pointer_join(ptr, "reduce"),
                  "reduce '" + p.reduce + "' is not one of integral, mean, max, min, L2_error, Linf_error");
    for (const auto& cell : cells_of(*p.array)) p.cells.push_back(esm::cell_name(p.array->name, cell));
    if (p.reduce != "L2_error" && p.reduce != "Linf_error") continue;
    if (!a.contains("reference"))
      throw Error("invalid_test", ctx.file, ptr, "a " + p.reduce + " assertion needs a 'reference'");
    const json& ref = a["reference"];
    if (ref.is_object() && ref.value("type", std::string()) == "from_file") {
      p.reference_file = read_snapshot(ref, *p.array, ctx.file, ctx.file, pointer_join(ptr, "reference"));
      continue;
    }
    const std::string local = "__reference_" + std::to_string(i);
    with_refs.extra_arrays.push_back(
        {ctx.component, local, p.array->axes, p.array->extents, ref, ctx.file, pointer_join(ptr, "reference")});
    p.reference_array = ctx.component + "." + local;
  }
  esm::System sys = with_refs.extra_arrays.empty() ? base : esm::flatten(doc, with_refs);
  // A reference is evaluated before the run: it may read parameters, never the unknowns.
  std::unordered_set<std::string> unknowns;
  if (!with_refs.extra_arrays.empty()) {
    for (const auto& v : sys.states) unknowns.insert(v.name);
    for (const auto& v : sys.observed) unknowns.insert(v.name);
  }
  for (std::size_t i = 0; i < sys.observed.size() && !unknowns.empty(); ++i)
    if (sys.observed[i].array.find(".__reference_") != std::string::npos)
      if (const auto name = detail::read_before_run(sys, sys.observed_rhs[i], unknowns))
        throw Error("invalid_test", sys.observed[i].file, sys.observed[i].pointer,
                    "the reference reads '" + *name + "', which is not known before the run "
                    "(a reference may read parameters and index symbols only, §6.6.5)");
  apply_overrides(sys, ctx.component, test, ctx.file, pointer);
  const json span = test.value("time_span", json::object());
  exec::SimulateOptions so;
  so.require_observed_values = false;  // only the asserted variables are read
  so.t0 = span.value("start", 0.0);
  so.t1 = span.value("end", 0.0);
  so.integrator.method = ctx.options.method;
  so.integrator.rtol = ctx.options.rtol;
  so.integrator.atol = ctx.options.atol;
  so.atol_from_scales = true;  // 1e-14 is a ceiling: a state of scale below 1e-8 gets 1e-6 of it
  so.document = &doc;
  so.stop_at_sample_times = true;
  const json assertions = test.value("assertions", json::array());
  if (!assertions.is_array() || assertions.empty())  // §6.6.2: at least one; never a vacuous pass
    throw Error("test_without_assertions", ctx.file,
                test.contains("assertions") ? pointer_join(pointer, "assertions") : pointer,
                "the test has no assertions, so it would pass without checking anything");
  std::vector<std::string> columns;
  for (std::size_t i = 0; i < assertions.size(); ++i) {
    const json& a = assertions[i];
    const std::string ptr = pointer_join(pointer_join(pointer, "assertions"), i);
    so.sample_times.push_back(a.value("time", 0.0));
    if (pde[i].array) {
      columns.push_back("");
      continue;
    }
    columns.push_back(resolve_local(sys, ctx.component, a.value("variable", std::string()), ctx.file,
                                    pointer_join(ptr, "variable")));
  }
  const exec::Trajectory traj = exec::simulate(sys, so);
  // (A run that never stepped, or one in lane pools, leaves the method unresolved.)
  out.solver = std::string(traj.method == method::MethodId::Auto ? "auto" : method::method_info(traj.method).name) +
               ", rtol " + json(so.integrator.rtol).dump() +
               ", atol " + json(so.integrator.atol).dump();
  if (!traj.ok())
    throw Error("solve_failed", ctx.file, pointer, traj.message);  // starts with the code
  const Tolerance test_tol = tolerance_of(test);
  for (std::size_t i = 0; i < assertions.size(); ++i) {
    const json& a = assertions[i];
    AssertionResult r;
    r.variable = a.value("variable", std::string());
    r.time = so.sample_times[i];
    r.expected = a.value("expected", std::numeric_limits<double>::quiet_NaN());
    r.actual = std::numeric_limits<double>::quiet_NaN();
    if (pde[i].array) {
      const PdeAssertion& p = pde[i];
      std::size_t row = traj.times.size();
      for (std::size_t k = 0; k < traj.times.size(); ++k)
        if (traj.times[k] == r.time) row = k;
      auto read = [&](const std::string& name) {
        const int c = traj.column(name);
        if (c < 0 || row == traj.times.size()) return std::numeric_limits<double>::quiet_NaN();
        return traj.at(row, static_cast<std::size_t>(c));
      };
      std::vector<double> u, ref = p.reference_file;
      for (const auto& cell : p.cells) u.push_back(read(cell));
      if (!p.reference_array.empty())
        for (const auto& cell : cells_of(*p.array)) ref.push_back(read(esm::cell_name(p.reference_array, cell)));
      r.actual = pde_value(p, u, ref);
      const Tolerance tol = resolve_tolerance(tolerance_of(a), test_tol, ctx.component_tolerance);
      r.abs_tolerance = tol.abs.value_or(0);
      r.rel_tolerance = tol.rel.value_or(0);
      r.pass = within(r.actual, r.expected, tol);
      out.assertions.push_back(r);
      continue;
    }
    const int col = traj.column(columns[i]);
    if (col < 0)
      throw Error("unknown_variable", ctx.file, pointer_join(pointer_join(pointer_join(pointer, "assertions"), i), "variable"),
                  "'" + r.variable + "' is not a state or observed quantity of the run (parameters cannot be asserted)");
    for (std::size_t k = 0; k < traj.times.size(); ++k)
      if (traj.times[k] == r.time) r.actual = traj.at(k, static_cast<std::size_t>(col));
    const Tolerance tol = resolve_tolerance(tolerance_of(a), test_tol, ctx.component_tolerance);
    r.abs_tolerance = tol.abs.value_or(0);
    r.rel_tolerance = tol.rel.value_or(0);
    r.pass = within(r.actual, r.expected, tol);
    out.assertions.push_back(r);
  }
}

void run_component_tests(const esm::ResolvedDocument& doc, const std::string& path, const json& node,
                         const std::string& pointer, const CheckOptions& options, FileResult& out) {
  const json& tests = node["tests"];
  std::string file = doc.file;
  for (const auto& [ptr, f] : doc.component_files)
    if (pointer.compare(0, ptr.size(), ptr) == 0) file = f;
  std::optional<esm::System> system;
  std::optional<Diagnostic> refused;
  try {
    esm::FlattenOptions fo;
    fo.component = path;
    fo.inputs = options.inputs;
    fo.inputs_file = options.inputs_file;
    system = esm::flatten(doc, fo);
  } catch (const Error& e) {
    refused = e.diagnostic();
  }
  for (std::size_t i = 0; i < tests.size(); ++i) {
    const json& test = tests[i];
    const std::string test_ptr = pointer_join(pointer_join(pointer, "tests"), i);
    TestResult r;
    r.component = path;
    r.id = test.is_object() ? test.value("id", std::to_string(i)) : std::to_string(i);
    r.assertion_count = test.is_object() ? test.value("assertions", json::array()).size() : 0;
    // A test that injects its own discretization (§6.6.6) runs even when the component alone
    // cannot be flattened: that is what such a test is for.
    const bool injects = test.is_object() && test.contains("expression_template_imports");
    if (refused && !injects) {
      r.error = refused;
    } else {
      try {
        static const esm::System kNoSystem;
        run_test({doc, system ? *system : kNoSystem, path, file, tolerance_of(node), options}, test,
                 test_ptr, r);
      } catch (const Error& e) {
        r.error = e.diagnostic();
        r.assertions.clear();
      } catch (const std::exception& e) {
        r.error = describe_exception(e, file, test_ptr);
        r.assertions.clear();
      }
    }
    out.tests.push_back(std::move(r));
  }
}

/// Depth first over models and reaction systems (and their subsystems), document order.
void visit_components(const esm::ResolvedDocument& doc, const json& section, const std::string& prefix,
                      const std::string& pointer, const CheckOptions& options, FileResult& out) {
  if (!section.is_object()) return;
  for (auto it = section.begin(); it != section.end(); ++it) {
    const json& node = it.value();
    if (!node.is_object()) continue;
    const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
    const std::string ptr = pointer_join(pointer, it.key());
    if (auto t = node.find("tests"); t != node.end() && t->is_array() && !t->empty())
      run_component_tests(doc, path, node, ptr, options, out);
    if (auto s = node.find("subsystems"); s != node.end())
      visit_components(doc, *s, path, pointer_join(ptr, "subsystems"), options, out);
  }
}

/// Assertions authored in a document that is refused, so the summary can say how many did not
/// run. Best effort: a file that cannot even be parsed counts none.
std::size_t count_authored_assertions(const std::filesystem::path& file) {
  json doc;
  try {
    doc = read_json_file(file);
  } catch (const Error&) {
    return 0;
  }
  std::size_t n = 0;
  std::vector<const json*> pending;
  for (const char* section : {"models", "reaction_systems"})
    if (auto s = doc.find(section); s != doc.end() && s->is_object())
      for (const json& c : *s) pending.push_back(&c);
  while (!pending.empty()) {
    const json& c = *pending.back();
    pending.pop_back();
    if (!c.is_object()) continue;
    if (auto t = c.find("tests"); t != c.end() && t->is_array())
      for (const json& test : *t)
        if (test.is_object())
          if (auto a = test.find("assertions"); a != test.end() && a->is_array()) n += a->size();
    if (auto s = c.find("subsystems"); s != c.end() && s->is_object())
      for (const json& sub : *s) pending.push_back(&sub);
  }
  return n;
}

}  // namespace

FileResult check_file(const std::filesystem::path& file, const CheckOptions& options) {
  FileResult out;
  out.file = file.string();
  try {
    // The same pipeline as every command: an invalid document runs no test.
    esm::CheckedDocument checked = esm::load_checked(file);
    if (!checked.doc) {
      const std::vector<Diagnostic> findings = checked.report.shown();
      out.error = findings.front();
      if (out.error->file.empty()) out.error->file = out.file;
      if (findings.size() > 1)
        out.error->message += " (and " + std::to_string(findings.size() - 1) +
                              " more; 'esi validate' lists them)";
      out.assertions_not_run = count_authored_assertions(file);
      return out;
    }
    const esm::ResolvedDocument& doc = *checked.doc;
    if (doc.library_only) return out;
    for (const char* section : {"models", "reaction_systems"})
      if (auto s = doc.doc.find(section); s != doc.doc.end())
        visit_components(doc, *s, "", pointer_join("", section), options, out);
  } catch (const Error& e) {
    out.error = e.diagnostic();
    out.tests.clear();
  } catch (const std::exception& e) {
    out.error = describe_exception(e, out.file, "");
    out.tests.clear();
  }
  return out;
}

}  // namespace esi::check
