// Must not compile: at() refers to its arguments until awaited, so it is awaited where it is
// called; a kept one is awaited with std::move (see apgas::at_call in place.hpp).
#include <apgas/apgas.hpp>

#include <vector>

apgas::task<> await_later(std::vector<int> v) {
  auto call = apgas::at(
      1, [](std::vector<int> w) { return w.size(); }, v);
  v.clear();
  (void)co_await call;
}
