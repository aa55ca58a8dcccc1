// Must not compile: a lambda (trivially copyable when its captures are, yet code does not travel).
#include <apgas/serialization.hpp>

int main() {
  int k = 3;
  auto add_k = [k](int x) { return x + k; };
  apgas::byte_writer w;
  apgas::serialize(w, add_k);
}
