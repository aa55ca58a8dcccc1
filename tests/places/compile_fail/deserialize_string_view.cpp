// Must not compile: a std::string_view points into memory of this place.
#include <apgas/serialization.hpp>

#include <string_view>
#include <vector>

int main() {
  std::vector<std::byte> bytes;
  apgas::byte_reader r(bytes);
  (void)apgas::deserialize<std::string_view>(r);
}
