// Must not compile: not trivially copyable, and declares no serialize().
#include <apgas/serialization.hpp>

#include <mutex>

struct counter {
  int m_count = 0;
  std::mutex m_lock;
};

int main() {
  counter c;
  apgas::byte_writer w;
  apgas::serialize(w, c);
}
