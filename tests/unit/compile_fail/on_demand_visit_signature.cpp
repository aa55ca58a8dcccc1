// A visit of traverse_on_demand that takes no work list: it could push nothing.
#include <apgas/core.hpp>

#include <vector>

apgas::task<> traverse() {
  std::vector<int> roots(1, 0);
  co_await apgas::traverse_on_demand(std::move(roots), [](int) {});
}

int main() { return 0; }
