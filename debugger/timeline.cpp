#include "debugger/timeline.h"

#include <algorithm>

namespace ab::debugger {

Timeline::Timeline(ExecutionSource& source, const TimelineOptions& options)
    : source_(source),
      options_(options),
      interval_(std::max<uint64_t>(1, options.interval)),
      history_(source.lanes()) {
  if (source_.knows_future())
    for (uint64_t s = 0; s < source_.total_steps(); ++s)
      history_.push(source_.recorded_active(s));
  auto first = source_.checkpoint();
  checkpoint_bytes_ += first->bytes();
  checkpoints_[source_.steps()] = std::move(first);
}

uint64_t Timeline::known_end() const {
  return std::max<uint64_t>(source_.knows_future() ? source_.total_steps() : 0,
                            std::max(history_.size(), position()));
}

void Timeline::after_step() {
  const uint64_t at = source_.steps();
  if (history_.size() == at - 1) history_.push(static_cast<uint32_t>(source_.last_active().size()));
  if (at % interval_ == 0 && !checkpoints_.count(at)) {
    auto c = source_.checkpoint();
    checkpoint_bytes_ += c->bytes();
    checkpoints_[at] = std::move(c);
    if (checkpoint_bytes_ > options_.checkpoint_budget) thin_out();
  }
  if (observer_) observer_(false);
}

void Timeline::thin_out() {
  interval_ *= 2;
  const uint64_t first = checkpoints_.begin()->first;  // the earliest state is always kept
  for (auto it = checkpoints_.begin(); it != checkpoints_.end();) {
    if (it->first != first && it->first % interval_ != 0) {
      checkpoint_bytes_ -= it->second->bytes();
      it = checkpoints_.erase(it);
    } else {
      ++it;
    }
  }
}

uint64_t Timeline::step(uint64_t n, const std::function<bool()>& stop) {
  uint64_t taken = 0;
  while (taken < n && !source_.done()) {
    if (source_.step(1) == 0) break;
    ++taken;
    after_step();
    if (stop && stop()) break;
  }
  return taken;
}

uint64_t Timeline::seek(uint64_t target) {
  if (target < position()) {
    auto it = checkpoints_.upper_bound(target);
    if (it != checkpoints_.begin()) --it;  // the last checkpoint at or before target
    source_.restore(*it->second);
    if (observer_) observer_(true);
  }
  const uint64_t from = position();
  step(target - std::min(target, from));
  replayed_ += position() - from;
  return position();
}

}  // namespace ab::debugger
