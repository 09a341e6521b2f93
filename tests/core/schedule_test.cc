#include "core/schedule.h"

#include <gtest/gtest.h>

namespace trident {
namespace {

constexpr ScheduleKind kAllKinds[] = {ScheduleKind::kNaive, ScheduleKind::kGpipe,
                                      ScheduleKind::k1F1B,  ScheduleKind::kInterleaved1F1B,
                                      ScheduleKind::kZbH1,  ScheduleKind::kPipeDream};

std::vector<int> VirtualStagesFor(ScheduleKind kind) {
  if (kind == ScheduleKind::kInterleaved1F1B) return {2, 3};
  return {1};
}

bool Legal(ScheduleKind kind, int pp, int m) {
  if (kind == ScheduleKind::kNaive) return m == 1;
  if (kind == ScheduleKind::kInterleaved1F1B) return m % pp == 0;
  return true;
}

// The lines of a schedule's text form, without the header comment.
std::vector<std::string> Lines(const Schedule& s) {
  std::vector<std::string> lines;
  std::string text = ScheduleToText(s);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

Schedule Generated(ScheduleKind kind, int pp, int v, int m) {
  StatusOr<Schedule> s = GenerateSchedule(kind, pp, v, m);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : Schedule{};
}

// The error of parsing `text` as a 1F1B-like schedule (not split unless `split`).
std::string ParseError(std::string_view text, int pp, int m, bool split = false, int v = 1) {
  StatusOr<Schedule> s = ParseScheduleText(text, "t.sched", ScheduleKind::k1F1B, pp, v, m, split);
  return s.ok() ? "ok" : s.status().message();
}

TEST(Schedule, EveryGeneratorValidatesAndRoundTripsThroughText) {
  int checked = 0;
  for (ScheduleKind kind : kAllKinds) {
    for (int pp : {1, 2, 3, 4, 8}) {
      for (int m : {1, 2, 3, 4, 6, 8, 12, 16}) {
        for (int v : VirtualStagesFor(kind)) {
          StatusOr<Schedule> s = GenerateSchedule(kind, pp, v, m);
          ASSERT_EQ(s.ok(), Legal(kind, pp, m)) << s.status().ToString();
          if (!s.ok()) continue;
          SCOPED_TRACE(s->ToString());
          EXPECT_TRUE(ValidateSchedule(*s).ok()) << ValidateSchedule(*s).ToString();
          size_t per_stage = s->split_backward ? 3 : 2;
          for (const auto& list : s->positions) EXPECT_EQ(list.size(), per_stage * v * m);
          StatusOr<Schedule> parsed =
              ParseScheduleText(ScheduleToText(*s), "x", kind, pp, v, m, s->split_backward);
          ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
          EXPECT_EQ(*parsed, *s);
          ++checked;
        }
      }
    }
  }
  // naive: m = 1 for each pp; gpipe, 1f1b, zb_h1, pipedream: all 5 × 8; interleaved: the
  // 8 + 6 + 3 + 4 + 2 multiples of pp 1, 2, 3, 4, 8, each with v = 2 and 3.
  EXPECT_EQ(checked, 5 + 4 * 40 + 2 * 23);
}

TEST(Schedule, OneFOneBHasWarmupSteadyStateAndCooldown) {
  Schedule s = Generated(ScheduleKind::k1F1B, 2, 1, 3);
  EXPECT_EQ(Lines(s), (std::vector<std::string>{"0F0 0F1 0B0 0F2 0B1 0B2",  //
                                                "1F0 1B0 1F1 1B1 1F2 1B2"}));
  Schedule few = Generated(ScheduleKind::k1F1B, 4, 1, 2);  // warm-up capped at m
  EXPECT_EQ(Lines(few)[0], "0F0 0F1 0B0 0B1");
  EXPECT_EQ(Lines(few)[2], "2F0 2F1 2B0 2B1");
}

TEST(Schedule, GpipeAndNaive) {
  EXPECT_EQ(Lines(Generated(ScheduleKind::kGpipe, 2, 1, 3)),
            (std::vector<std::string>{"0F0 0F1 0F2 0B0 0B1 0B2", "1F0 1F1 1F2 1B0 1B1 1B2"}));
  EXPECT_EQ(Lines(Generated(ScheduleKind::kNaive, 3, 1, 1)),
            (std::vector<std::string>{"0F0 0B0", "1F0 1B0", "2F0 2B0"}));
}

TEST(Schedule, InterleavedFollowsMegatronOrder) {
  // pp 2, v 2, m 4: stages 0, 2 on position 0 and 1, 3 on position 1. Warm-up 2·1 + 2 = 4
  // virtual forwards on position 0, 0 + 2 = 2 on position 1. Groups of pp = 2 micro-batches
  // run through chunk 0, then chunk 1; backwards walk the chunks from the last.
  Schedule s = Generated(ScheduleKind::kInterleaved1F1B, 2, 2, 4);
  EXPECT_EQ(Lines(s), (std::vector<std::string>{
                          "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3",
                          "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3"}));
}

TEST(Schedule, ZbH1DefersWeightGradients) {
  // Position p runs F(x), B(x - (pp-1-p)), W(x - (pp-1)) for x = 0 .. m+pp-2.
  Schedule s = Generated(ScheduleKind::kZbH1, 3, 1, 4);
  EXPECT_TRUE(s.split_backward);
  EXPECT_EQ(Lines(s),
            (std::vector<std::string>{"0F0 0F1 0F2 0B0 0W0 0F3 0B1 0W1 0B2 0W2 0B3 0W3",
                                      "1F0 1F1 1B0 1F2 1B1 1W0 1F3 1B2 1W1 1B3 1W2 1W3",
                                      "2F0 2B0 2F1 2B1 2F2 2B2 2W0 2F3 2B3 2W1 2W2 2W3"}));
}

TEST(Schedule, IllegalGeneratorArgumentsAreExplained) {
  auto error = [](ScheduleKind kind, int pp, int v, int m) {
    StatusOr<Schedule> s = GenerateSchedule(kind, pp, v, m);
    return s.ok() ? "ok" : s.status().message();
  };
  EXPECT_EQ(error(ScheduleKind::kInterleaved1F1B, 4, 2, 6),
            "interleaved_1f1b runs micro-batches in groups of pp, so num_micro_batches must be a "
            "multiple of pp 4, got 6; hint: use 8 micro-batches");
  EXPECT_EQ(error(ScheduleKind::kInterleaved1F1B, 4, 1, 8),
            "interleaved_1f1b needs virtual_stages >= 2, got 1; hint: set virtual_stages to 2 or "
            "more, or use 1f1b for one stage per position");
  EXPECT_EQ(error(ScheduleKind::kNaive, 2, 1, 4),
            "naive model parallelism runs one micro-batch, got 4; hint: use gpipe or 1f1b to "
            "pipeline several micro-batches");
  EXPECT_EQ(error(ScheduleKind::k1F1B, 2, 2, 4),
            "1f1b runs one stage per position, so virtual_stages must be 1, got 2; hint: use "
            "interleaved_1f1b for virtual stages");
  EXPECT_EQ(error(ScheduleKind::kGpipe, 0, 1, 4),
            "gpipe: pp, virtual_stages and num_micro_batches must be >= 1, got 0, 1, 4");
  EXPECT_EQ(error(ScheduleKind::kZbH1, 2, 1, 0),
            "zb_h1: pp, virtual_stages and num_micro_batches must be >= 1, got 2, 1, 0");
}

TEST(Schedule, HandWrittenValidSchedulesParse) {
  EXPECT_EQ(ParseError("# a comment\n0F0 0F1 0B0 0B1   # trailing comment\n\n"
                       "  1F0 1B0\t1F1 1B1\n",
                       2, 2),
            "ok");
  // Any order that respects the dependencies is valid, e.g. backwards in reverse order.
  EXPECT_EQ(ParseError("0F0 0F1 0B1 0B0\n1F0 1F1 1B1 1B0", 2, 2), "ok");
  EXPECT_EQ(ParseError("0F0 0B0 0W0\n1F0 1B0 1W0", 2, 1, /*split=*/true), "ok");
}

TEST(Schedule, SyntaxErrorsNameLineAndToken) {
  EXPECT_EQ(ParseError("0F0 0B0\n\n1F0 1X0", 2, 1),
            "t.sched:3: bad action '1X0': expected {stage}{F|B|W}{micro_batch}, e.g. 1F3");
  EXPECT_EQ(ParseError("0F0 0B0,\n1F0 1B0", 2, 1),
            "t.sched:1: bad action '0B0,': expected {stage}{F|B|W}{micro_batch}, e.g. 1F3");
  EXPECT_EQ(ParseError("0f0 0B0\n1F0 1B0", 2, 1),
            "t.sched:1: bad action '0f0': expected {stage}{F|B|W}{micro_batch}, e.g. 1F3");
  EXPECT_EQ(ParseError("0F0 0B99999999999\n1F0 1B0", 2, 1),
            "t.sched:1: bad action '0B99999999999': expected {stage}{F|B|W}{micro_batch}, e.g. "
            "1F3");
  EXPECT_EQ(ParseError("0F0 0B0\n", 2, 1),
            "t.sched: schedule has 1 position lists but pp is 2; hint: give one list (one text "
            "line) per pipeline position");
}

TEST(Schedule, InvalidSchedulesGiveSpecificErrors) {
  EXPECT_EQ(ParseError("0F0 0F1 0B0\n1F0 1B0 1F1 1B1", 2, 2),
            "t.sched: position 0: 0B1 is missing");
  EXPECT_EQ(ParseError("0F0 0B1 0F1 0B0\n1F0 1B0 1F1 1B1", 2, 2),
            "t.sched: position 0, action 1 (0B1): runs before 0F1 (action 2); a stage runs F, "
            "then B, then W of a micro-batch");
  EXPECT_EQ(ParseError("0F0 0B0 0F1 0B1\n1F1 1B1 1F0 1B0", 2, 2),
            "t.sched: position 0, action 1 (0B0): waits for 1B0, which never runs (deadlock)");
  EXPECT_EQ(ParseError("0F0 0B0 1F0\n1B0", 2, 1),
            "t.sched: position 0, action 2 (1F0): stage 1 runs on position 1, not 0");
  EXPECT_EQ(ParseError("0F0 0B0 0F0\n1F0 1B0", 2, 1),
            "t.sched: position 0, action 2 (0F0): duplicate of action 0");
  EXPECT_EQ(ParseError("0F0 0B0 0W0\n1F0 1B0 1W0", 2, 1),
            "t.sched: position 0, action 2 (0W0): W appears but this schedule does not split "
            "backward");
  EXPECT_EQ(ParseError("0F0 0B0\n1F0 1B0", 2, 1, /*split=*/true),
            "t.sched: position 0: 0W0 is missing");
  EXPECT_EQ(ParseError("0F0 0W0 0B0\n1F0 1B0 1W0", 2, 1, /*split=*/true),
            "t.sched: position 0, action 1 (0W0): runs before 0B0 (action 2); a stage runs F, "
            "then B, then W of a micro-batch");
  EXPECT_EQ(ParseError("0F0 0B0 2F0\n1F0 1B0", 2, 1),
            "t.sched: position 0, action 2 (2F0): stage out of range [0, 2)");
  EXPECT_EQ(ParseError("0F0 0B0 0F1\n1F0 1B0", 2, 1),
            "t.sched: position 0, action 2 (0F1): micro-batch out of range [0, 1)");
}

TEST(Schedule, InterleavedDeadlockIsFound) {
  // Position 1 runs chunk 1 (stage 3) before it has run stage 1's forward.
  Schedule s = Generated(ScheduleKind::kInterleaved1F1B, 2, 2, 2);
  std::swap(s.positions[1][0], s.positions[1][2]);  // 3F0 first: waits for 2F0, then 1F0
  Status status = ValidateSchedule(s);
  EXPECT_EQ(status.message(),
            "position 0, action 2 (2F0): waits for 1F0, which never runs "
            "(deadlock)");
}

TEST(Schedule, PrerequisitesFollowTheDependencyTable) {
  Schedule s = Generated(ScheduleKind::kZbH1, 3, 1, 2);
  Prerequisites f0 = PrerequisitesOf(s, {ActionKind::kForward, 0, 1});
  EXPECT_EQ(f0.count, 0);
  Prerequisites f2 = PrerequisitesOf(s, {ActionKind::kForward, 2, 1});
  ASSERT_EQ(f2.count, 1);
  EXPECT_EQ(f2.actions[0], (Action{ActionKind::kForward, 1, 1}));
  Prerequisites b1 = PrerequisitesOf(s, {ActionKind::kBackward, 1, 0});
  ASSERT_EQ(b1.count, 2);
  EXPECT_EQ(b1.actions[0], (Action{ActionKind::kForward, 1, 0}));
  EXPECT_EQ(b1.actions[1], (Action{ActionKind::kBackward, 2, 0}));
  EXPECT_EQ(PrerequisitesOf(s, {ActionKind::kBackward, 2, 0}).count, 1);
  Prerequisites w = PrerequisitesOf(s, {ActionKind::kWeight, 2, 1});
  ASSERT_EQ(w.count, 1);
  EXPECT_EQ(w.actions[0], (Action{ActionKind::kBackward, 2, 1}));
}

TEST(Schedule, PipeDreamUnrollsWithoutFlush) {
  // Steps back to back: the 1F1B order over the whole stream of micro-batches.
  for (int pp : {1, 2, 4}) {
    for (int m : {1, 2, 4, 8}) {
      Schedule one = Generated(ScheduleKind::kPipeDream, pp, 1, m);
      EXPECT_FALSE(one.Flushes());
      StatusOr<Schedule> three = UnrollSteps(one, 3);
      ASSERT_TRUE(three.ok()) << three.status().ToString();
      EXPECT_EQ(*three, Generated(ScheduleKind::kPipeDream, pp, 1, 3 * m));
      EXPECT_TRUE(ValidateSchedule(*three).ok());
    }
  }
}

TEST(Schedule, FlushingSchedulesUnrollByConcatenation) {
  Schedule one = Generated(ScheduleKind::k1F1B, 2, 1, 2);
  EXPECT_TRUE(one.Flushes());
  StatusOr<Schedule> two = UnrollSteps(one, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->num_micro_batches, 4);
  EXPECT_EQ(Lines(*two), (std::vector<std::string>{"0F0 0F1 0B0 0B1 0F2 0F3 0B2 0B3",
                                                   "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3"}));
  EXPECT_TRUE(ValidateSchedule(*two).ok());
  EXPECT_EQ(UnrollSteps(one, 0).status().message(), "steps must be >= 1, got 0");
  Schedule split = Generated(ScheduleKind::kZbH1, 2, 1, 2);
  split.kind = ScheduleKind::kPipeDream;
  EXPECT_FALSE(UnrollSteps(split, 2).ok());
}

TEST(Schedule, TextFormHasAHeaderComment) {
  Schedule s = Generated(ScheduleKind::kZbH1, 2, 1, 1);
  EXPECT_EQ(ScheduleToText(s),
            "# zb_h1: pp 2, virtual_stages 1, 1 micro-batches, split backward\n"
            "0F0 0B0 0W0\n"
            "1F0 1B0 1W0\n");
  EXPECT_EQ(ActionToString({ActionKind::kWeight, 12, 345}), "12W345");
}

}  // namespace
}  // namespace trident
