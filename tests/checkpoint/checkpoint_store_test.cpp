// The checkpoint directory (apgas/detail/checkpoint_store.hpp): what a commit leaves, which
// checkpoint a resume takes, and that every damage is refused with a line that says what.
#include <apgas/detail/checkpoint_store.hpp>
#include <apgas/serialization.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace store = apgas::detail::checkpoint;

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) b[i] = static_cast<std::byte>(s[i]);
  return b;
}

class checkpoint_store : public ::testing::Test {
protected:
  void SetUp() override {
    dir = (fs::temp_directory_path() /
           ("apgas-ckpt-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name()))
              .string();
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  /// Writes checkpoint `seq` of `places` parts ("part <p> of <seq>") and commits it.
  store::manifest write(std::uint64_t seq, std::uint32_t places, const std::string& what = "x") {
    store::manifest m;
    m.kind = "glb";
    m.fingerprint = store::sha256_hex(bytes_of(what));
    m.describes = "a test run of " + what;
    m.ordinal = 1;
    m.sequence = seq;
    m.places = places;
    for (std::uint32_t p = 0; p < places; ++p)
      m.parts.push_back(store::write_part(
          dir, seq, p, bytes_of("part " + std::to_string(p) + " of " + std::to_string(seq))));
    store::commit(dir, m);
    return m;
  }

  /// The message of the checkpoint_error that resuming from dir throws.
  std::string refusal() {
    try {
      const store::found c = store::find_newest(dir);
      for (std::uint32_t p = 0; p < c.what.places; ++p) (void)store::read_part(c, p);
    } catch (const apgas::checkpoint_error& e) {
      return e.what();
    }
    return "";
  }

  std::string dir;
};

TEST_F(checkpoint_store, sha256_is_the_standard_digest) {
  EXPECT_EQ(store::sha256_hex(bytes_of("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_F(checkpoint_store, a_commit_leaves_the_newest_checkpoint_alone_and_it_reads_back) {
  EXPECT_EQ(store::next_sequence(dir), 1U); // no directory yet
  write(1, 3);
  const store::manifest m = write(2, 2, "y");
  EXPECT_TRUE(fs::is_directory(dir + "/ckpt-000002"));
  EXPECT_FALSE(fs::exists(dir + "/ckpt-000001")); // removed once 2 was complete
  EXPECT_EQ(store::next_sequence(dir), 3U);
  const store::found c = store::find_newest(dir);
  EXPECT_EQ(c.path, dir + "/ckpt-000002");
  EXPECT_EQ(c.what.fingerprint, m.fingerprint);
  EXPECT_EQ(c.what.describes, "a test run of y");
  EXPECT_EQ(c.what.places, 2U);
  const std::vector<std::byte> part = store::read_part(c, 1);
  EXPECT_EQ(part, bytes_of("part 1 of 2"));
}

TEST_F(checkpoint_store, a_checkpoint_being_written_is_ignored_and_survives_an_older_commit) {
  write(4, 1);
  // Parts of 6 written, not committed (the job died); 5 commits meanwhile.
  (void)store::write_part(dir, 6, 0, bytes_of("never committed"));
  write(5, 1);
  EXPECT_TRUE(fs::is_directory(dir + "/ckpt-000006.partial")); // newer: not removed
  EXPECT_EQ(store::find_newest(dir).what.sequence, 5U);
  EXPECT_EQ(store::next_sequence(dir), 7U);
}

TEST_F(checkpoint_store, a_missing_or_empty_directory_is_refused) {
  EXPECT_NE(refusal().find("no such directory"), std::string::npos) << refusal();
  fs::create_directories(dir);
  (void)store::write_part(dir, 1, 0, bytes_of("only a partial one"));
  EXPECT_NE(refusal().find("no complete checkpoint"), std::string::npos) << refusal();
}

TEST_F(checkpoint_store, a_corrupted_part_is_refused) {
  write(1, 2);
  {
    std::fstream f(dir + "/ckpt-000001/place-000001", std::ios::in | std::ios::out);
    f.seekp(2);
    f.put('X');
  }
  EXPECT_NE(refusal().find("place-000001 is corrupted"), std::string::npos) << refusal();
}

TEST_F(checkpoint_store, a_truncated_or_missing_part_is_refused) {
  write(1, 2);
  fs::resize_file(dir + "/ckpt-000001/place-000000", 3);
  EXPECT_NE(refusal().find("place-000000 is truncated"), std::string::npos) << refusal();
  fs::remove(dir + "/ckpt-000001/place-000000");
  EXPECT_NE(refusal().find("place-000000 is missing"), std::string::npos) << refusal();
}

TEST_F(checkpoint_store, a_damaged_or_foreign_manifest_is_refused) {
  write(1, 2);
  const std::string manifest = dir + "/ckpt-000001/manifest";
  std::string text;
  {
    std::ifstream in(manifest);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string edited = text;
  edited.replace(edited.find("places 2"), 8, "places 1"); // an edit the checksum catches
  std::ofstream(manifest) << edited;
  EXPECT_NE(refusal().find("the manifest is damaged"), std::string::npos) << refusal();
  std::ofstream(manifest) << "a file of some other program\n";
  EXPECT_NE(refusal().find("not an apgas checkpoint"), std::string::npos) << refusal();
  fs::remove(manifest);
  EXPECT_NE(refusal().find("its manifest is missing"), std::string::npos) << refusal();
}

} // namespace

namespace {

/// A run's parameters with padding after `type` and after `depth` (as apps' flags often are).
struct padded_params {
  char type;
  double b0;
  std::int32_t depth;
  long double scale; // x86-64: 6 bytes of padding inside the value too
};
static_assert(!std::has_unique_object_representations_v<padded_params>);

/// `p` built in storage filled with `fill` first (stack garbage, as a user's variable has).
std::vector<std::byte> identity_of(const padded_params& p, unsigned char fill) {
  alignas(padded_params) unsigned char storage[sizeof(padded_params)];
  std::memset(storage, fill, sizeof storage);
  auto* q = new (storage) padded_params;
  q->type = p.type, q->b0 = p.b0, q->depth = p.depth, q->scale = p.scale;
  std::vector<std::byte> out;
  apgas::byte_writer w(out);
  apgas::detail::serialize_identity_all(w, std::string("uts"), *q, 7);
  return out;
}

TEST(checkpoint_identity, equal_parameters_give_equal_bytes_whatever_their_padding_holds) {
  const padded_params p{'g', 4.0, 13, 2.5L};
  EXPECT_EQ(identity_of(p, 0x00), identity_of(p, 0xff));
  EXPECT_EQ(identity_of(p, 0x5a), identity_of(p, 0xa5));
  padded_params other = p;
  other.depth = 14;
  EXPECT_NE(identity_of(p, 0x00), identity_of(other, 0x00));
  other = p;
  other.scale = 2.25L;
  EXPECT_NE(identity_of(p, 0xff), identity_of(other, 0xff));
}

} // namespace
