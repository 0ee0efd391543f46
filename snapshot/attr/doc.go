// Package attr owns gitattributes and git's content conversions: it parses
// .gitattributes files and answers, for a path, the attributes git would
// apply (wildmatch patterns, precedence, macros), and it converts content
// between the worktree and blobs exactly as `git add` and `git checkout` do
// (text/eol/core.autocrlf end-of-line conversion with git's binary
// detection, ident, and clean/smudge/process filter drivers).
//
// It must never run the git binary, read git config or the index itself
// (callers pass what those hold), or hold a whole file in memory: large
// contents are streamed, or spooled to temporary files that are removed
// when the conversion is done.
//
// Not supported: working-tree-encoding, core.ignoreCase matching, the
// filter protocol's "delay" capability, and SHA-256 object ids for ident.
package attr
