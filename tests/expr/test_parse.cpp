#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "esi/core/error.hpp"
#include "esi/expr/parse.hpp"

using esi::expr::Pool;
using nlohmann::json;

TEST(ExprParse, IdenticalSubtreesShareOneNode) {
  Pool pool;
  const json a = json::parse(R"({"op":"*","args":["k",{"op":"+","args":["x",1]},{"op":"+","args":["x",1]}]})");
  const auto id = esi::expr::parse(pool, a, "t.esm", "/rhs");
  const auto args = pool.args(id);
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[1], args[2]);
  const auto again = esi::expr::parse(pool, a, "t.esm", "/rhs");
  EXPECT_EQ(id, again);
}

TEST(ExprParse, RoundTripsEveryFieldKind) {
  Pool pool;
  const char* texts[] = {
      R"({"op":"D","args":["O3"],"wrt":"t"})",
      R"({"op":"fn","name":"interp.linear","args":[{"op":"const","args":[],"value":[1,2,3]},{"op":"const","args":[],"value":[0.5,1.5,2.5]},"x"]})",
      R"({"op":"aggregate","args":[],"output_idx":["i"],"ranges":{"i":{"from":"lon"}},"expr":{"op":"index","args":["u","i"]},"filter":{"op":"<","args":["i",3]}})",
      R"({"op":"makearray","args":[],"regions":[[[1,2]],[[3,3]]],"values":[0,"x"]})",
      R"({"op":"apply_expression_template","args":[],"name":"arrh","bindings":{"A":1.5e-12,"B":{"op":"neg","args":[300]}}})",
      R"({"op":"godunov_hamiltonian","args":["u"],"attrs":{"order":2}})",
      R"({"op":"^","args":["x",2.5]})",
  };
  for (const char* t : texts) {
    const json j = json::parse(t);
    const auto id = esi::expr::parse(pool, j, "t.esm", "");
    EXPECT_EQ(esi::expr::to_json(pool, id), j) << t;
  }
}

TEST(ExprParse, MalformedNodesAreLocatedErrors) {
  Pool pool;
  const json bad = json::parse(R"({"op":"+","args":["x",{"op":"*","args":[true]}]})");
  try {
    esi::expr::parse(pool, bad, "m.esm", "/models/M/equations/0/rhs");
    FAIL() << "expected an error";
  } catch (const esi::Error& e) {
    EXPECT_EQ(e.code(), "invalid_expression");
    EXPECT_EQ(e.diagnostic().pointer, "/models/M/equations/0/rhs/args/1/args/0");
    EXPECT_EQ(e.diagnostic().file, "m.esm");
  }
}

TEST(ExprParse, IntegerLiteralsStayIntegers) {
  Pool pool;
  const auto i = esi::expr::parse(pool, json(2), "", "");
  const auto f = esi::expr::parse(pool, json(2.0), "", "");
  EXPECT_NE(i, f);
  EXPECT_TRUE(esi::expr::to_json(pool, i).is_number_integer());
  EXPECT_EQ(esi::expr::to_infix(pool, i), "2");
}
