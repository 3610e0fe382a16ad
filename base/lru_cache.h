#pragma once
// A bounded map that forgets its least recently used entries: the caches of per-shape GPU
// state (cuDNN convolution plans, cuFFT plans), whose keys would otherwise grow with every
// new input length. Not thread-safe (the owners hold their own mutex). Evicted entries are
// handed back instead of destroyed, so that the owner can destroy them after releasing its
// lock, or later, once the GPU work that may still use them has run (DeferredReleases).
#include <cstddef>
#include <iterator>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "base/error.h"

namespace sonata {

template <typename Key, typename Value>
class LruCache {
 public:
  using Entry = std::pair<Key, Value>;

  explicit LruCache(size_t capacity) : capacity_(checked(capacity)) {}

  // The value under `key`, which becomes the most recently used; null when absent.
  Value* find(const Key& key) {
    const auto found = index_.find(key);
    if (found == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, found->second);
    return &found->second->second;
  }

  // Adds `key` (which must be absent) as the most recently used. Returns the entries that no
  // longer fit, least recently used first.
  std::vector<Entry> insert(const Key& key, Value value) {
    SONATA_CHECK(index_.count(key) == 0, "LruCache::insert: the key is already cached");
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    return trim();
  }

  // Changes the bound; returns the entries that no longer fit, least recently used first.
  std::vector<Entry> set_capacity(size_t capacity) {
    capacity_ = checked(capacity);
    return trim();
  }

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }

  // Keys from the most recently used to the least.
  std::vector<Key> keys() const {
    std::vector<Key> keys;
    keys.reserve(order_.size());
    for (const Entry& entry : order_) keys.push_back(entry.first);
    return keys;
  }

 private:
  static size_t checked(size_t capacity) {
    SONATA_CHECK(capacity >= 1, "LruCache: the capacity must be at least 1, got ", capacity);
    return capacity;
  }

  std::vector<Entry> trim() {
    std::vector<Entry> evicted;
    while (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      evicted.push_back(std::move(order_.back()));
      order_.pop_back();
    }
    return evicted;
  }

  size_t capacity_ = 1;
  std::list<Entry> order_;  // most recently used first
  std::map<Key, typename std::list<Entry>::iterator> index_;
};

}  // namespace sonata
