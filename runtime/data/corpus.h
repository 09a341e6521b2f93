// The default training text and how to list a folder of text files.
//
// Every Debian system ships the full text of the common free-software licenses under
// /usr/share/common-licenses (package base-files): about 260 KB of English prose, enough for
// small-model training and tests without a download. The default corpus is the regular files
// of that folder concatenated in byte-wise name order (Apache-2.0, Artistic, BSD, ...).
// Symbolic links (GPL -> GPL-3, LGPL -> LGPL-3, GFDL -> GFDL-1.3) are skipped so no text
// appears twice. The exact bytes depend on the Debian release; a run records which files it
// read through TextDataset::Description().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/data/dataset.h"
#include "runtime/data/text_dataset.h"

namespace trident {

inline constexpr char kDefaultCorpusDir[] = "/usr/share/common-licenses";

// The regular files directly inside `dir` (not symlinks, not sub-folders), as paths sorted
// by file name. NotFound when `dir` does not exist; InvalidArgument when it holds none.
StatusOr<std::vector<std::string>> ListCorpusFiles(const std::string& dir);

// ListCorpusFiles(kDefaultCorpusDir).
StatusOr<std::vector<std::string>> DefaultCorpusFiles();

// The bytes of `paths` concatenated in order. NotFound / IoError name the file;
// InvalidArgument for an empty list.
StatusOr<std::string> ReadCorpus(const std::vector<std::string>& paths);

// The text dataset of `path`: the default corpus when `path` is empty, the listed files of a
// folder (as ListCorpusFiles), or one file.
StatusOr<std::unique_ptr<TextDataset>> OpenTextCorpus(const std::string& path,
                                                      const DataOptions& options);

}  // namespace trident
