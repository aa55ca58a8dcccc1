// Must not compile: a raw pointer is meaningless at another place.
#include <apgas/apgas.hpp>

apgas::task<> send_pointer(int* p) {
  co_await apgas::async_at(
      1, [](int* q) { *q = 1; }, p);
}
