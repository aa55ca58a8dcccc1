// Must not compile: a std::unique_ptr (here inside a vector, among active-message arguments).
#include <apgas/serialization.hpp>

#include <memory>
#include <vector>

int main() {
  std::vector<std::unique_ptr<int>> owned;
  apgas::byte_writer w;
  apgas::serialize_all(w, 1, owned);
}
