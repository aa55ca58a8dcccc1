// Must not compile: a std::function.
#include <apgas/serialization.hpp>

#include <functional>

int main() {
  std::function<int(int)> f = [](int x) { return x + 1; };
  apgas::byte_writer w;
  apgas::serialize(w, f);
}
