// A ConsoleSink that forwards to another sink and keeps the last few lines
// for crash reports. Bounded: at most kLines lines of at most kLineBytes each,
// whatever the guest writes.
#ifndef MINIVMM_VMM_RUN_CONSOLE_TAIL_H_
#define MINIVMM_VMM_RUN_CONSOLE_TAIL_H_

#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "minivmm/sinks.h"

namespace minivmm {

class ConsoleTail final : public ConsoleSink {
 public:
  static constexpr size_t kLines = 20;
  static constexpr size_t kLineBytes = 512;

  explicit ConsoleTail(ConsoleSink* next) : next_(next) {}

  // Called with each line as it ends (its '\n' written), on the writing
  // thread: VmConfig::kernel_exits ends a phase there.
  void OnLine(std::function<void(const std::string&)> on_line) { on_line_ = std::move(on_line); }

  void Write(std::string_view bytes) override {
    if (next_ != nullptr) next_->Write(bytes);
    for (char c : bytes) {
      if (c == '\n') {
        PushLine();
      } else if (current_.size() < kLineBytes) {
        current_.push_back(c);
      }
    }
  }

  // The last lines, oldest first, including an unterminated last line.
  std::vector<std::string> Lines() const {
    std::vector<std::string> out(lines_.begin(), lines_.end());
    if (!current_.empty()) out.push_back(current_);
    return out;
  }

 private:
  void PushLine() {
    if (on_line_) on_line_(current_);
    if (lines_.size() == kLines) lines_.pop_front();
    lines_.push_back(std::move(current_));
    current_.clear();
  }

  ConsoleSink* next_;
  std::deque<std::string> lines_;
  std::string current_;
  std::function<void(const std::string&)> on_line_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_RUN_CONSOLE_TAIL_H_
