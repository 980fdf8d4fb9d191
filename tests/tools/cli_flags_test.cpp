// The flag helpers shared by the subcommands: "did you mean" for unknown flags.
#include <gtest/gtest.h>

#include "tools/cli_flags.h"

namespace qdqrt::tools {
namespace {

TEST(SuggestFlag, ClosestKnownFlagOrNone) {
  std::vector<std::string> known = {"--onnx", "--loadEngine", "--fp16", "--fp32", "--iterations", "--exportTimes"};
  EXPECT_EQ(suggest_flag("--fp61", known), "--fp16");
  EXPECT_EQ(suggest_flag("--loadengine", known), "--loadEngine");  // case only
  EXPECT_EQ(suggest_flag("--iteration", known), "--iterations");
  EXPECT_EQ(suggest_flag("--exportTime=t.json", known), "--exportTimes");  // the value is not compared
  EXPECT_EQ(suggest_flag("--completelyDifferent", known), "");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("ABC", "abc"), 0u);
}

TEST(SuggestFlag, DescribesEveryUnknownArgument) {
  CLI::App app{"test"};
  std::string onnx;
  int iterations = 0;
  app.add_option("--onnx", onnx);
  app.add_option("--iterations", iterations);
  EXPECT_EQ(describe_unknown_arguments({"--onx=m.onnx", "--itrations", "stray", "--zzzzzzzzzz"}, app),
            "unknown flag --onx (did you mean --onnx?); unknown flag --itrations (did you mean --iterations?); "
            "unexpected argument 'stray'; unknown flag --zzzzzzzzzz");
}

TEST(NotApplicableFlags, EachHasAReasonAndIsATrtexecSpelling) {
  for (const ForeignFlag& flag : trtexec_flags_without_cpu_meaning()) {
    EXPECT_EQ(std::string(flag.name).rfind("--", 0), 0u) << flag.name;
    EXPECT_GE(std::string(flag.reason).size(), 6u) << flag.name;
  }
}

}  // namespace
}  // namespace qdqrt::tools
