// A body of for_on_demand that is a task: its loop would start nothing per index.
#include <apgas/core.hpp>

apgas::task<> loop() {
  co_await apgas::for_on_demand(0, 10, [](int) -> apgas::task<> { co_return; });
}

int main() { return 0; }
