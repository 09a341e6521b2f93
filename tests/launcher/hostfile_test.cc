#include "launcher/hostfile.h"

#include <gtest/gtest.h>

namespace trident {
namespace {

using Hosts = std::vector<HostSlots>;

TEST(HostfileTest, ReadsHostsSlotsCommentsAndBlankLines) {
  StatusOr<Hosts> hosts = ParseHostfile(
      "# two DGX nodes\n"
      "\n"
      "node-a slots=8   # the first\n"
      "\tnode-b.cluster\tslots=8 max_slots=16\r\n"
      "10.0.0.3 slots=2\n"
      "   \n",
      "hosts.txt");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (Hosts{{"node-a", 8}, {"node-b.cluster", 8}, {"10.0.0.3", 2}}));
}

// Each bad file: the error names the file, the line and what is wrong.
TEST(HostfileTest, BadLinesNameTheFileAndLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"a slots=8\nb\n", "hosts.txt:2: host 'b' has no slots=N; write how many ranks"},
      {"a slots=eight\n", "hosts.txt:1: slot count 'eight' is not a whole number"},
      {"a slots=0\n", "hosts.txt:1: slot count '0'"},
      {"a slots=\n", "hosts.txt:1: slot count ''"},
      {"# c\na slots=4 cpus=4\n", "hosts.txt:2: unknown entry 'cpus=4'"},
      {"a slots=4\n\nb slots=4\na slots=2\n",
       "hosts.txt:4: host 'a' is already listed on line 1; list each host once"},
      {"a;rm slots=1\n", "hosts.txt:1: host name 'a;rm' has the character ';'"},
      {"a slots=4 max_slots=2\n", "hosts.txt:1: max_slots=2 is below slots=4"},
      {"# nothing\n\n", "hosts.txt: lists no hosts"},
      {"", "hosts.txt: lists no hosts"},
  };
  for (const Case& c : cases) {
    StatusOr<Hosts> hosts = ParseHostfile(c.text, "hosts.txt");
    ASSERT_FALSE(hosts.ok()) << c.text;
    EXPECT_EQ(hosts.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(hosts.status().message().find(c.message), std::string::npos)
        << hosts.status().message();
  }
}

TEST(HostfileTest, MissingFileIsNotFound) {
  StatusOr<Hosts> hosts = LoadHostfile("/nonexistent/hosts.txt");
  ASSERT_FALSE(hosts.ok());
  EXPECT_EQ(hosts.status().code(), StatusCode::kNotFound);
}

TEST(HostListTest, ReadsHostsWithAndWithoutSlots) {
  StatusOr<Hosts> hosts = ParseHostList("a:8,b.example:16,c");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (Hosts{{"a", 8}, {"b.example", 16}, {"c", 1}}));
  EXPECT_EQ(HostsToString(*hosts), "a:8, b.example:16, c:1");
}

TEST(HostListTest, BadListsAreRefused) {
  for (const char* list : {"", "a:8,", ",a:8", "a:0", "a:x", "a:8,a:8", "a b:8", "a:8:2"}) {
    StatusOr<Hosts> hosts = ParseHostList(list);
    ASSERT_FALSE(hosts.ok()) << list;
    EXPECT_NE(hosts.status().message().find("--hosts '" + std::string(list) + "'"),
              std::string::npos)
        << hosts.status().message();
  }
}

}  // namespace
}  // namespace trident
