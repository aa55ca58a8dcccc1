// Must not compile: a user serialize() that sends a pointer member; caught by the archive.
#include <apgas/serialization.hpp>

struct node {
  int m_value = 0;
  node* m_next = nullptr;
  template <class A>
  void serialize(A& a) {
    a& m_value& m_next;
  }
};

int main() {
  apgas::byte_writer w;
  apgas::serialize(w, node{});
}
