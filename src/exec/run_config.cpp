// Run configurations: the schema check, then the parsed form (run_config.hpp).
#include "esi/exec/run_config.hpp"

#include <filesystem>
#include <string_view>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/esm/schema.hpp"

namespace esi::exec {

// Generated at configure time from schemas/run-config.schema.json (run_config_schema.cpp.in).
extern const char* const kRunConfigSchemaText;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const esm::JsonSchema& compiled_schema() {
  static const esm::JsonSchema schema = esm::JsonSchema::compile(run_config_schema());
  return schema;
}

/// The schema's findings as one error: the first real finding (not an alternative branch's)
/// gives the code and the pointer; up to three more are listed in the message.
void check_schema(const json& config, const std::string& file) {
  const auto findings = compiled_schema().validate(config);
  std::vector<const esm::SchemaFinding*> real;
  for (const auto& f : findings)
    if (!f.alternative) real.push_back(&f);
  if (real.empty() && !findings.empty()) real.push_back(&findings.front());
  if (real.empty()) return;
  const esm::SchemaFinding& first = *real.front();
  std::string code = "run_config_invalid";
  std::string message;
  if (first.keyword == "additionalProperties") {
    code = "run_config_unknown_key";
    const auto open = first.message.find('\'');
    const auto close = first.message.rfind('\'');
    const std::string key = open != std::string::npos && close > open
                                ? first.message.substr(open + 1, close - open - 1)
                                : std::string("?");
    message = "unknown key '" + key + "' (schemas/run-config.schema.json lists the keys a run "
              "configuration may have here)";
  } else {
    message = first.message + " (schema " + first.schema_path + ")";
  }
  for (std::size_t k = 1; k < real.size() && k < 4; ++k)
    message += "; also at '" + real[k]->instance_path + "': " + real[k]->message;
  if (real.size() > 4) message += "; and " + std::to_string(real.size() - 4) + " more";
  throw Error(code, file, first.instance_path, message, Layer::Schema);
}

std::vector<std::string> string_list(const json& v) {
  if (v.is_string()) return {v.get<std::string>()};
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(s.get<std::string>());
  return out;
}

std::string resolve_path(const std::string& folder, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || folder.empty()) return path;
  return (fs::path(folder) / path).lexically_normal().string();
}

class Parser {
 public:
  Parser(const std::string& file, const std::string& folder) : file_(file), folder_(folder) {}

  RunConfig parse(const json& c) {
    RunConfig r;
    r.file = file_;
    r.source = c;
    if (const auto it = c.find("model"); it != c.end()) r.model = resolve_path(folder_, it->get<std::string>());
    if (const auto it = c.find("component"); it != c.end()) r.component = it->get<std::string>();
    const json& time = c.at("time");
    r.start = time.value("start", 0.0);
    r.stop = time.at("stop").get<double>();
    if (!(r.stop > r.start))
      throw Error("invalid_time_span", file_, "/time",
                  "time.stop (" + time.at("stop").dump() + ") must be after time.start (" +
                      json(r.start).dump() + ")");
    if (const auto it = c.find("inputs"); it != c.end()) {
      if (it->is_string()) {
        r.inputs_file = resolve_path(folder_, it->get<std::string>());
        r.inputs = read_json_file(r.inputs_file);
        if (!r.inputs.is_object())
          throw Error("invalid_inputs", r.inputs_file, "",
                      "an inputs file holds one JSON object: variable name -> number or nested array");
      } else {
        r.inputs = *it;
      }
    }
    if (const auto it = c.find("operators"); it != c.end())
      for (const auto& [name, op] : it->items()) {
        OperatorSpec s;
        s.name = name;
        s.pointer = pointer_join("/operators", name);
        if (name == "all")
          throw Error("run_config_invalid", file_, s.pointer,
                      "'all' names the whole right-hand side in a leaf; an operator may not take that name");
        const json& sel = op.at("select");
        if (const auto l = sel.find("locality"); l != sel.end()) s.locality = string_list(*l);
        if (const auto k = sel.find("component"); k != sel.end()) s.component = string_list(*k);
        r.operators.push_back(std::move(s));
      }
    r.schedule = node(c.at("schedule"), "/schedule", r);
    if (const auto it = c.find("step"); it != c.end()) r.macro_dt = it->value("dt", 0.0);
    if (const auto it = c.find("partition"); it != c.end()) {
      r.threads = it->value("threads", 1);
      r.lanes = it->value("lanes", 8);
    }
    if (const auto it = c.find("precision"); it != c.end())
      if (it->value("state", std::string("f64")) != "f64")
        throw Error("unsupported_precision", file_, "/precision/state",
                    "esi runs in double precision (f64) only; single-precision state is not supported yet");
    if (const auto it = c.find("output"); it != c.end()) {
      r.output_every = it->value("every", 0.0);
      if (const auto f = it->find("file"); f != it->end()) r.output_file = resolve_path(folder_, f->get<std::string>());
    }
    if (const auto it = c.find("forcing"); it != c.end())
      for (const auto& [target, f] : it->items()) {
        ForcingSpec s;
        s.target = target;
        s.pointer = pointer_join("/forcing", target);
        if (f.contains("constant")) {
          s.kind = ForcingSpec::Kind::Constant;
          s.value = f.at("constant").get<double>();
        } else if (f.contains("expression")) {
          s.kind = ForcingSpec::Kind::Expression;
          s.expression = f.at("expression");
          s.every = f.value("every", 0.0);
          s.bracket = f.value("bracket", std::string());
        } else {
          s.kind = ForcingSpec::Kind::NetCDF;
          s.file = resolve_path(folder_, f.at("netcdf").get<std::string>());
          s.variable = f.at("variable").get<std::string>();
          s.bracket = f.value("bracket", std::string());
        }
        r.forcing.push_back(std::move(s));
      }
    return r;
  }

 private:
  ScheduleNode node(const json& n, const std::string& ptr, const RunConfig& r) {
    ScheduleNode out;
    out.pointer = ptr;
    auto children = [&](const char* key) {
      const json& list = n.at(key);
      for (std::size_t k = 0; k < list.size(); ++k)
        out.children.push_back(node(list[k], pointer_join(pointer_join(ptr, key), k), r));
    };
    if (n.contains("leaf")) {
      out.kind = ScheduleNode::Kind::Leaf;
      leaf(n, ptr, r, out.leaf);
    } else if (n.contains("sequence")) {
      out.kind = ScheduleNode::Kind::Sequence;
      children("sequence");
    } else if (n.contains("lie")) {
      out.kind = ScheduleNode::Kind::Sequence;  // Lie splitting is a sequence over the macro step
      children("lie");
    } else if (n.contains("strang")) {
      out.kind = ScheduleNode::Kind::Strang;
      children("strang");
    } else if (n.contains("map")) {
      out.kind = ScheduleNode::Kind::Map;
      out.map = n.at("map").get<std::string>();
    } else if (n.contains("subcycle")) {
      out.kind = ScheduleNode::Kind::Subcycle;
      out.substeps = n.at("substeps").get<int>();
      out.children.push_back(node(n.at("subcycle"), pointer_join(ptr, "subcycle"), r));
    } else {
      out.kind = ScheduleNode::Kind::Every;
      out.period = n.at("period").get<double>();
      out.children.push_back(node(n.at("every"), pointer_join(ptr, "every"), r));
    }
    return out;
  }

  void leaf(const json& n, const std::string& ptr, const RunConfig& r, LeafSpec& s) {
    s.op = n.at("leaf").get<std::string>();
    bool known = s.op == "all";
    std::string names;
    for (const OperatorSpec& o : r.operators) {
      known = known || o.name == s.op;
      names += (names.empty() ? "" : ", ") + o.name;
    }
    if (!known)
      throw Error("unknown_operator", file_, pointer_join(ptr, "leaf"),
                  "the leaf names operator '" + s.op + "', which /operators does not declare (" +
                      (names.empty() ? std::string("none are declared") : "declared: " + names) +
                      "; \"all\" is the whole right-hand side)");
    if (const auto it = n.find("alg"); it != n.end() && it->get<std::string>() != "auto") {
      const auto id = method::method_from_name(it->get<std::string>());
      if (!id || !method::method_available(*id))
        throw Error("unknown_method", file_, pointer_join(ptr, "alg"),
                    "'" + it->get<std::string>() + "' is not a method esi offers here (esi simulate "
                    "--help lists them; names are case-sensitive, e.g. SSPRK43, Rodas3)");
      s.method = *id;
    }
    if (const auto it = n.find("control"); it != n.end()) {
      const json& c = *it;
      if (c.contains("reltol")) s.rtol = c.at("reltol").get<double>();
      if (c.contains("abstol")) s.atol = c.at("abstol").get<double>();
      s.dt0 = c.value("dt0", 0.0);
      s.dt_max = c.value("dtmax", 0.0);
      s.max_steps = c.value("maxiters", 0L);
      const std::string k = c.value("controller", std::string("default"));
      s.controller = k == "PI"    ? method::ControllerKind::PI
                     : k == "I"   ? method::ControllerKind::I
                     : k == "PID" ? method::ControllerKind::PID
                                  : method::ControllerKind::Default;
      s.dt_scope = c.value("dt_scope", std::string());
    }
    if (const auto it = n.find("domain"); it != n.end()) {
      if (it->value("nonnegative", std::string("none")) == "all")
        s.nonnegative = it->value("on_violation", std::string("reject")) == "clip" ? method::DomainPolicy::Clip
                                                                                   : method::DomainPolicy::Reject;
    }
  }

  std::string file_, folder_;
};

}  // namespace

const nlohmann::json& run_config_schema() {
  static const json schema = parse_json_text(kRunConfigSchemaText, "schemas/run-config.schema.json");
  return schema;
}

RunConfig parse_run_config(const nlohmann::json& config, const std::string& file, const std::string& folder) {
  check_schema(config, file);
  return Parser(file, folder).parse(config);
}

RunConfig read_run_config(const std::string& path) {
  json config;
  try {
    config = read_json_file(path);
  } catch (const Error& e) {
    Diagnostic d = e.diagnostic();
    if (d.file.empty()) d.file = path;
    throw Error(std::move(d));
  }
  return parse_run_config(config, path, fs::path(path).parent_path().string());
}

}  // namespace esi::exec
