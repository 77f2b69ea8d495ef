#include "minivmm/exit_sites.h"

namespace minivmm {

void ExitSites::Add(const ExitSites& other) {
  for (const auto& [site, count] : other.counts) {
    SiteCount& mine = counts[site];
    mine.exits += count.exits;
    mine.batchable += count.batchable;
    for (size_t i = 0; i < mine.wasted.size(); ++i) mine.wasted[i] += count.wasted[i];
  }
  wasted_unplaced += other.wasted_unplaced;
}

}  // namespace minivmm
