// Must not compile: a raw pointer means nothing at another place (use apgas::global_ref<T>).
#include <apgas/serialization.hpp>

int main() {
  int x = 1;
  int* p = &x;
  apgas::byte_writer w;
  apgas::serialize(w, p);
}
