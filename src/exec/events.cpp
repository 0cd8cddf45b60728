// Reading events (spec §5.2-5.3, coupling events §5.6) and parameter update blocks (§5.4) into
// the run's expression pool: authored names are qualified by the owning component, `Pre(x)` is
// read as x (every affect is evaluated on the pre-event state), and each condition and affect
// right-hand side becomes one row of the condition or affect evaluator.
#include <set>
#include <unordered_map>

#include "esi/core/error.hpp"
#include "esi/core/json.hpp"
#include "esi/expr/parse.hpp"
#include "exec/model.hpp"

namespace esi::exec::detail {
namespace {

using nlohmann::json;

/// Pre(x) -> x, recursively: affects and conditions are evaluated on the pre-event state.
json strip_pre(const json& e) {
  if (e.is_array()) {
    json out = json::array();
    for (const json& x : e) out.push_back(strip_pre(x));
    return out;
  }
  if (!e.is_object()) return e;
  if (e.value("op", std::string()) == "Pre" && e.contains("args") && e["args"].is_array() &&
      e["args"].size() == 1)
    return strip_pre(e["args"][0]);
  json out = json::object();
  for (auto it = e.begin(); it != e.end(); ++it) out[it.key()] = strip_pre(it.value());
  return out;
}

/// Where an event or update was authored: its component scope, file and JSON pointer.
struct Site {
  std::string scope;  ///< component path; "" for coupling-level events (scoped names only)
  std::string file;
  std::string pointer;
  std::string name;  ///< for messages
};

class EventReader {
 public:
  EventReader(esm::System& sys, const esm::ResolvedDocument* doc) : sys_(sys), doc_(doc) {
    // The cells of per-region state arrays are found by position (known()), not listed.
    sys.states.for_each_stored(
        [&](std::size_t, const esm::FlatVariable& v) { known_.insert(v.name); });
    esm::for_each_variable([&](const esm::FlatVariable& v) { known_.insert(v.name); }, sys.observed,
                           sys.algebraic, sys.parameters);
  }

  EventSet read() {
    for (const json& e : sys_.events) read_event(e);
    if (doc_ != nullptr)
      for (const auto& p : sys_.parameters) read_updates(p);
    else
      for (const auto& p : sys_.parameters)
        if (p.cadence == esm::Cadence::Discrete || p.cadence == esm::Cadence::Brownian)
          fail({"", p.file, p.pointer, p.name},
               "parameter '" + p.name +
                   "' has an update block, but the run was given no document "
                   "to read it from");
    return std::move(out_);
  }

 private:
  [[noreturn]] static void fail(const Site& site, const std::string& message) {
    throw Error("unsupported_event", site.file, site.pointer, message);
  }

  std::string file_of_scope(const std::string& scope) const {
    const std::string prefix = scope + ".";
    const auto in_scope = [&](const std::string& name) {
      return name.compare(0, prefix.size(), prefix) == 0;
    };
    std::size_t first = sys_.states.size();  // the first state in the scope
    const std::string* found = nullptr;
    sys_.states.for_each_stored([&](std::size_t i, const esm::FlatVariable& v) {
      if (i < first && in_scope(v.name)) first = i, found = &v.file;
    });
    sys_.states.for_each_lazy_run([&](std::size_t at, std::size_t, const esm::FlatVariable& cell) {
      if (at < first && in_scope(cell.array)) first = at, found = &cell.file;  // "A.x[..]" is in A
    });
    if (!found)
      esm::for_each_variable(
          [&](const esm::FlatVariable& v) {
            if (!found && in_scope(v.name)) found = &v.file;
          },
          sys_.parameters, sys_.observed);
    if (found) return *found;
    return doc_ != nullptr ? doc_->file : std::string();
  }

  std::string resolve(const std::string& name, const Site& site) const {
    if (name == "t") return name;
    if (!site.scope.empty() && known(site.scope + "." + name)) return site.scope + "." + name;
    if (known(name)) return name;
    throw Error(
        "undefined_variable", site.file, site.pointer,
        "'" + name + "' in " + site.name + " is not a variable of " +
            (site.scope.empty() ? std::string("the system") : "component '" + site.scope + "'"));
  }

  expr::NodeId qualify(expr::NodeId id, const Site& site,
                       std::unordered_map<expr::NodeId, expr::NodeId>& memo) {
    if (auto m = memo.find(id); m != memo.end()) return m->second;
    const expr::Node n = sys_.pool.node(id);
    expr::NodeId result = id;
    if (n.op == expr::Op::Symbol) {
      result = sys_.pool.symbol(resolve(std::string(sys_.pool.str(n.name)), site));
    } else if (n.child_count > 0) {
      std::vector<expr::NodeId> kids(sys_.pool.children(id).begin(), sys_.pool.children(id).end());
      bool changed = false;
      for (auto& k : kids) {
        const expr::NodeId q = qualify(k, site, memo);
        changed |= q != k;
        k = q;
      }
      if (changed) result = sys_.pool.make(n.op, kids, n.arg_count, n.name, n.attrs);
    }
    memo[id] = result;
    return result;
  }

  expr::NodeId expression(const json& e, const Site& site, const std::string& pointer) {
    const expr::NodeId raw = expr::parse(sys_.pool, strip_pre(e), site.file, pointer);
    std::unordered_map<expr::NodeId, expr::NodeId> memo;
    return qualify(raw, {site.scope, site.file, pointer, site.name}, memo);
  }

  int condition_row(const json& e, const Site& site, const std::string& pointer) {
    out_.conditions.push_back(expression(e, site, pointer));
    return static_cast<int>(out_.conditions.size() - 1);
  }

  Assignment assignment(const std::string& lhs, const json& rhs, const Site& site,
                        const std::string& pointer) {
    Assignment a;
    const std::string name = resolve(lhs, {site.scope, site.file, pointer, site.name});
    if (const int s = sys_.state_index(name); s >= 0)
      a.index = s;
    else if (const int p = sys_.parameter_index(name); p >= 0) {
      a.parameter = true;
      a.index = p;
    } else {
      fail({site.scope, site.file, pointer, site.name},
           site.name + " writes '" + name +
               "', which is defined by an equation (only states and "
               "parameters can be changed by an event)");
    }
    out_.affects.push_back(expression(rhs, site, pointer_join(pointer, "rhs")));
    a.row = static_cast<int>(out_.affects.size() - 1);
    return a;
  }

  std::vector<Assignment> affect_list(const json& list, const Site& site,
                                      const std::string& pointer) {
    std::vector<Assignment> out;
    if (list.is_null()) return out;
    if (!list.is_array())
      fail({site.scope, site.file, pointer, site.name}, "affects must be an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string p = pointer_join(pointer, i);
      const json& eq = list[i];
      if (!eq.is_object() || !eq.contains("lhs") || !eq.contains("rhs") || !eq["lhs"].is_string())
        fail({site.scope, site.file, p, site.name},
             "an affect needs a variable name as 'lhs' and an expression as 'rhs'");
      out.push_back(assignment(eq["lhs"].get<std::string>(), eq["rhs"], site, p));
    }
    return out;
  }

  void read_crossing(const json& e, const Site& site) {
    Event ev;
    ev.name = site.name;
    ev.trigger = Trigger::Crossing;
    const json conds = e.value("conditions", json::array());
    if (!conds.is_array() || conds.empty())
      fail(site, site.name + " has no 'conditions' to locate a crossing of");
    for (std::size_t i = 0; i < conds.size(); ++i)
      ev.condition_rows.push_back(
          condition_row(conds[i], site, pointer_join(pointer_join(site.pointer, "conditions"), i)));
    ev.affects =
        affect_list(e.value("affects", json::array()), site, pointer_join(site.pointer, "affects"));
    const json neg = e.value("affect_neg", json());
    ev.affects_down = neg.is_null()
                          ? ev.affects
                          : affect_list(neg, site, pointer_join(site.pointer, "affect_neg"));
    out_.events.push_back(std::move(ev));
  }

  void read_trigger(Event& ev, const json& trigger, const Site& site) {
    const std::string ptr = pointer_join(site.pointer, "trigger");
    const std::string type = trigger.value("type", std::string());
    if (type == "condition") {
      ev.trigger = Trigger::Condition;
      ev.condition_rows.push_back(condition_row(trigger.value("expression", json()), site,
                                                pointer_join(ptr, "expression")));
    } else if (type == "periodic") {
      ev.trigger = Trigger::Scheduled;
      ev.interval = trigger.value("interval", 0.0);
      ev.offset = trigger.value("initial_offset", 0.0);
      if (!(ev.interval > 0))
        fail({site.scope, site.file, ptr, site.name},
             site.name + ": a periodic trigger needs an interval > 0");
    } else if (type == "preset_times") {
      ev.trigger = Trigger::Scheduled;
      for (const json& t : trigger.value("times", json::array()))
        if (t.is_number()) ev.times.push_back(t.get<double>());
    } else {
      fail({site.scope, site.file, ptr, site.name},
           site.name + ": trigger type '" + type + "' is not supported");
    }
  }

  void read_discrete(const json& e, const Site& site) {
    if (e.contains("functional_affect"))
      fail(site,
           site.name + " has a functional_affect (a registered handler), which is not supported");
    Event ev;
    ev.name = site.name;
    if (e.contains("trigger")) {
      read_trigger(ev, e["trigger"], site);
    } else if (e.contains("conditions") && e["conditions"].is_array() &&
               e["conditions"].size() == 1) {
      ev.trigger = Trigger::Condition;  // coupling-level discrete event with a boolean condition
      ev.condition_rows.push_back(
          condition_row(e["conditions"][0], site, pointer_join(site.pointer, "conditions/0")));
    } else {
      fail(site, site.name + " has no trigger");
    }
    ev.affects =
        affect_list(e.value("affects", json::array()), site, pointer_join(site.pointer, "affects"));
    out_.events.push_back(std::move(ev));
  }

  void read_event(const json& e) {
    Site site;
    site.scope = e.value("$component", std::string());
    site.file = file_of_scope(site.scope);
    site.pointer = e.value("$pointer", std::string());
    site.name = "event '" + e.value("name", site.pointer) + "'";
    std::string kind = e.value("$kind", std::string());
    if (kind.empty()) {  // a coupling entry
      if (e.value("type", std::string()) != "event")
        fail(site, "coupling entry of type '" + e.value("type", std::string()) +
                       "' (registered callbacks) is not supported");
      kind = e.value("event_type", std::string()) == "continuous" ? "continuous_events"
                                                                  : "discrete_events";
    }
    if (kind == "continuous_events")
      read_crossing(e, site);
    else
      read_discrete(e, site);
    out_.events.back().authored_name = e.value("name", std::string());
    out_.events.back().component = site.scope;
  }

  void read_update_rule(const esm::FlatVariable& p, const json& rule, const Site& site) {
    const std::string kind = rule.value("kind", std::string());
    if (kind == "data") {
      out_.held_data.insert(p.array.empty() ? p.name : p.array);
      return;
    }
    if (kind == "wiener" || kind == "remesh")
      fail(site, "parameter '" + p.name + "' has an update of kind '" + kind +
                     "', which is not supported");
    if (rule.contains("from") || rule.contains("handler") || !rule.contains("expression"))
      fail(site, "parameter '" + p.name +
                     "' is updated from a data source or a registered handler, "
                     "which is not supported");
    const std::string local = p.name.substr(p.name.rfind('.') + 1);
    const json affect = json::array({{{"lhs", local}, {"rhs", rule["expression"]}}});
    Event ev;
    ev.name = site.name;
    if (kind == "schedule") {
      ev.trigger = Trigger::Scheduled;
      for (const json& t : rule.value("times", json::array()))
        if (t.is_number()) ev.times.push_back(t.get<double>());
      ev.interval = rule.value("interval", 0.0);
      ev.offset = rule.value("initial_offset", 0.0);
    } else if (kind == "condition" || kind == "crossing") {
      ev.trigger = kind == "condition" ? Trigger::Condition : Trigger::Crossing;
      ev.condition_rows.push_back(
          condition_row(rule.value("when", json()), site, pointer_join(site.pointer, "when")));
    } else {
      fail(site, "parameter '" + p.name + "' has an update of unknown kind '" + kind + "'");
    }
    ev.affects = affect_list(affect, site, site.pointer);
    const std::string direction = rule.value("direction", std::string("any"));
    if (kind == "crossing") {
      if (direction == "up")
        ev.affects_down.clear();
      else
        ev.affects_down = ev.affects;
      if (direction == "down") ev.affects.clear();
    }
    out_.events.push_back(std::move(ev));
  }

  void read_updates(const esm::FlatVariable& p) {
    const json* decl = json_at(doc_->doc, p.pointer);
    if (decl == nullptr || !decl->is_object() || !decl->contains("update")) return;
    const json& update = (*decl)["update"];
    const std::string scope = p.name.substr(0, p.name.rfind('.'));
    const std::string base = pointer_join(p.pointer, "update");
    if (update.is_array()) {
      for (std::size_t i = 0; i < update.size(); ++i)
        read_update_rule(p, update[i],
                         {scope, p.file, pointer_join(base, i), "update of '" + p.name + "'"});
    } else {
      read_update_rule(p, update, {scope, p.file, base, "update of '" + p.name + "'"});
    }
  }

  esm::System& sys_;
  const esm::ResolvedDocument* doc_;
  bool known(const std::string& name) const {
    return known_.count(name) ||
           (!name.empty() && name.back() == ']' && sys_.states.find(name) >= 0);
  }
  std::set<std::string> known_;  ///< every name but the cells of lazy state runs
  EventSet out_;
};

}  // namespace

EventSet parse_events(esm::System& system, const esm::ResolvedDocument* document) {
  return EventReader(system, document).read();
}

}  // namespace esi::exec::detail
