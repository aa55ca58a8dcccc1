// The exceptions guide's example: failures at other places, caught by their types.
#include <apgas/apgas.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

/// A type of our own that crosses places as itself (rebuilt from its what()).
struct sold_out : std::runtime_error {
  using std::runtime_error::runtime_error;
};
APGAS_REGISTER_EXCEPTION(sold_out);

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const long caught = rt.run([]() -> apgas::task<long> {
    const apgas::place_id last = apgas::places() - 1;
    long caught = 0;
    try {
      co_await apgas::at(last, [] { return std::vector<int>{}.at(7); });
    } catch (const std::out_of_range& e) { // its own type, and its what() as it was there
      if (apgas::origin_of(e)->place() == last) caught += 1;
    }
    try {
      co_await apgas::finish([]() -> apgas::task<> {
        for (apgas::place_id p = 0; p < apgas::places(); ++p)
          co_await apgas::async_at(p, [] { throw sold_out(std::to_string(apgas::here())); });
      });
    } catch (const apgas::multiple_exceptions& e) { // one failure per place
      for (const std::exception_ptr& failure : e.flattened()) {
        try {
          std::rethrow_exception(failure);
        } catch (const sold_out& s) {
          if (std::to_string(apgas::origin_of(s)->place()) == s.what()) caught += 1;
        }
      }
    }
    co_return caught;
  });
  if (rt.here() == 0)
    std::printf("%u place(s): %ld failures caught by type\n", rt.places(), caught);
  return caught == 1 + static_cast<long>(rt.places()) ? 0 : 1;
}
