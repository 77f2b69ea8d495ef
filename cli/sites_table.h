// The exit table's "exits by site" section (docs/sites.md), rendered from
// the run record's `sites` section.
#ifndef MINIVMM_CLI_SITES_TABLE_H_
#define MINIVMM_CLI_SITES_TABLE_H_

#include <string>

#include "nlohmann/json.hpp"

namespace minivmm::cli {

// Per cause, its top sites with their call chains; with the wasted-exit
// analysis, the wasted exits ranked by site with the remedy each verdict
// implies. Empty when the record has no `sites`.
std::string RenderSitesSection(const nlohmann::json& record);

// The site of a stack (a `sites.stacks[]` entry) as the table names it:
// "function file:line" of its innermost frame, or the raw address.
std::string SiteName(const nlohmann::json& frame);
// "a <- b <- c": a stack's `frames` after the innermost, each as SiteName.
std::string SiteChain(const nlohmann::json& frames);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_SITES_TABLE_H_
