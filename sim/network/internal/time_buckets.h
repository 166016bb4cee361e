// TimeBuckets: the pending-event queue of FlowNetwork (activations and completions), a min-queue
// on time that groups entries of equal time in one bucket. A collective phase starts thousands
// of flows at one instant and, uncontended, they end at one instant too: with a binary heap of
// entries each of them paid O(log n) scattered loads to leave it (a quarter of a large
// simulation's time); here a whole instant leaves at once, in O(entries) sequential work plus
// O(log buckets) per bucket.
//
// Entries die when their flow moves on (a completion entry when the flow's rate changes, an
// activation entry when the flow is cancelled). The owner says so with Kill(bucket), so that
// each bucket knows how many of its entries still count: a bucket left with none is dropped
// unseen, and MinTime() never answers the time of dead entries only. Dead entries inside a
// bucket with live ones stay until it is popped or Compact() runs; the caller filters them.
//
// Invariants: every open bucket is in heap_ once; live <= entries.size() in every bucket; two
// buckets may share a time (PopAt takes them all). Entries of one bucket are in push order.
// Thread-safety: none.
#ifndef PLACESIM_SIM_NETWORK_INTERNAL_TIME_BUCKETS_H_
#define PLACESIM_SIM_NETWORK_INTERNAL_TIME_BUCKETS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace placesim::sim::internal {

// A bucket index that names no bucket.
inline constexpr uint32_t kNoBucket = ~uint32_t{0};

// Entry: a copyable struct with an `int64_t time_ps` member.
template <typename Entry>
class TimeBuckets {
 public:
  // Adds `e` and returns the bucket holding it, for Kill(). Amortized O(1) when the previous
  // push of the same time is still open (the common case), else O(log buckets).
  // Always inlined, so that the caller's fields are stored straight into the bucket: called,
  // the entry went through the caller's stack and its 16-byte reload failed store forwarding,
  // which waits for every older store to reach the cache, and past a few thousand GPUs the
  // caller's older stores are to flow records and links that miss (a fifth of the CPU time of
  // a 16,384-GPU step sat on that one load).
  [[gnu::always_inline]] uint32_t Push(const Entry& e) {
    const size_t h = static_cast<size_t>((static_cast<uint64_t>(e.time_ps) * kHashMultiplier) >>
                                         (64 - kRecentBits));
    uint32_t b = recent_[h];
    if (b == kNoBucket || !buckets_[b].open || buckets_[b].time_ps != e.time_ps) {
      b = OpenBucket(e.time_ps);
      recent_[h] = b;
    }
    Bucket& bucket = buckets_[b];
    if (bucket.entries.size() == bucket.entries.capacity()) Grow(bucket.entries);
    bucket.entries.push_back(e);
    ++bucket.live;
    ++size_;
    return b;
  }

  // One entry of bucket `b` no longer counts. REQUIRES: b holds a live entry. O(1).
  void Kill(uint32_t b) {
    --buckets_[b].live;
    ++dead_;
  }

  // The earliest time with a live entry; INT64_MAX when none. Drops the buckets it meets with
  // no live entry. Amortized O(log buckets).
  int64_t MinTime() {
    while (!heap_.empty()) {
      const uint32_t b = heap_.front().bucket;
      if (buckets_[b].live > 0) return heap_.front().time_ps;
      PopTop();
      Close(b);
    }
    return std::numeric_limits<int64_t>::max();
  }

  // Moves every entry of time `t`, dead ones included, to `out` (bucket after bucket, each in
  // push order) and drops their buckets. REQUIRES: no entry earlier than t. O(entries moved +
  // buckets x log buckets).
  void PopAt(int64_t t, std::vector<Entry>& out) {
    while (!heap_.empty() && heap_.front().time_ps == t) {
      const uint32_t b = heap_.front().bucket;
      PopTop();
      out.insert(out.end(), buckets_[b].entries.begin(), buckets_[b].entries.end());
      Close(b);
    }
  }

  // Entries held (live or dead) and dead ones.
  size_t size() const { return size_; }
  size_t dead() const { return dead_; }

  // Erases every entry for which `is_dead(entry)` holds, which must be exactly the killed ones,
  // and drops the buckets left empty. O(entries + buckets).
  template <typename IsDead>
  void Compact(IsDead is_dead) {
    heap_.clear();
    for (uint32_t b = 0; b < buckets_.size(); ++b) {
      Bucket& bucket = buckets_[b];
      if (!bucket.open) continue;
      std::erase_if(bucket.entries, is_dead);
      if (bucket.entries.empty()) {
        Close(b);
      } else {
        heap_.push_back(Top{bucket.time_ps, b});
      }
    }
    std::make_heap(heap_.begin(), heap_.end(), TopAfter());
    size_ = 0;
    for (const Top& top : heap_) size_ += buckets_[top.bucket].entries.size();
    dead_ = 0;
  }

 private:
  static constexpr uint64_t kHashMultiplier = 0x9e3779b97f4a7c15ull;
  static constexpr int kRecentBits = 6;
  // A recycled bucket keeps a buffer up to this many entries; larger ones (a big instant) go
  // to spare_, so that many small buckets never each hold a huge buffer.
  static constexpr size_t kKeptCapacity = 1024;
  // Large buffers kept for the next big instant. A collective phase of N flows pushes N
  // entries at one time; growing a fresh buffer to that size each time costs a chain of
  // reallocations and, past malloc's mmap threshold, page faults on every new page.
  static constexpr size_t kMaxSpare = 4;

  struct Bucket {
    int64_t time_ps = 0;
    uint32_t live = 0;
    bool open = false;
    std::vector<Entry> entries;
  };
  struct Top {  // an entry of the heap of open buckets
    int64_t time_ps;
    uint32_t bucket;
  };
  // Min-heap order on (time, bucket): std heaps are max-heaps, so "a after b".
  struct TopAfter {
    bool operator()(const Top& a, const Top& b) const {
      if (a.time_ps != b.time_ps) return a.time_ps > b.time_ps;
      return a.bucket > b.bucket;
    }
  };

  [[gnu::noinline]] uint32_t OpenBucket(int64_t time_ps) {
    uint32_t b;
    if (!free_.empty()) {
      b = free_.back();
      free_.pop_back();
    } else {
      b = static_cast<uint32_t>(buckets_.size());
      buckets_.emplace_back();
    }
    Bucket& bucket = buckets_[b];
    bucket.time_ps = time_ps;
    bucket.live = 0;
    bucket.open = true;
    heap_.push_back(Top{time_ps, b});
    std::push_heap(heap_.begin(), heap_.end(), TopAfter());
    return b;
  }

  // Makes room in a full buffer past kKeptCapacity: moves it into the largest spare buffer
  // when that is larger, else lets the vector grow as usual. Amortized O(1) per entry.
  [[gnu::noinline]] void Grow(std::vector<Entry>& entries) {
    if (entries.capacity() < kKeptCapacity || spare_.empty() ||
        spare_.back().capacity() <= entries.capacity()) {
      return;
    }
    std::vector<Entry>& spare = spare_.back();
    spare.assign(entries.begin(), entries.end());
    entries.swap(spare);
    spare_.pop_back();
  }

  void PopTop() {
    std::pop_heap(heap_.begin(), heap_.end(), TopAfter());
    heap_.pop_back();
  }

  // Recycles bucket b, already out of the heap.
  void Close(uint32_t b) {
    Bucket& bucket = buckets_[b];
    const size_t n = bucket.entries.size();
    size_ -= n;
    dead_ -= n - bucket.live;
    bucket.open = false;
    bucket.live = 0;
    if (bucket.entries.capacity() > kKeptCapacity) {
      // Kept in spare_ (largest last) when there is room or it beats the smallest spare.
      bucket.entries.clear();
      if (spare_.size() < kMaxSpare) {
        spare_.push_back(std::move(bucket.entries));
      } else if (spare_.front().capacity() < bucket.entries.capacity()) {
        spare_.front() = std::move(bucket.entries);
      }
      bucket.entries = std::vector<Entry>();
      std::sort(spare_.begin(), spare_.end(),
                [](const auto& a, const auto& b) { return a.capacity() < b.capacity(); });
    } else {
      bucket.entries.clear();
    }
    free_.push_back(b);
  }

  std::vector<Bucket> buckets_;
  std::vector<uint32_t> free_;
  std::vector<Top> heap_;
  std::vector<std::vector<Entry>> spare_;  // empty buffers by capacity, largest last; see Grow
  // Direct-mapped cache from a time's hash to the last bucket opened for it.
  std::array<uint32_t, size_t{1} << kRecentBits> recent_ = MakeRecent();
  size_t size_ = 0;
  size_t dead_ = 0;

  static constexpr std::array<uint32_t, size_t{1} << kRecentBits> MakeRecent() {
    std::array<uint32_t, size_t{1} << kRecentBits> r{};
    r.fill(kNoBucket);
    return r;
  }
};

}  // namespace placesim::sim::internal

#endif  // PLACESIM_SIM_NETWORK_INTERNAL_TIME_BUCKETS_H_