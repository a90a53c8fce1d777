/// @file tune_page_assets.h
/// The style sheet and the script inlined into the tune report page
/// (tune_report.h). The script sorts the trial table (#trials) by the
/// column whose header is clicked or activated with Enter or Space, using
/// each cell's data-v (numbers for headers with data-type="num", text
/// otherwise; empty values last), marks the header with aria-sort, and
/// highlights the curve (g.trial-curve[data-trial]) of the row under the
/// pointer. It needs nothing outside the page.
#pragma once

namespace magmadnn::cli {

extern const char* const kTunePageStyle;
extern const char* const kTunePageScript;

}  // namespace magmadnn::cli
